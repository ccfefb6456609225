package io.slabwise;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A pool's life from builder to {@link MemoryPool#close()}: refusal after
 * close, memory given back at once and as live buffers are released, no pool
 * kept alive by the threads that used it, native memory of a dropped pool
 * freed, and every counter left as it was when the chunk source fails.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PoolLifecycleTest {

    private static final int CHUNK = 1 << 20;

    private static PoolConfig.Builder config() {
        return PoolConfig.builder().chunkSize(CHUNK).arenas(2).arenaSpreadBytes(0).chunkSource(ChunkSource.direct());
    }

    @Test
    void closeRefusesNewAllocationsEverywhereAndIsIdempotent() {
        MemoryPool pool = new MemoryPool(config().build());
        SequentialAllocator log = pool.sequential("log_cache");
        BlockPool blocks = pool.blocks("block_cache");
        pool.close();
        pool.close();
        assertTrue(pool.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.allocate(64, new Allocation()));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> pool.tryAllocate(pool.defaultCategory(), 64, new Allocation(), true));
        assertThrows(IllegalStateException.class, () -> log.allocate(64, new Allocation()));
        assertThrows(IllegalStateException.class, () -> blocks.allocate(3 * CHUNK / 2));
        assertThrows(IllegalStateException.class, () -> blocks.allocateBlock(new Allocation()));
        assertEquals(0, pool.committedBytes());
    }

    @Test
    void closeGivesIdleAndCachedMemoryBackAtOnce() {
        MemoryPool pool = new MemoryPool(config().maxIdleChunksPerArena(4).build());
        SequentialAllocator log = pool.sequential("log_cache");
        BlockPool blocks = pool.blocks("block_cache");
        for (int size : new int[] {16, 1024, 8192, 40_000, 600_000, 3 * CHUNK}) {
            Allocation a = new Allocation();
            pool.allocate(size, a);
            pool.free(a); // into this thread's cache, its large slot, an idle chunk or straight back
        }
        Allocation slice = new Allocation();
        log.allocate(1000, slice);
        pool.free(slice); // the open chunk stays open
        blocks.allocate(2 * CHUNK + 5000).forEach(pool::free); // idle blocks
        assertTrue(pool.committedBytes() > 0);
        pool.close();
        assertEquals(0, pool.committedBytes(), "nothing live: everything went back at close");
    }

    /** Buffers live at close stay usable; each release gives memory back, on any thread. */
    @Test
    void liveBuffersOutliveCloseAndTheirMemoryGoesBackAsTheyAreReleased() throws Exception {
        MemoryPool pool = new MemoryPool(config().build());
        SequentialAllocator log = pool.sequential("log_cache");
        BlockPool blocks = pool.blocks("block_cache");
        List<Allocation> live = new ArrayList<>();
        for (int size : new int[] {64, 1024, 20_000, 200_000, 2 * CHUNK}) {
            Allocation a = new Allocation();
            pool.allocate(size, a);
            live.add(a);
        }
        Allocation slice = new Allocation();
        log.allocate(5000, slice);
        live.add(slice);
        live.addAll(blocks.allocate(CHUNK + 3000));
        pool.close();
        assertEquals(live.size(), pool.stats().liveAllocations(), "still counted after close");
        for (Allocation a : live) {
            a.chunkMemory().put(a.offset(), (byte) 7); // still valid
        }
        Allocation first = live.remove(0);
        pool.free(first); // on the allocating thread
        Thread other = new Thread(() -> live.forEach(pool::free)); // and the rest on another
        other.start();
        other.join();
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.committedBytes(), "the last release gave the last chunk back");
    }

    /**
     * A caller waiting at the ceiling when the pool closes fails at once
     * instead of waiting out its timeout. The pool's clock stands still, so
     * neither its timeout nor the 50 ms safety net of a waiter's sleep can
     * end the wait: only the close's wake-up does.
     */
    @Test
    void closeWakesCallersWaitingAtTheCeiling() throws Exception {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(config().maxMemory(CHUNK).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(Duration.ofSeconds(50)).ticker(time).scheduler(time).build());
        Allocation hog = new Allocation();
        pool.allocate(CHUNK, hog);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                pool.allocate(CHUNK, new Allocation());
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        waiter.start();
        time.awaitParked(1, waiter); // until the waiter is queued and asleep: this is what the test is about
        pool.close();
        waiter.join(TimeUnit.SECONDS.toMillis(10)); // a bound for a waiter close failed to wake, not a pause
        assertFalse(waiter.isAlive(), "close did not wake the waiter");
        assertInstanceOf(IllegalStateException.class, failure.get());
        pool.free(hog);
        assertEquals(0, pool.committedBytes());
    }

    /**
     * Pools built, used and closed one after another on the same thread: none
     * is kept reachable (the thread's cache of it is held weakly), and no
     * native memory or thread is left behind.
     */
    @Test
    void aThousandPoolsLeaveNothingBehind() {
        useAndClosePool(); // the process-wide threads (the scheduler, malloc's arena thread) start here, once
        int threadsBefore = Thread.activeCount();
        List<WeakReference<MemoryPool>> pools = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            pools.add(new WeakReference<>(useAndClosePool()));
        }
        assertTrue(awaitCollected(pools), "every closed pool was collected");
        assertTrue(Thread.activeCount() <= threadsBefore, "no thread per pool");
    }

    /** A pool that served a cached, a dedicated and a released-after-close allocation, closed and empty. */
    private static MemoryPool useAndClosePool() {
        MemoryPool pool = new MemoryPool(config().chunkSize(64 * 1024).build());
        Allocation a = new Allocation();
        pool.allocate(1024, a);
        pool.free(a);
        pool.allocate(100_000, a);
        pool.close();
        pool.free(a);
        assertEquals(0, pool.committedBytes());
        return pool;
    }

    /** A pool nobody closed is collected, and the cleaner gives its native memory back to the chunk source. */
    @Test
    void aDroppedPoolGivesItsNativeMemoryBack() throws Exception {
        CountingSource source = new CountingSource();
        List<WeakReference<MemoryPool>> dropped = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            MemoryPool pool = new MemoryPool(config().chunkSource(source).maxIdleChunksPerArena(1).build());
            Allocation a = new Allocation();
            pool.allocate(1024, a); // cached in this thread's cache: its chunk stays committed
            pool.free(a);
            dropped.add(new WeakReference<>(pool));
        }
        assertEquals(3, source.live.get());
        assertTrue(awaitCollected(dropped));
        for (int i = 0; i < 100 && source.live.get() > 0; i++) {
            System.gc();
            source.released.await(100, TimeUnit.MILLISECONDS); // the cleaner thread runs after the collection
        }
        assertEquals(0, source.live.get(), "the cleaner gave every region back");
    }

    @Test
    void trimAfterEverythingIsReleasedBringsCommittedToZero() {
        MemoryPool pool = new MemoryPool(config().build());
        SequentialAllocator log = pool.sequential("log_cache", 4, CHUNK);
        List<Allocation> slices = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            Allocation a = new Allocation();
            log.allocate(500 + i * 97, a);
            slices.add(a);
        }
        slices.forEach(pool::free);
        assertTrue(pool.committedBytes() > 0, "the open chunk is still committed");
        pool.trim();
        assertEquals(0, pool.committedBytes());
        Allocation again = new Allocation();
        log.allocate(100, again); // still usable after trim
        pool.free(again);
    }

    /**
     * The chunk source fails (an OutOfMemoryError from the JVM's direct-memory
     * limit, a failed mmap): the request fails with that error and every
     * counter, the category's quota and the ceiling are exactly as before, in
     * the general pool, the sequential allocator and the block pool.
     */
    @Test
    void aFailingChunkSourceLeavesEveryCounterAndQuotaAsItWas() {
        CountingSource source = new CountingSource();
        MemoryPool pool = new MemoryPool(config().chunkSource(source).maxMemory(64L * CHUNK)
                .quota("small", 8L * CHUNK).quota("log_cache", 8L * CHUNK).quota("block_cache", 8L * CHUNK).build());
        SequentialAllocator log = pool.sequential("log_cache");
        BlockPool blocks = pool.blocks("block_cache");
        source.failNext = true;
        assertThrows(OutOfMemoryError.class, () -> pool.allocate(pool.category("small"), 2 * CHUNK, new Allocation()));
        source.failNext = true;
        assertThrows(OutOfMemoryError.class, () -> pool.allocate(pool.category("small"), 4096, new Allocation()));
        source.failNext = true;
        assertThrows(OutOfMemoryError.class, () -> log.allocate(1000, new Allocation()));
        source.failNext = true;
        assertThrows(OutOfMemoryError.class, () -> blocks.allocate(CHUNK + 10));
        for (String name : new String[] {"small", "log_cache", "block_cache"}) {
            Category category = pool.category(name);
            assertEquals(0, category.trackedReserved.get(), name + ": the quota was given back");
        }
        assertEquals(0, pool.committedBytes(), "the ceiling was given back");
        assertEquals(0, pool.reservedBytes());
        assertEquals(0, source.live.get());
        // and the whole quota is still usable
        Allocation full = new Allocation();
        pool.allocate(pool.category("small"), 8 * CHUNK, full);
        pool.free(full);
    }

    /**
     * An allocation whose region is being committed as the pool closes fails,
     * and gives the region back: close() saw it counted and kept the decay
     * running, which stops at its next run because nothing is committed.
     */
    @Test
    void anAllocationCommittingAsThePoolClosesFailsAndLeavesNothingCommitted() throws Exception {
        ManualTime time = new ManualTime();
        CountingSource source = new CountingSource();
        source.hold = new CountDownLatch(1);
        MemoryPool pool = new MemoryPool(config().chunkSource(source).ticker(time).scheduler(time).build());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread allocating = new Thread(() -> {
            try {
                pool.allocate(2 * CHUNK, new Allocation()); // a dedicated region: committed under no lock close() takes
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        allocating.start();
        source.entered.await(); // past the open check, its region counted, inside the chunk source
        pool.close();
        assertEquals(1, time.scheduled(), "a region was counted at close: the decay runs on");
        source.hold.countDown();
        allocating.join();
        assertInstanceOf(IllegalStateException.class, failure.get());
        assertTrue(failure.get().getMessage().contains("closed"), failure.get().getMessage());
        assertEquals(0, pool.committedBytes());
        assertEquals(0, source.live.get(), "the region went back to its source");
        time.runScheduled();
        assertEquals(0, time.scheduled(), "nothing committed: the decay stopped");
    }

    /** After close, every commit gives its region back and throws, with region groups and without. */
    @Test
    void committedMemoryTakesNothingAfterClose() {
        for (boolean grouped : new boolean[] {false, true}) {
            CountingSource source = new CountingSource();
            CommittedMemory memory = new CommittedMemory(source, new MemoryLimit(Long.MAX_VALUE), grouped);
            NativeRegion held = memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK); // in a group when grouped
            long before = memory.committed();
            memory.close();
            for (int size : new int[] {CHUNK, 64 * CHUNK}) { // from the open group (or alone), and alone
                assertThrows(IllegalStateException.class, () -> memory.commit(size, CommittedMemory.RegionKind.CHUNK));
                assertEquals(before, memory.committed(), "grouped " + grouped + ", " + size + " bytes");
                assertEquals(1, source.live.get(), "grouped " + grouped + ", " + size + " bytes: nothing kept from the source");
            }
            memory.decommit(held);
            assertEquals(0, memory.committed());
            assertEquals(0, source.live.get());
        }
    }

    /** Regions counted in and out, and a failure on demand. */
    private static final class CountingSource implements ChunkSource {
        final AtomicInteger live = new AtomicInteger();
        final CountDownLatch released = new CountDownLatch(1);
        final CountDownLatch entered = new CountDownLatch(1);
        volatile boolean failNext;
        /** When set, allocate() waits for it once entered. */
        volatile CountDownLatch hold;

        @Override
        public NativeRegion allocate(int size) {
            entered.countDown();
            CountDownLatch gate = hold;
            if (gate != null) {
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            if (failNext) {
                failNext = false;
                throw new OutOfMemoryError("Cannot reserve " + size + " bytes of direct buffer memory (test)");
            }
            NativeRegion region = ChunkSource.direct().allocate(size);
            live.incrementAndGet();
            return region;
        }

        @Override
        public void release(NativeRegion region) {
            ChunkSource.direct().release(region);
            live.decrementAndGet();
            released.countDown();
        }
    }

    /** Collects until every referent is gone; a bounded number of full collections. */
    private static boolean awaitCollected(List<? extends WeakReference<?>> refs) {
        for (int i = 0; i < 50; i++) {
            System.gc();
            if (refs.stream().allMatch(ref -> ref.get() == null)) {
                return true;
            }
        }
        return false;
    }

    @Test
    void aClosedPoolIsNotOpen() {
        MemoryPool pool = new MemoryPool(config().build());
        assertFalse(pool.isClosed());
        pool.close();
        assertTrue(pool.isClosed());
    }

    /**
     * What a release into a closed pool gives back, and what it looks at: the
     * arenas, the shared caches and its own thread's cache, never the other
     * threads' caches (a closed pool drains one release at a time, and a walk
     * of every thread per release would make draining cost threads x
     * buffers).
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class ReleasesIntoAClosedPool {

        /**
         * A virtual thread's release cached its memory in the shared cache and
         * was descheduled before letting go of the lock, past the 20 ms (of
         * the pool's ticker) for which the close tried that lock: the close
         * left a flush request, which the holder, having read no request just
         * before it was set, did not answer as it let go. The next release
         * into the closed pool, from a platform thread's cache, flushes the
         * shared cache and gives the emptied chunk back. (The jcstress
         * {@code SharedReleaseCloseTest} found this state under the C2 stress
         * options when the release reclaimed the arenas only.)
         */
        @Test
        void aSharedCacheLeftHoldingMemoryAfterTheClosesTriesIsFlushedByTheNextRelease() throws Exception {
            AtomicLong now = new AtomicLong();
            MemoryPool pool = new MemoryPool(config().arenas(1)
                    .ticker(() -> now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1))) // each read a millisecond later
                    .scheduler((task, period) -> () -> { }).build());
            SharedCache shared = pool.threadCaches.shared(0);
            Category category = pool.defaultCategory();
            Allocation cached = new Allocation();
            shared.allocate(category, 1000, SizeClasses.indexOf(1000), pool.reservedSizeFor(1000), cached);
            pool.free(cached); // into the shared cache's stacks, under its lock
            Allocation last = pool.general.allocateStashed(category, 1000, false); // from this thread's own cache
            assertTrue(shared.cachedBytes() > 0, "the release was cached");

            assertTrue(shared.lockShared()); // the virtual thread that cached it, descheduled before letting go
            pool.close(); // each flush of the shared cache tries its lock for 20 ms of the ticker, then leaves a request
            assertTrue(shared.flushRequested, "the close left its flush to the holder");
            letGoWithoutAnswering(shared); // the holder lets go, having read no request just before the close set it
            assertTrue(shared.cachedBytes() > 0, "the shared cache holds memory in the closed pool");
            assertTrue(pool.committedBytes() > 0);

            pool.free(last); // the last live allocation, through the platform thread's path into the closed pool
            assertEquals(0, shared.cachedBytes(), "the release into the closed pool left the shared cache full");
            assertEquals(0, pool.committedBytes(), "nothing live, yet memory stayed committed");
        }

        /**
         * Another thread's cache is not looked at by a release into the closed
         * pool: it answers the close's flush request at its own next
         * operation, and until then what it holds stays committed.
         */
        @Test
        void anotherThreadsCacheAnswersTheClosesRequestAtItsOwnNextOperation() throws Exception {
            MemoryPool pool = new MemoryPool(config().arenas(1).scheduler((task, period) -> () -> { }).build());
            Category category = pool.defaultCategory();
            ExecutorService other = Executors.newSingleThreadExecutor();
            try {
                ThreadCache othersCache = other.submit(() -> pool.threadCaches.current()).get();
                Allocation othersLive = other.submit(() -> {
                    pool.free(pool.general.allocateStashed(category, 1000, false)); // into its own cache
                    return pool.general.allocateStashed(category, 1000, false);
                }).get();
                Allocation mine = new Allocation();
                pool.allocate(5000, mine);
                long othersCached = othersCache.cachedBytes();
                assertTrue(othersCached > 0, "the other thread's release was cached");

                pool.close();
                assertTrue(othersCache.flushRequested, "the close asked the other thread to flush");
                pool.free(mine);
                assertEquals(othersCached, othersCache.cachedBytes(), "this thread's release flushed another thread's cache");
                assertTrue(pool.committedBytes() > 0);

                other.submit(() -> pool.free(othersLive)).get(); // its next operation answers the request
                assertEquals(0, othersCache.cachedBytes());
                assertEquals(0, pool.committedBytes(), "nothing live, yet memory stayed committed");
            } finally {
                other.shutdownNow();
            }
        }

        /** Lets go of {@code shared}'s lock as a plain store, as a holder does that read no flush request. */
        private void letGoWithoutAnswering(SharedCache shared) throws ReflectiveOperationException {
            java.lang.reflect.Field busy = SharedCache.class.getDeclaredField("busy");
            busy.setAccessible(true);
            busy.setBoolean(shared, false);
        }
    }
}
