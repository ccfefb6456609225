package io.slabwise;

/**
 * One try of an allocation strategy (the general pool, a sequential
 * allocator, a block pool's payload or block), made once on the fast path and
 * again and again by {@link Admission#atLimit} while memory is short.
 */
@FunctionalInterface
interface Attempt {

    /** {@code out} was filled. */
    int DONE = 0;
    /** Refused: taking memory from the chunk source would pass the ceiling. */
    int CEILING = 1;
    /** Refused: the category's quota has no room. */
    int QUOTA = 2;
    /** Not tried: other callers wait for the same resource, and this one lines up behind them. */
    int QUEUED = 3;

    /** Tries once; returns {@link #DONE} or why the memory was refused. */
    int tryOnce(Category category, int requested, Allocation out);

    /**
     * The fewest bytes a request of {@code requested} bytes reserves (its
     * size class, or its whole pages): a request that reserves more than a
     * quota or the ceiling can never be served, whatever is released.
     */
    default long leastReserved(int requested) {
        return requested;
    }

    /**
     * The fewest bytes a request of {@code requested} bytes needs committed
     * with nothing else in the pool: what it reserves, unless it takes whole
     * regions larger than that (a block pool's payload whose sub-blocks are
     * cut from a block). One that needs more than the ceiling can never be served.
     */
    default long leastCommitted(int requested) {
        return leastReserved(requested);
    }
}
