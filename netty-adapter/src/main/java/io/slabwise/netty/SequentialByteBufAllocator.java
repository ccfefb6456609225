package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.slabwise.Allocation;
import io.slabwise.SequentialAllocator;
import io.slabwise.SequentialStats;

/**
 * Netty buffers from a sequential allocator (FIFO slab): each buffer is a slice
 * carved from the current chunk of the calling thread's stripe, reserving its
 * size rounded up to 8 bytes. Made for log caches, whose buffers are released
 * roughly in the order they were allocated; a chunk goes back once every slice
 * carved from it is released. See {@link SequentialAllocator} for the policy on
 * large requests and the waste bound.
 *
 * <p>Buffers are ordinary direct {@link ByteBuf}s with exactly the requested
 * capacity; if one must grow, it moves to a new slice, or, past the
 * allocator's largest request, to its category's general pool (and back to a
 * slice if it shrinks to fit again). Thread-safe.
 */
public final class SequentialByteBufAllocator {

    private final SlabwiseAllocator parent;
    private final CategoryByteBufAllocator view;
    private final SequentialAllocator sequential;

    SequentialByteBufAllocator(SlabwiseAllocator parent, CategoryByteBufAllocator view, SequentialAllocator sequential) {
        this.parent = parent;
        this.view = view;
        this.sequential = sequential;
    }

    /**
     * A direct buffer of exactly {@code size} bytes.
     *
     * @return the buffer, or null at a limit when the category's policy is {@link io.slabwise.LimitPolicy#RETURN_NULL}
     * @throws IllegalArgumentException when {@code size} is not positive or over the allocator's largest request
     * @throws io.slabwise.MemoryLimitException at a limit under {@code FAIL}, or when a wait timed out
     */
    public ByteBuf allocate(int size) {
        return allocate(size, Integer.MAX_VALUE);
    }

    /**
     * A direct buffer of exactly {@code size} bytes that may grow to
     * {@code maxCapacity} (moving to a new slice when it does, or to the
     * category's general pool past the allocator's largest request).
     *
     * @see #allocate(int)
     */
    public ByteBuf allocate(int size, int maxCapacity) {
        if (maxCapacity < size) {
            throw new IllegalArgumentException("size: " + size + " (expected: not greater than maxCapacity(" + maxCapacity + "))");
        }
        return parent.tryNewDirectBuffer(view, sequential, size, maxCapacity);
    }

    /**
     * Like {@link #allocate(int)}, but never waits: null at a limit whatever
     * the category's policy. For a cache that makes room by evicting its own
     * entries and tries again, which it cannot do while waiting.
     *
     * @throws IllegalArgumentException when {@code size} is not positive or over the allocator's largest request
     */
    public ByteBuf tryAllocate(int size) {
        Allocation a = new Allocation();
        if (!sequential.tryAllocate(size, a)) {
            return null;
        }
        return SlabwiseAllocator.leakAware(DirectBuffers.wrap(view, sequential, a, Integer.MAX_VALUE,
                parent.bufferKind()));
    }

    /** The category its buffers are accounted to. */
    public String category() {
        return sequential.category().name();
    }

    /** Chunks, pinned chunks and live bytes of this allocator. */
    public SequentialStats stats() {
        return sequential.stats();
    }

    /**
     * Retires the open chunks (each goes back once its last slice is released)
     * and gives the spare back; returns the chunks retired plus the spare.
     */
    public int trim() {
        return sequential.trim();
    }

    @Override
    public String toString() {
        return sequential.toString();
    }
}
