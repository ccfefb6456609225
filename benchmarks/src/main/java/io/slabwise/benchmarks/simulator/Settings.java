package io.slabwise.benchmarks.simulator;

/**
 * What sizes a workload: how much it moves and how much it may hold.
 *
 * @param trafficBytes bytes a cache workload allocates in total (records appended, blocks loaded)
 * @param cacheBytes   the byte bound of a cache, and the fill target of each phase of the phase-shifting mix
 * @param seed         the random seed; the sequence of operations depends only on it and the sizes
 * @param proxySteps   allocations and releases each thread of a proxy workload makes
 */
record Settings(long trafficBytes, long cacheBytes, long seed, long proxySteps) {

    /** The same seed with other sizes, for a workload that runs as part of the mix. */
    Settings scaled(long traffic, long cache) {
        return new Settings(traffic, cache, seed, proxySteps);
    }
}
