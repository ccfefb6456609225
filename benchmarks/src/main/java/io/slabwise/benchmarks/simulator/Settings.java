package io.slabwise.benchmarks.simulator;

/**
 * The simulator's settings.
 *
 * @param trafficBytes   bytes each cache workload allocates in total
 * @param cacheBytes     the byte bound of each cache
 * @param seed           the random seed
 * @param sampleEvery    operations between two samples
 */
record Settings(long trafficBytes, long cacheBytes, long seed, int sampleEvery) {
}
