package io.slabwise;

/** The general pool (size classes, runs, subpages, huge regions) for one category. */
final class CategoryAllocator implements Allocator {

    private final Category category;
    private final GeneralPool general;

    CategoryAllocator(Category category, GeneralPool general) {
        this.category = category;
        this.general = general;
    }

    @Override
    public Category category() {
        return category;
    }

    @Override
    public boolean allocate(int requested, Allocation out) {
        return general.allocate(category, requested, out); // made by the pool for one of its categories
    }

    @Override
    public String toString() {
        return "pooled(" + category + ')';
    }
}
