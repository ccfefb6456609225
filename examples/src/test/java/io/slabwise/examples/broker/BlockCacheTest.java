package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.CategoryStats;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The LRU block cache: eviction order, the byte bound, hits and misses, released buffers, threads. */
class BlockCacheTest {

    private static final int KIB = 1024;
    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().arenas(2).build();

    private CategoryStats blockStats() {
        return allocator.stats().category("block_cache");
    }

    private static void fill(String key, ByteBuf buf) {
        buf.writerIndex(buf.capacity()).setInt(0, key.hashCode());
    }

    @Test
    void evictsLeastRecentlyUsedAndCountsHits() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 3 * 1024 * KIB);
        cache.getOrLoad("a", 1024 * KIB, BlockCacheTest::fill).release();
        cache.getOrLoad("b", 1024 * KIB, BlockCacheTest::fill).release();
        cache.getOrLoad("c", 1024 * KIB, BlockCacheTest::fill).release();
        assertEquals(3, cache.misses());
        ByteBuf a = cache.get("a"); // a becomes the most recently used
        assertEquals("a".hashCode(), a.getInt(0));
        a.release();
        cache.getOrLoad("d", 1024 * KIB, BlockCacheTest::fill).release(); // evicts b, the least recently used
        assertFalse(cache.contains("b"));
        assertTrue(cache.contains("a") && cache.contains("c") && cache.contains("d"));
        assertEquals(1, cache.hits());
        assertEquals(1, cache.evictions());
        assertEquals(cache.bytes(), blockStats().requested());
        cache.close();
        assertEquals(0, blockStats().requested());
        assertEquals(0, blockStats().liveBuffers());
    }

    /** Random loads of 64 KiB to 8 MiB with skewed keys: the bound holds, every byte is accounted, nothing leaks. */
    @Test
    void skewedWorkloadKeepsTheBoundAndLeaksNothing() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 32 * 1024 * KIB);
        Random random = new Random(4);
        List<ByteBuf> evictedButHeld = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            int key = (int) (Math.pow(random.nextDouble(), 2) * 60);
            int size = 64 * KIB + new Random(key).nextInt(8 * 1024 * KIB - 64 * KIB);
            ByteBuf block = cache.getOrLoad("k" + key, size, BlockCacheTest::fill);
            assertEquals(("k" + key).hashCode(), block.getInt(0));
            assertEquals(size, block.capacity());
            if (i % 50 == 0) {
                evictedButHeld.add(block); // keep a reference past a probable eviction
            } else {
                block.release();
            }
            assertTrue(cache.bytes() <= 32 * 1024 * KIB);
            assertTrue(blockStats().requested() >= cache.bytes(), "held evicted blocks stay live until released");
        }
        assertTrue(cache.hits() > 0 && cache.misses() > 0 && cache.evictions() > 0);
        for (ByteBuf held : evictedButHeld) {
            held.release();
        }
        assertEquals(cache.bytes(), blockStats().requested(), "once readers let go, only cached blocks are live");
        cache.close();
        assertEquals(0, blockStats().requested(), allocator.stats()::report);
        assertEquals(0, blockStats().liveBuffers());
    }

    @Test
    void aBlockLargerThanTheCacheIsNotCached() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 100 * KIB);
        assertNull(cache.getOrLoad("big", 200 * KIB, BlockCacheTest::fill));
        assertEquals(0, cache.size());
        cache.close();
    }

    /** The race checked: readers on several threads load and read overlapping keys; the bound holds, nothing leaks. */
    @Test
    void concurrentReaders() throws Exception {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 16 * 1024 * KIB);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int self = t;
            threads.add(new Thread(() -> {
                try {
                    Random random = new Random(self);
                    for (int i = 0; i < 200; i++) {
                        int key = random.nextInt(30);
                        int size = 64 * KIB + new Random(key).nextInt(2 * 1024 * KIB);
                        ByteBuf b = cache.getOrLoad("k" + key, size, BlockCacheTest::fill);
                        assertEquals(("k" + key).hashCode(), b.getInt(0));
                        b.release();
                        assertTrue(cache.bytes() <= 16 * 1024 * KIB);
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
        assertNull(failure.get());
        cache.close();
        assertEquals(0, blockStats().requested());
    }
}
