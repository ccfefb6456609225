package io.slabwise.benchmarks.soak;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The soak's own count of what it holds in one category: the bytes it asked
 * for and the buffers the pool counts for them, kept by the code that
 * allocates and releases, never read from the pool. At a quiescent point it
 * must equal the category's requested bytes and live buffers in
 * {@code stats()}.
 *
 * <p>A block-pool payload counts as its parts (whole blocks, sub-blocks,
 * mini-blocks), because the pool counts each part as a buffer; any other
 * buffer counts as one.
 */
final class Tally {

    private final String category;
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong buffers = new AtomicLong();

    Tally(String category) {
        this.category = category;
    }

    /** The category it counts. */
    String category() {
        return category;
    }

    /** Counts a buffer of {@code size} requested bytes in {@code parts} pool buffers taken. */
    void add(long size, long parts) {
        bytes.addAndGet(size);
        buffers.addAndGet(parts);
    }

    /** Counts one released. */
    void remove(long size, long parts) {
        bytes.addAndGet(-size);
        buffers.addAndGet(-parts);
    }

    /** Requested bytes held. */
    long bytes() {
        return bytes.get();
    }

    /** Pool buffers held. */
    long buffers() {
        return buffers.get();
    }
}
