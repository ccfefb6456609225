package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

/**
 * Where a workload takes its buffers from: one of the allocators under test,
 * seen through the three kinds of buffer the workloads need. For Slabwise each
 * kind has its own strategy (sequential allocator, block pool, general pool);
 * Netty's allocators serve all three the same way.
 *
 * <p>A method returns null when the allocator refused at its memory ceiling;
 * the workload then evicts and retries, as a cache under memory pressure would.
 */
interface BufferSource {

    /** A buffer for a log-cache record batch. */
    ByteBuf logBuffer(int size);

    /** A buffer for a block-cache entry. */
    ByteBuf blockBuffer(int size);

    /** A general-purpose buffer (network I/O, short-lived or mixed objects). */
    ByteBuf generalBuffer(int size);

    /** Native memory the allocator holds from the OS now. */
    long committedBytes();

    /** Bytes the allocator reserved for live buffers, or -1 when it does not say. */
    long reservedBytes();

    /** Gives back idle memory where the allocator can; returns whether it could. */
    boolean trim();

    /** The allocator's own account of its state, for the end of a run: Slabwise's full report, Netty's metric line. */
    String report();
}
