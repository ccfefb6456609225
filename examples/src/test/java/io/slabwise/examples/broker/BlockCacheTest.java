package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.CategoryStats;
import io.slabwise.LimitPolicy;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The LRU block cache: eviction order, the byte bound, hits and misses, released buffers, limits, threads. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BlockCacheTest {

    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();

    private CategoryStats blockStats() {
        return allocator.stats().category("block_cache");
    }

    private static void fill(String key, ByteBuf buf) {
        buf.writerIndex(buf.capacity()).setInt(0, key.hashCode()).setInt(buf.capacity() - 4, key.hashCode());
    }

    private static int sizeOf(int key) {
        return 64 * KIB + new Random(key).nextInt(8 * MIB - 64 * KIB + 1);
    }

    private static void load(BlockCache cache, String key, int size) {
        ByteBuf b = cache.getOrLoad(key, size, BlockCacheTest::fill);
        assertEquals(key.hashCode(), b.getInt(0));
        b.release();
    }

    @Test
    void evictsLeastRecentlyUsedAndCountsHitsAndMisses() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 3 * MIB);
        load(cache, "a", MIB);
        load(cache, "b", MIB);
        load(cache, "c", MIB);
        assertEquals(3, cache.misses());
        assertEquals(0, cache.hits());
        ByteBuf a = cache.get("a"); // a becomes the most recently used: b, c, a
        assertEquals("a".hashCode(), a.getInt(0));
        a.release();
        load(cache, "d", MIB); // evicts b: c, a, d
        assertFalse(cache.contains("b"));
        assertTrue(cache.contains("a") && cache.contains("c") && cache.contains("d"));
        load(cache, "c", MIB); // a hit through getOrLoad: a, d, c
        load(cache, "e", 2 * MIB); // evicts a and d: c, e
        assertFalse(cache.contains("a") || cache.contains("d"));
        assertTrue(cache.contains("c") && cache.contains("e"));
        assertNull(cache.get("b"));
        assertEquals(2, cache.hits());
        assertEquals(6, cache.misses(), "a, b, c, d, e loaded and one miss on b");
        assertEquals(3, cache.evictions());
        assertEquals(3 * MIB, cache.bytes());
        assertEquals(cache.bytes(), blockStats().requested());
        cache.close();
        assertEquals(0, blockStats().requested());
        assertEquals(0, blockStats().liveBuffers());
    }

    /**
     * Skewed loads of 64 KiB to 8 MiB: after every step the bound holds and
     * the category's requested bytes equal the cache's bytes; every evicted
     * block was released (the count of a view kept of it is 0), every cached
     * one is held once, by the cache.
     */
    @Test
    void skewedWorkloadKeepsTheBoundAndReleasesEveryEvictedBlock() {
        long bound = 32L * MIB;
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), bound);
        Random random = new Random(4);
        Map<String, ByteBuf> cachedViews = new HashMap<>();
        List<ByteBuf> evictedViews = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            int key = (int) (Math.pow(random.nextDouble(), 2) * 60);
            String name = "k" + key;
            int size = sizeOf(key);
            long hitsBefore = cache.hits();
            ByteBuf view = cache.getOrLoad(name, size, BlockCacheTest::fill);
            assertEquals(name.hashCode(), view.getInt(0));
            assertEquals(name.hashCode(), view.getInt(size - 4));
            assertEquals(size, view.capacity());
            assertEquals(size, view.readableBytes());
            view.release(); // the view keeps sharing the cached block's count
            if (cache.hits() == hitsBefore) {
                assertFalse(cachedViews.containsKey(name), "a miss only for a block not cached");
                cachedViews.put(name, view);
            }
            for (var it = cachedViews.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, ByteBuf> e = it.next();
                if (!cache.contains(e.getKey())) {
                    evictedViews.add(e.getValue());
                    it.remove();
                }
            }
            for (ByteBuf cached : cachedViews.values()) {
                assertEquals(1, cached.refCnt(), "a cached block is held by the cache alone");
            }
            for (ByteBuf evicted : evictedViews) {
                assertEquals(0, evicted.refCnt(), "an evicted block was released");
            }
            assertEquals(cache.size(), cachedViews.size());
            assertTrue(cache.bytes() <= bound, "bound exceeded: " + cache.bytes());
            assertEquals(cache.bytes(), blockStats().requested(), "the cache's bytes are exactly its category's");
        }
        assertTrue(cache.hits() > 0 && cache.misses() > 0 && cache.evictions() > 0);
        assertEquals(400, cache.hits() + cache.misses());
        assertEquals(evictedViews.size(), cache.evictions());
        cache.close();
        cachedViews.values().forEach(v -> assertEquals(0, v.refCnt()));
        assertEquals(0, blockStats().requested(), allocator.stats()::report);
        assertEquals(0, blockStats().liveBuffers());
    }

    @Test
    void aReaderKeepsAnEvictedBlockAliveUntilItReleasesIt() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 2 * MIB);
        ByteBuf held = cache.getOrLoad("old", 2 * MIB, BlockCacheTest::fill);
        assertEquals(2, held.refCnt());
        load(cache, "new", MIB); // evicts "old"
        assertFalse(cache.contains("old"));
        assertEquals(1, held.refCnt(), "the cache released its reference; the reader keeps its own");
        assertEquals("old".hashCode(), held.getInt(0));
        assertEquals(3L * MIB, blockStats().requested(), "live until the reader lets go");
        held.release();
        assertEquals(MIB, blockStats().requested());
        cache.close();
        assertEquals(0, blockStats().requested());
    }

    @Test
    void invalidateReleasesTheBlockWithoutCountingAnEvictionOrALookup() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 4 * MIB);
        load(cache, "a", MIB + 5 * KIB);
        load(cache, "b", 100 * KIB);
        ByteBuf held = cache.get("a");
        long hits = cache.hits();
        long misses = cache.misses();
        assertTrue(cache.invalidate("a"));
        assertFalse(cache.invalidate("a"), "already gone");
        assertFalse(cache.invalidate("never"));
        assertFalse(cache.contains("a"));
        assertEquals(100 * KIB, cache.bytes());
        assertEquals(1, cache.size());
        assertEquals(0, cache.evictions());
        assertEquals(hits, cache.hits());
        assertEquals(misses, cache.misses());
        assertEquals(1, held.refCnt(), "the cache released its reference; the reader keeps its own");
        assertEquals("a".hashCode(), held.getInt(0));
        held.release();
        assertEquals(cache.bytes(), blockStats().requested());
        cache.close();
        assertEquals(0, blockStats().requested());
    }

    @Test
    void aBlockLargerThanTheCacheIsNotCached() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 100 * KIB);
        assertNull(cache.getOrLoad("big", 200 * KIB, BlockCacheTest::fill));
        assertEquals(0, cache.size());
        assertEquals(1, cache.misses());
        assertEquals(0, blockStats().requested());
        assertThrows(IllegalArgumentException.class, () -> cache.getOrLoad("empty", 0, BlockCacheTest::fill));
        assertThrows(IllegalArgumentException.class, () -> new BlockCache(allocator.blocks("block_cache"), 0));
        cache.close();
    }

    @Test
    void aFailingLoaderCachesNothingAndLeaksNothing() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 4 * MIB);
        load(cache, "good", MIB);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> cache.getOrLoad("bad", MIB,
                (k, buf) -> {
                    throw new IllegalStateException("object storage unavailable");
                }));
        assertEquals("object storage unavailable", e.getMessage());
        assertFalse(cache.contains("bad"));
        assertEquals(MIB, cache.bytes());
        assertEquals(MIB, blockStats().requested(), "the failed load's buffer was released");
        cache.close();
        assertEquals(0, blockStats().requested());
    }

    @Test
    void closeReleasesEverythingAndLaterLoadsFail() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 16 * MIB);
        for (int key = 0; key < 5; key++) {
            load(cache, "k" + key, sizeOf(key));
        }
        assertEquals(cache.bytes(), blockStats().requested());
        cache.close();
        assertEquals(0, cache.size());
        assertEquals(0, cache.bytes());
        assertEquals(0, blockStats().requested());
        assertEquals(0, blockStats().liveBuffers());
        assertNull(cache.get("k1"));
        assertThrows(IllegalStateException.class, () -> cache.getOrLoad("k1", MIB, BlockCacheTest::fill));
        cache.close();
    }

    /**
     * With a quota on the category, the cache evicts to make room when memory
     * is refused, even below its own bound, whatever the category's policy:
     * it never throws or waits for memory only its own eviction can give back.
     */
    @ParameterizedTest
    @EnumSource(LimitPolicy.class)
    void evictsWhenTheCategoryQuotaRefusesMemory(LimitPolicy policy) {
        SlabwiseAllocator limited = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2)
                .quota("block_cache", 8L * MIB).categoryPolicy("block_cache", policy)
                .waitTimeout(Duration.ofSeconds(30)).build();
        BlockCache cache = new BlockCache(limited.blocks("block_cache"), 64L * MIB);
        for (int key = 0; key < 30; key++) {
            ByteBuf b = cache.getOrLoad("k" + key, 2 * MIB + 3 * KIB, BlockCacheTest::fill);
            assertNotNull(b, "loaded once evictions left room under the quota");
            b.release();
            assertTrue(limited.stats().category("block_cache").reserved() <= 8L * MIB);
        }
        assertTrue(cache.evictions() > 0, "the quota, not the bound, made it evict");
        assertEquals(cache.bytes(), limited.stats().category("block_cache").requested());
        cache.close();
        assertEquals(0, limited.stats().category("block_cache").requested());
    }

    /**
     * The race checked: readers on several threads load and read overlapping
     * keys, evicting each other's blocks while others still read them through
     * their own references; every read sees its key's bytes, the bound holds,
     * and after close nothing is live.
     */
    @Test
    void concurrentReaders() throws Exception {
        long bound = 16L * MIB;
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), bound);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int self = t;
            threads.add(new Thread(() -> {
                try {
                    Random random = new Random(self);
                    for (int i = 0; i < 200; i++) {
                        int key = random.nextInt(30);
                        int size = 64 * KIB + new Random(key).nextInt(2 * MIB);
                        ByteBuf b = random.nextBoolean() ? cache.get("k" + key) : null;
                        if (b == null) {
                            b = cache.getOrLoad("k" + key, size, BlockCacheTest::fill);
                        }
                        assertEquals(("k" + key).hashCode(), b.getInt(0));
                        assertEquals(("k" + key).hashCode(), b.getInt(size - 4));
                        b.release();
                        assertTrue(cache.bytes() <= bound);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        assertNull(failure.get(), () -> "a worker failed: " + failure.get());
        assertEquals(cache.bytes(), blockStats().requested());
        cache.close();
        assertEquals(0, blockStats().requested());
        assertEquals(0, blockStats().liveBuffers());
    }

    /**
     * A loader that writes more than the size it was given grows the buffer
     * (a block's composite may grow): the cache counts what it holds, so its
     * bytes stay the category's requested bytes and fall back to zero once
     * everything left the cache.
     */
    @Test
    void aLoaderThatWritesPastItsSizeKeepsTheCountTrue() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 4L << 20);
        int size = 64 * KIB;
        ByteBuf read = cache.getOrLoad("grown", size, (key, buf) -> buf.writeZero(size + 1));
        read.release();
        assertEquals(blockStats().requested(), cache.bytes(), "the cache's bytes against its category's requested bytes");
        cache.invalidate("grown");
        assertEquals(0, cache.bytes());
        assertEquals(0, blockStats().requested());
        cache.close();
    }
}
