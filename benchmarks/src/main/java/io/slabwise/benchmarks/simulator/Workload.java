package io.slabwise.benchmarks.simulator;

/**
 * A seeded, trace-like allocation workload. It runs to completion on the
 * given source, adding a sample every so often; the sequence of operations
 * depends only on the seed and the settings, not on the allocator.
 */
interface Workload {

    /** The workload's name, as used on the command line and in file names. */
    String name();

    /** Runs the workload; every buffer it still holds is released before it returns. */
    void run(BufferSource source, Samples samples) throws Exception;
}
