package io.slabwise;

/** The general pool (size classes, runs, subpages, huge regions) for one category. */
final class CategoryAllocator implements Allocator {

    private final Category category;

    CategoryAllocator(Category category) {
        this.category = category;
    }

    @Override
    public Category category() {
        return category;
    }

    @Override
    public boolean allocate(int requested, Allocation out) {
        return category.pool().allocateInOwnCategory(category, requested, out); // made by the pool for one of its categories
    }

    @Override
    public String toString() {
        return "pooled(" + category + ')';
    }
}
