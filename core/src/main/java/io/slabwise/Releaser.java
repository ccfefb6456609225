package io.slabwise;

/**
 * Takes back memory that a specialised allocator (sequential allocator, block
 * pool) carved out of its own chunks; {@link MemoryPool#free} hands such
 * allocations to the releaser recorded in them.
 */
interface Releaser {

    /** Takes the memory back; {@code allocation} is still filled and is cleared by the caller. */
    void release(Allocation allocation);

    /** Whether a live allocation may stand for {@code newRequested} bytes without moving. */
    boolean resizeInPlace(Allocation allocation, int newRequested);

    /**
     * Allocates into {@code to} new memory for a compaction's move of
     * {@code from}, one of this releaser's live allocations: the same
     * category and requested size, from the same allocator, never in a chunk
     * being evacuated. False when a limit refuses it (never waits), or when
     * this allocator's memory does not move one allocation at a time.
     */
    boolean allocateForMove(Allocation from, Allocation to);
}
