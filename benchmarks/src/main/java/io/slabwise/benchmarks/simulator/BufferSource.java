package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.Optional;

/**
 * Where a workload takes its buffers from: one of the allocators under test,
 * seen through the three kinds of buffer the workloads need. For Slabwise each
 * kind has its own strategy (sequential allocator, block pool, general pool);
 * Netty's allocators serve all three the same way.
 *
 * <p>A method returns null when the allocator refused at its memory ceiling;
 * the workload then evicts and retries, as a cache under memory pressure would.
 *
 * <p>Each kind of long-lived buffer has a category of its own on Slabwise
 * ({@link #LOG_CACHE}, {@link #BLOCK_CACHE}, {@link #PHASE}), so that its owner
 * alone can move it: the {@code -moving} workloads register a relocator for
 * their category through {@link #relocation()}, which only a source that can
 * move buffers has.
 */
interface BufferSource {

    /** The category of the log cache's records on Slabwise. */
    String LOG_CACHE = "log_cache";
    /** The category of the block cache's entries on Slabwise. */
    String BLOCK_CACHE = "block_cache";
    /** The category of the phase-shifting workload's objects on Slabwise (general pool). */
    String PHASE = "phase";

    /** A buffer for a log-cache record batch. */
    ByteBuf logBuffer(int size);

    /** A buffer for a block-cache entry. */
    ByteBuf blockBuffer(int size);

    /** A general-purpose buffer (network I/O, short-lived or mixed objects). */
    ByteBuf generalBuffer(int size);

    /**
     * A general-purpose buffer accounted to {@code category} where the
     * allocator has categories (Slabwise's {@code forCategory}); elsewhere the
     * same as {@link #generalBuffer(int)}.
     */
    default ByteBuf generalBuffer(String category, int size) {
        return generalBuffer(size);
    }

    /** How owners move their buffers on this allocator; empty for an allocator that never moves one. */
    default Optional<Relocation> relocation() {
        return Optional.empty();
    }

    /** Native memory the allocator holds from the OS now. */
    long committedBytes();

    /** Bytes the allocator reserved for live buffers, or -1 when it does not say. */
    long reservedBytes();

    /** Gives back idle memory where the allocator can; returns whether it could. */
    boolean trim();

    /** The allocator's own account of its state, for the end of a run: Slabwise's full report, Netty's metric line. */
    String report();
}
