package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The cache an arena's virtual threads share, driven from platform threads so
 * that it runs on Java 17 too: its try-lock under contention, and how long a
 * flush asked of it tries that lock, on the pool's ticker.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SharedCacheTest {

    private static final int[] SIZES = {64, 1000, 5000, 20_000};

    /**
     * Several threads allocate and release through one shared cache at once,
     * each holding a few allocations at a time: those that find its lock free
     * go through its stacks, the others straight to the arena and its
     * remote-free queue. The race checked: two threads in the stacks at once,
     * or memory cached while another thread uses it, would hand the same
     * memory to two live allocations, and the tag one thread wrote would be
     * overwritten by another's. The counts (plain under the lock, atomic past
     * it) must come back to zero.
     */
    @Test
    void threadsSharingTheCacheNeverGetTheSameMemory() throws Exception {
        MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(1).build());
        SharedCache shared = pool.threadCaches.shared(0);
        Category category = pool.defaultCategory();
        int threads = 4;
        int rounds = 20_000;
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long tag = 0x5A5A_0000_0000_0000L | t;
            Thread worker = new Thread(() -> {
                try {
                    start.await();
                    Allocation[] held = new Allocation[8];
                    for (int i = 0; i < rounds; i++) {
                        int slot = i % held.length;
                        Allocation a = held[slot];
                        if (a != null) {
                            ByteBuffer memory = a.buffer();
                            assertEquals(tag + i - held.length, memory.getLong(0), "memory handed to two allocations");
                            assertEquals(tag - (i - held.length), memory.getLong(memory.limit() - 8), "memory handed to two allocations");
                            pool.free(a);
                        } else {
                            held[slot] = a = new Allocation();
                        }
                        int size = SIZES[(i / held.length + (int) tag) % SIZES.length];
                        shared.allocate(category, size, SizeClasses.indexOf(size), pool.reservedSizeFor(size), a);
                        ByteBuffer memory = a.buffer();
                        memory.putLong(0, tag + i);
                        memory.putLong(memory.limit() - 8, tag - i);
                    }
                    for (Allocation a : held) {
                        if (a != null) {
                            pool.free(a);
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "shared-" + t);
            worker.start();
            workers.add(worker);
        }
        start.countDown();
        for (Thread worker : workers) {
            worker.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("a thread sharing the cache failed", failure.get());
        }
        PoolStats stats = pool.stats();
        assertEquals(0, stats.liveAllocations(), stats::report);
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertTrue(shared.lockShared(), "the lock is free once every thread is done");
        shared.unlockShared();
        pool.close();
    }

    /**
     * A flush asked while another thread holds the lock tries it for 20 ms of
     * the pool's ticker, not of the wall clock: with a ticker that stands
     * still it keeps trying, once the ticker passed the 20 ms it returns with
     * the request pending, and the holder's unlock answers it.
     */
    @Test
    void aFlushTriesTheLockForTwentyMillisecondsOfThePoolsTicker() throws Exception {
        AtomicLong now = new AtomicLong();
        MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(1).ticker(now::get)
                .scheduler((task, period) -> () -> { }).build());
        SharedCache shared = pool.threadCaches.shared(0);
        Allocation a = new Allocation();
        shared.allocate(pool.defaultCategory(), 1000, SizeClasses.indexOf(1000), pool.reservedSizeFor(1000), a);
        pool.free(a); // into the shared cache's stack, under its lock
        assertTrue(shared.cachedBytes() > 0, "the release was cached");

        assertTrue(shared.lockShared()); // a virtual thread in the middle of its step
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread asker = new Thread(() -> {
            try {
                shared.flushShared();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "asker");
        try {
            asker.start();
            asker.join(200);
            assertTrue(asker.isAlive(), "the asker gave up while the pool's ticker stood still");
            now.addAndGet(TimeUnit.MILLISECONDS.toNanos(21));
            asker.join(10_000);
            assertFalse(asker.isAlive(), "the asker still tries the lock 21 ms later by the pool's ticker");
            assertNull(failure.get());
            assertTrue(shared.flushRequested, "the flush is left to the holder");
            assertTrue(shared.cachedBytes() > 0, "flushed without the lock");
        } finally {
            shared.unlockShared();
        }
        assertFalse(shared.flushRequested);
        assertEquals(0, shared.cachedBytes(), "the holder's unlock answered the flush");
        pool.close();
    }
}
