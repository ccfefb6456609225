package io.slabwise;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The per-class limits of a thread cache hold for every cached class: a
 * class of which not one entry fits {@code maxCachedBytesPerClass}, or any
 * class when {@code maxCachedEntriesPerClass} is 0, keeps nothing; its
 * releases go back to the arena.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CacheLimitsTest {

    private static long cachedAfterReleases(PoolConfig config, int... sizes) {
        try (MemoryPool pool = new MemoryPool(config)) {
            Allocation a = new Allocation();
            for (int size : sizes) {
                pool.allocate(size, a);
                pool.free(a);
            }
            long cached = pool.threadCaches.own().cachedBytes();
            assertEquals(cached, pool.stats().cachedBytes());
            return cached;
        }
    }

    @Test
    void aClassLargerThanItsByteLimitKeepsNothing() {
        PoolConfig config = MemoryPoolTest.config().arenas(1).maxCachedBytesPerClass(16).build();
        assertEquals(0, cachedAfterReleases(config, 288, 4096, 65536), "no 288-byte entry fits 16 bytes");
        assertEquals(16, cachedAfterReleases(config, 16, 16), "one 16-byte entry does");
    }

    @Test
    void classesCachedUpToAChunkKeepNoMoreThanTheirByteLimit() {
        // thread caches keep sizes up to the chunk, each class at most 1 MiB: one 1 MiB entry, no 2 MiB one
        PoolConfig config = MemoryPoolTest.config(4 << 20).arenas(1).maxCachedSize(4 << 20).build();
        assertEquals(1 << 20, cachedAfterReleases(config, 1 << 20, 2 << 20, 3 << 20));
    }

    @Test
    void noEntriesPerClassKeepsNothingOfTheCachedClasses() {
        PoolConfig config = MemoryPoolTest.config().arenas(1).maxCachedEntriesPerClass(0).build();
        assertEquals(0, cachedAfterReleases(config, 16, 16, 4096, 65536));
        Allocation a = new Allocation();
        try (MemoryPool pool = new MemoryPool(config)) {
            Allocation stashed = pool.general.allocateStashed(pool.defaultCategory(), 100, false);
            pool.free(stashed); // not kept filled either
            assertEquals(0, pool.threadCaches.own().cachedBytes());
            pool.allocate(100, a); // and the class still allocates
            assertEquals(112, a.reservedBytes());
            pool.free(a);
        }
    }
}
