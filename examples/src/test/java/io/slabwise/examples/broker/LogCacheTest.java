package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.slabwise.CategoryStats;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The FIFO log cache: eviction order, the byte bound, released buffers, threads. */
class LogCacheTest {

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();

    private static ByteBuf batch(int size, long mark) {
        ByteBuf b = Unpooled.buffer(size).writerIndex(size);
        b.setLong(0, mark);
        return b;
    }

    private CategoryStats logStats() {
        return allocator.stats().category("log_cache");
    }

    @Test
    void evictsOldestFirstAndStaysWithinItsBound() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 100_000);
        Random random = new Random(9);
        long offset = 0;
        for (int i = 0; i < 500; i++) {
            int size = 8 + random.nextInt(20_000);
            assertTrue(cache.append(offset, batch(size, offset)));
            assertTrue(cache.bytes() <= 100_000);
            assertEquals(cache.bytes(), logStats().requested(), "the cache's bytes are exactly its category's");
            offset++;
        }
        long oldest = cache.oldestOffset();
        assertNull(cache.read(oldest - 1), "older batches were evicted");
        for (long o = oldest; o < offset; o++) {
            ByteBuf read = cache.read(o);
            assertEquals(o, read.getLong(0));
            read.release();
        }
        assertTrue(cache.evictions() > 0);
        cache.close();
        assertEquals(0, logStats().requested());
        assertEquals(0, logStats().liveBuffers());
    }

    @Test
    void evictedBuffersAreReleased() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 1000);
        cache.append(0, batch(600, 0));
        ByteBuf held = cache.read(0);
        assertEquals(2, held.refCnt());
        cache.append(1, batch(600, 1)); // evicts offset 0
        assertEquals(1, held.refCnt(), "the cache released its reference; the reader keeps its own");
        held.release();
        assertEquals(0, held.refCnt());
        assertEquals(600, logStats().requested());
        cache.close();
    }

    @Test
    void rejectsWhatItCannotHold() {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 1000);
        assertFalse(cache.append(0, batch(1001, 0)));
        assertTrue(cache.append(5, batch(10, 5)));
        assertThrows(IllegalArgumentException.class, () -> cache.append(5, batch(10, 5)));
        assertThrows(IllegalArgumentException.class, () -> new LogCache(allocator.sequential("log_cache"), 0));
        cache.close();
    }

    /** The race checked: appends and reads from several threads keep the bound and leak nothing. */
    @Test
    void concurrentAppendsAndReads() throws Exception {
        LogCache cache = new LogCache(allocator.sequential("log_cache"), 2_000_000);
        java.util.concurrent.atomic.AtomicLong next = new java.util.concurrent.atomic.AtomicLong();
        List<Thread> threads = new ArrayList<>();
        java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        for (int t = 0; t < 4; t++) {
            int self = t;
            threads.add(new Thread(() -> {
                try {
                    Random random = new Random(self);
                    for (int i = 0; i < 2000; i++) {
                        if (self < 2) {
                            synchronized (next) { // offsets must increase: one append at a time takes the next
                                long o = next.getAndIncrement();
                                cache.append(o, batch(8 + random.nextInt(30_000), o));
                            }
                        } else {
                            long o = Math.max(0, next.get() - 1 - random.nextInt(10));
                            ByteBuf b = cache.read(o);
                            if (b != null) {
                                assertEquals(o, b.getLong(0));
                                b.release();
                            }
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
        assertNull(failure.get());
        cache.close();
        assertEquals(0, logStats().requested());
    }
}
