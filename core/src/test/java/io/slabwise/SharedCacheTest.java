package io.slabwise;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static io.slabwise.ThreadBindingTest.burst;
import static io.slabwise.ThreadBindingTest.onVirtualThreads;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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

    /**
     * The cache virtual threads share, and flushes asked for while its lock is
     * taken (by a close, a trim or a waiter): each is made when the lock is let
     * go, whatever the holder was doing. The test thread takes the lock with
     * {@link SharedCache#lockShared()} where a virtual thread would hold it for a
     * moment (in {@code takeHolder}, {@code takeFilled},
     * {@code countAllocation} or {@code release}). Each test failed before
     * the flush at the unlock.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class FlushAtUnlock {

        /**
         * close() while a virtual thread holds the shared lock (say, one more
         * allocation starting as the application shuts down): close() can only
         * ask for a flush, and nothing after close() would answer it (allocations
         * fail before reaching the stacks, releases pass the cache), so the
         * holder's unlock makes it, and the memory kept in the shared cache goes
         * back.
         */
        @Test
        void aCloseWhileTheSharedLockIsTakenIsAnsweredAtTheUnlock() throws Exception {
            assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
            MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
            SharedCache shared = pool.threadCaches.shared(0);
            Category category = pool.defaultCategory();
            onVirtualThreads(virtual -> {
                for (int size : new int[] {1000, 600_000}) { // a class's stack, a dedicated region
                    virtual.submit(() -> pool.free(pool.general.allocateStashed(category, size, false))).get();
                }
                assertEquals(1, shared.parkedRegions()[0], "a region is kept in the shared cache");

                assertTrue(shared.lockShared()); // a virtual thread in takeHolder, as close() runs
                try {
                    pool.close();
                } finally {
                    shared.unlockShared();
                }
                // later virtual-thread traffic: allocations are refused, nothing else touches the shared cache
                ExecutionException refused = assertThrows(ExecutionException.class,
                        () -> virtual.submit(() -> pool.general.allocateStashed(category, 1000, false)).get());
                assertInstanceOf(IllegalStateException.class, refused.getCause());
            });
            PoolStats stats = pool.stats();
            assertEquals(0, stats.liveAllocations(), stats::report);
            assertEquals(0, shared.parkedRegions()[0], "a closed pool still parks a region in the shared cache");
            assertEquals(0, pool.committedBytes(), "a closed pool with nothing live kept memory committed");
        }

        /**
         * A trim that finds the shared lock taken asks for a flush. Virtual
         * threads that allocate and release only regions of their own (above
         * dedicatedAbove) pass every place that answered one before: takeFilled
         * answers null while it is pending, the allocation goes through
         * allocateDedicated and countAllocation, and the release through
         * keepDedicatedFilled. The next unlock answers it: the four kept regions
         * go back, and regions are kept again after it.
         */
        @Test
        void aPendingFlushIsAnsweredByRegionTraffic() throws Exception {
            assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
            MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
            SharedCache shared = pool.threadCaches.shared(0);
            Category category = pool.defaultCategory();
            int size = 1 << 20;
            int kept = 1 + LargeSlots.SHARED_EXTRA_REGIONS;
            onVirtualThreads(virtual -> {
                virtual.submit(() -> burst(pool, category, size, kept)).get();
                assertEquals(kept, shared.parkedRegions()[0]);

                assertTrue(shared.lockShared()); // a virtual thread in the shared cache as the trim runs
                try {
                    pool.trim();
                } finally {
                    shared.unlockShared();
                }
                Allocation next = virtual.submit(() -> pool.general.allocateStashed(category, size, false)).get();
                long parkedAfterNextOperation = shared.parkedRegions()[0];
                virtual.submit(() -> pool.free(next)).get();
                List<Allocation> last = null;
                for (int round = 0; round < 100; round++) {
                    last = virtual.submit(() -> burst(pool, category, size, kept)).get();
                }
                assertEquals(0, parkedAfterNextOperation, "the shared cache's next operation left the trim's regions parked");
                assertTrue(last.stream().anyMatch(a -> a.kept), "400 operations after the trim, no region is kept any more");
            });
            pool.close();
        }

        /**
         * The last buffer, released by a virtual thread as another thread closes
         * the pool: the release checks that the pool is open and keeps its holder
         * filled (SharedCache.KEPT), then is held up before it lets go of the lock (here:
         * the sweep its keep triggers waits for the arena's monitor). close() finds
         * the lock taken and only asks for a flush, which the release's unlock
         * makes (MemoryPool.release returns on SharedCache.KEPT without reading the
         * closed flag again).
         * (jcstress SharedReleaseCloseTest never takes this path: its holder is not
         * stashed, so it is never kept.)
         */
        @Test
        void theLastReleaseKeptAsThePoolClosesGoesBackToo() throws Exception {
            assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
            MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).scheduler((task, period) -> () -> { }).build());
            SharedCache shared = pool.threadCaches.shared(0);
            Arena arena = shared.arena;
            Category category = pool.defaultCategory();
            onVirtualThreads(virtual -> {
                // the large slot keeps a holder the next sweep gives back to the arena, under the arena's monitor
                virtual.submit(() -> pool.free(pool.general.allocateStashed(category, 100_000, false))).get();
                Allocation last = virtual.submit(() -> pool.general.allocateStashed(category, 1000, false)).get();
                java.lang.reflect.Field ops = ThreadCache.class.getDeclaredField("operationsSinceSweep");
                ops.setAccessible(true);
                ops.setInt(shared, ThreadCache.SWEEP_INTERVAL - 1); // the release's keep is the operation that sweeps

                Thread[] releasing = new Thread[1];
                Thread closer = new Thread(pool::close, "closer");
                java.util.concurrent.Future<?> release;
                synchronized (arena) {
                    release = virtual.submit(() -> {
                        releasing[0] = Thread.currentThread();
                        pool.free(last); // open, kept; the sweep then waits for the arena, the shared lock held
                    });
                    awaitBlocked(releasing);
                    closer.start(); // closed; the shared cache's flush only requested; then waits for the arena's trim
                    awaitBlocked(new Thread[] {closer});
                }
                release.get();
                closer.join();
            });
            PoolStats stats = pool.stats();
            assertEquals(0, stats.liveAllocations(), stats::report);
            assertEquals(0, pool.committedBytes(), "a closed pool with nothing live kept memory committed");
        }

        /** Waits (no sleep) until {@code thread[0]} exists and is blocked on a monitor. */
        private static void awaitBlocked(Thread[] thread) {
            while (thread[0] == null || thread[0].getState() != Thread.State.BLOCKED) {
                Thread.onSpinWait();
            }
        }

        /**
         * stats() reads the regions parked in each cache, then those in the
         * pool's recent cell; a region that a shared cache's flush moves into the
         * cell between those reads is seen twice. The figures then take no more
         * parked regions from the live ones than there are: read here with one
         * live region and the same region seen parked twice. (Before, live went
         * to -1 region and -1 MiB, which a bounded stress of a virtual thread
         * flushing its kept region while stats() ran showed within seconds.)
         */
        @Test
        void aRegionSeenParkedTwiceNeverMakesTheLiveFiguresNegative() {
            CommittedMemory memory = new CommittedMemory(ChunkSource.direct(), new MemoryLimit(Long.MAX_VALUE), false);
            int region = 1 << 20;
            memory.hugeBytes.addAndGet(region);
            memory.hugeCount.incrementAndGet();
            CommittedMemory.Figures figures = memory.figures(0, 2, 2L * region);
            assertEquals(0, figures.hugeBytes());
            assertEquals(0, figures.hugeCount());
            assertEquals(region, figures.hugeIdleBytes(), "no more parked than the regions there are");
            CommittedMemory.Figures exact = memory.figures(0, 1, region);
            assertEquals(0, exact.hugeBytes());
            assertEquals(region, exact.hugeIdleBytes());
        }
    }
}
