package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.slabwise.CategoryStats;
import io.slabwise.LimitPolicy;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The FIFO log cache: eviction order, the byte bound, released buffers, hits and misses, limits, threads. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LogCacheTest {

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();

    /** A heap batch of {@code size} bytes starting with {@code mark} (when it has room for it). */
    private static ByteBuf batch(int size, long mark) {
        ByteBuf b = Unpooled.buffer(size).writerIndex(size);
        if (size >= 8) {
            b.setLong(0, mark);
        }
        return b;
    }

    private CategoryStats logStats() {
        return allocator.stats().category("log_cache");
    }

    /** Appends and keeps a reference (not a retained one) to the cached buffer, for checking its count later. */
    private static ByteBuf appendAndPeek(LogCache cache, long offset, int size) {
        assertTrue(cache.append(offset, batch(size, offset)));
        ByteBuf view = cache.read(offset);
        view.release(); // the view shares the cached buffer's count, now the cache's reference alone
        assertEquals(1, view.refCnt());
        return view;
    }

    /**
     * A seeded stream of batches: after every append the cached offsets are
     * the newest ones with no gap, the bound holds, and the category's
     * requested bytes equal the cache's bytes.
     */
    @Test
    void evictsOldestFirstAndStaysWithinItsBound() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 100_000);
        Random random = new Random(9);
        for (long offset = 0; offset < 2000; offset++) {
            int size = 8 + random.nextInt(20_000);
            assertTrue(cache.append(offset, batch(size, offset)));
            assertTrue(cache.bytes() <= 100_000, "bound exceeded: " + cache.bytes());
            assertEquals(offset, cache.newestOffset());
            assertEquals(cache.size(), cache.newestOffset() - cache.oldestOffset() + 1, "a gap-free suffix");
            assertEquals(offset + 1 - cache.size(), cache.evictions(), "every batch not cached was evicted");
            assertEquals(cache.bytes(), logStats().requested(), "the cache's bytes are exactly its category's");
            assertEquals(cache.size(), logStats().liveBuffers());
        }
        long oldest = cache.oldestOffset();
        assertTrue(oldest > 0);
        assertNull(cache.read(oldest - 1), "older batches were evicted");
        for (long o = oldest; o <= cache.newestOffset(); o++) {
            ByteBuf read = cache.read(o);
            assertEquals(o, read.getLong(0));
            read.release();
        }
        cache.close();
        assertEquals(0, logStats().requested());
        assertEquals(0, logStats().liveBuffers());
    }

    /** Every evicted buffer is released (its count drops to 0); every cached one is held once. */
    @Test
    void everyEvictedBufferIsReleased() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 64 * 1024);
        Random random = new Random(10);
        List<ByteBuf> peeked = new ArrayList<>();
        for (long offset = 0; offset < 500; offset++) {
            peeked.add(appendAndPeek(cache, offset, 1 + random.nextInt(8 * 1024)));
        }
        long oldest = cache.oldestOffset();
        for (int o = 0; o < peeked.size(); o++) {
            assertEquals(o < oldest ? 0 : 1, peeked.get(o).refCnt(), "offset " + o + " (oldest cached " + oldest + ')');
        }
        assertEquals(cache.bytes(), logStats().requested());
        cache.close();
        for (ByteBuf view : peeked) {
            assertEquals(0, view.refCnt());
        }
        assertEquals(0, logStats().requested(), "nothing leaked after close");
        assertEquals(0, logStats().liveBuffers());
    }

    @Test
    void aReaderKeepsAnEvictedBatchAliveUntilItReleasesIt() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 1000);
        cache.append(0, batch(600, 0));
        ByteBuf held = cache.read(0);
        assertEquals(2, held.refCnt());
        cache.append(1, batch(600, 1)); // evicts offset 0
        assertNull(cache.read(0));
        assertEquals(1, held.refCnt(), "the cache released its reference; the reader keeps its own");
        assertEquals(0L, held.getLong(0), "and can still read it");
        assertEquals(1200, logStats().requested(), "the evicted batch is live until the reader lets go");
        held.release();
        assertEquals(0, held.refCnt());
        assertEquals(600, logStats().requested());
        cache.close();
        assertEquals(0, logStats().requested());
    }

    @Test
    void readsCountHitsAndMisses() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 10_000);
        cache.append(3, batch(100, 3));
        cache.read(3).release();
        cache.read(3).release();
        assertNull(cache.read(4));
        assertEquals(2, cache.hits());
        assertEquals(1, cache.misses());
        cache.close();
    }

    @Test
    void rejectsWhatItCannotHold() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 1000);
        assertFalse(cache.append(0, batch(1001, 0)), "larger than the cache");
        assertFalse(cache.append(0, Unpooled.EMPTY_BUFFER), "empty");
        assertTrue(cache.append(5, batch(10, 5)));
        assertThrows(IllegalArgumentException.class, () -> cache.append(5, batch(10, 5)), "offsets must increase");
        assertThrows(IllegalArgumentException.class, () -> new LogCache(allocator.sequential("log_cache"), 0));
        cache.close();
        assertThrows(IllegalStateException.class, () -> cache.append(6, batch(10, 6)), "closed");
        assertNull(cache.read(5));
        cache.close();
        assertEquals(0, logStats().requested());
    }

    @Test
    void appendCopiesTheReadableBytesAndLeavesTheBatchAlone() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 1000);
        ByteBuf source = Unpooled.buffer(64).writeLong(-1).writeLong(42).writeLong(43);
        source.readLong(); // only the last 16 bytes are readable
        assertTrue(cache.append(0, source));
        assertEquals(8, source.readerIndex(), "the batch is not consumed");
        ByteBuf read = cache.read(0);
        assertEquals(16, read.readableBytes());
        assertEquals(16, read.capacity(), "an exact copy, no slack");
        assertEquals(42, read.getLong(0));
        read.release();
        source.setLong(8, 7);
        ByteBuf again = cache.read(0);
        assertEquals(42, again.getLong(0), "a copy, not a view of the batch");
        again.release();
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
                .quota("log_cache", 256 * 1024).categoryPolicy("log_cache", policy)
                .waitTimeout(Duration.ofSeconds(30)).build();
        LogCache cache = new LogCache(limited.sequential("log_cache"), 10L << 20);
        for (long offset = 0; offset < 200; offset++) {
            assertTrue(cache.append(offset, batch(10_000, offset)));
            assertTrue(limited.stats().category("log_cache").reserved() <= 256 * 1024);
        }
        assertTrue(cache.evictions() > 0, "the quota, not the bound, made it evict");
        assertTrue(cache.bytes() <= 256 * 1024);
        assertEquals(cache.bytes(), limited.stats().category("log_cache").requested());
        cache.close();
        assertEquals(0, limited.stats().category("log_cache").requested());
    }

    /**
     * The race checked: appends from two threads (each taking the next
     * offset under a shared lock) and reads from two other threads on one
     * cache, plus a second cache (another partition) on the same sequential
     * allocator appended to by its own thread. Readers always see the batch
     * of the offset they asked for, the bounds hold, the category's requested
     * bytes equal the two caches' bytes, and nothing leaks.
     */
    @Test
    void concurrentAppendsAndReads() throws Exception {
        SequentialByteBufAllocator shared = allocator.sequential("log_cache");
        LogCache cache = new LogCache(shared, 2_000_000);
        LogCache otherPartition = new LogCache(shared, 1_000_000);
        AtomicLong next = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 5; t++) {
            int self = t;
            threads.add(new Thread(() -> {
                try {
                    Random random = new Random(self);
                    for (int i = 0; i < 2000; i++) {
                        if (self < 2) {
                            synchronized (next) { // offsets must increase: one append at a time takes the next
                                long o = next.get();
                                assertTrue(cache.append(o, batch(8 + random.nextInt(30_000), o)));
                                next.set(o + 1);
                            }
                        } else if (self < 4) {
                            long o = Math.max(0, next.get() - 1 - random.nextInt(10));
                            ByteBuf b = cache.read(o);
                            if (b != null) {
                                assertEquals(o, b.getLong(0));
                                b.release();
                            }
                        } else {
                            assertTrue(otherPartition.append(i, batch(8 + random.nextInt(20_000), i)));
                            assertTrue(otherPartition.bytes() <= 1_000_000);
                        }
                        assertTrue(cache.bytes() <= 2_000_000);
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
        assertEquals(4000, next.get());
        ByteBuf newest = cache.read(3999);
        assertNotNull(newest, "the newest batch is cached");
        newest.release();
        assertEquals(cache.bytes() + otherPartition.bytes(), logStats().requested());
        cache.close();
        otherPartition.close();
        assertEquals(0, logStats().requested());
        assertEquals(0, logStats().liveBuffers());
    }

    /** An append whose copy fails (the caller's batch already released) caches nothing and keeps no buffer. */
    @Test
    void aFailedCopyKeepsNothing() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 1 << 20);
        ByteBuf released = batch(1000, 0);
        released.release();
        assertThrows(RuntimeException.class, () -> cache.append(0, released));
        assertEquals(0, cache.size());
        assertEquals(0, logStats().requested(), logStats().toString());
        assertEquals(0, logStats().liveBuffers());
        cache.close();
    }
}
