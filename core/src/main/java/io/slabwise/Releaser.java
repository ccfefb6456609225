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
}
