package io.slabwise.benchmarks.simulator;

/**
 * A seeded, trace-like allocation workload. It runs to completion on the
 * given source, counting each allocation and release into the samples; the
 * sequence of operations depends only on the seed and the settings, not on
 * the allocator (in the mix, each thread's sequence does; their interleaving
 * does not).
 */
interface Workload {

    /** The workload's name, as used on the command line and in file names. */
    String name();

    /** About how many allocations and releases a run makes, to space the samples. */
    long expectedOperations();

    /**
     * Runs the workload; it arrives at its finish line still holding its
     * buffers (where the final sample is taken), then releases every one.
     */
    void run(BufferSource source, Samples samples) throws Exception;
}
