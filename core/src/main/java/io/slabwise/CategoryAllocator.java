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

    /** Frees into the general pool, which frees any allocation (a cache allocator's through its releaser). */
    @Override
    public void free(Allocation allocation) {
        general.free(allocation);
    }

    /** An allocation in a holder from the calling thread's stash; see {@link GeneralPool#allocateStashed}. */
    Allocation allocateStashed(int requested, boolean returnNullAtLimit) {
        return general.allocateStashed(category, requested, returnNullAtLimit);
    }

    /** See {@link MemoryPool#resizeInPlace}. */
    boolean resizeInPlace(Allocation allocation, int newRequested) {
        return general.resizeInPlace(allocation, newRequested);
    }

    /** See {@link MemoryPool#limitException}. */
    MemoryLimitException limitException(int requested) {
        return general.limitException(category, requested);
    }

    @Override
    public String toString() {
        return "pooled(" + category + ')';
    }
}
