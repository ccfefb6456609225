package io.slabwise;

/**
 * One category's figures in a {@link PoolStats} snapshot.
 *
 * @param name        the category's name
 * @param requested   bytes its live buffers asked for
 * @param reserved    bytes set aside for its live buffers
 * @param allocations allocations made for it since the pool was built
 * @param releases    releases of its buffers since the pool was built
 * @param peakReserved the highest reserved bytes any snapshot of the pool has seen for it (snapshots sample;
 *                    a peak between two snapshots is not seen)
 */
public record CategoryStats(String name, long requested, long reserved, long allocations, long releases,
                            long peakReserved) {

    /** Buffers of this category not yet released. */
    public long liveBuffers() {
        return allocations - releases;
    }

    /** 1 - requested/reserved for this category; 0 when nothing is live. */
    public double internalFragmentation() {
        return reserved == 0 ? 0 : 1 - (double) requested / reserved;
    }
}
