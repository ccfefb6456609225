package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Thread caches: reuse, their bounds and sweeps, remote frees, and getting their memory back from dead and live threads. */
class ThreadCacheTest {

    private static final int CHUNK = MemoryPoolTest.CHUNK;

    private static MemoryPool newPool(int arenas) {
        return new MemoryPool(MemoryPoolTest.config().arenas(arenas).arenaSpreadBytes(0).build());
    }

    /** Allocates and frees a spread of small sizes and one run, so that the thread's cache ends up holding memory. */
    private static ThreadCache fillCache(MemoryPool pool) {
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            Allocation a = new Allocation();
            pool.allocate(16 + (i % 40) * 100, a);
            all.add(a);
        }
        Allocation run = new Allocation();
        pool.allocate(200_000, run); // above the cached sizes: goes to the single large slot
        all.add(run);
        ThreadCache cache = run.owner;
        all.forEach(pool::free);
        return cache;
    }

    /** Memory a thread frees comes back to it on its next allocation of the same class, without touching the arena. */
    @Test
    void aThreadReusesWhatItFreed() {
        MemoryPool pool = newPool(1);
        Allocation a = new Allocation();
        pool.allocate(740, a); // class 768
        long address = a.address();
        pool.free(a);
        assertTrue(pool.stats().cachedBytes() >= 768, "the freed element is cached");
        Allocation b = new Allocation();
        pool.allocate(760, b); // same class, 768
        assertEquals(address, b.address(), "last freed, first reused");
        pool.free(b);
        pool.trim();
        assertEquals(0, pool.stats().cachedBytes());
        assertEquals(0, pool.committedBytes());
    }

    /** A class's stack holds at most maxCachedEntriesPerClass entries and maxCachedBytesPerClass bytes; the rest goes back. */
    @Test
    void cachedEntriesAreBoundedPerClass() {
        MemoryPool byEntries = newPool(1); // 256 entries of 16 bytes
        freeMany(byEntries, 300, 16); // a release into a full stack gives the older half back first
        ThreadCache cache = ownCache(byEntries);
        assertTrue(cache.cachedBytes() > 128 * 16 && cache.cachedBytes() <= 256 * 16, () -> "" + cache.cachedBytes());
        assertEquals(cache.cachedBytes(), byEntries.stats().cachedBytes(), "the arena's figures agree");

        MemoryPool byBytes = new MemoryPool(MemoryPoolTest.config().arenas(1).maxCachedBytesPerClass(1024).build());
        freeMany(byBytes, 100, 64); // 1024 / 64 = 16 entries
        long byBytesCached = ownCache(byBytes).cachedBytes();
        assertTrue(byBytesCached > 8 * 64 && byBytesCached <= 16 * 64, () -> "" + byBytesCached);
        assertEquals(byBytesCached, byBytes.stats().cachedBytes());

        MemoryPool upTo1k = new MemoryPool(MemoryPoolTest.config().arenas(1).maxCachedSize(1024).build());
        freeMany(upTo1k, 2, 2000); // above the cached sizes: one goes to the large slot, the other back to the arena
        assertEquals(2048, ownCache(upTo1k).cachedBytes());
        assertEquals(2048, upTo1k.stats().cachedBytes());

        MemoryPool uncached = new MemoryPool(MemoryPoolTest.config().arenas(1).maxCachedSize(0).build());
        freeMany(uncached, 100, 64);
        assertEquals(0, ownCache(uncached).cachedBytes(), "maxCachedSize 0 turns caches off, large slot included");
        for (MemoryPool pool : new MemoryPool[] {byEntries, byBytes, upTo1k, uncached}) {
            pool.trim();
            assertEquals(0, pool.committedBytes());
        }
    }

    /**
     * A thread that releases what another allocated (a consumer) fills its
     * stack of the class; the release that finds it full hands the older half
     * over to the arena's remote-free queue and keeps the newest entries, so
     * the stack never holds more than its limit and the consumer takes no
     * lock for its releases after that.
     */
    @Test
    void aConsumerFillingItsStackGivesTheOlderHalfBack() throws Exception {
        MemoryPool pool = newPool(1); // 256 entries of 16 bytes per class
        List<Allocation> produced = new ArrayList<>();
        for (int i = 0; i < 700; i++) {
            Allocation a = new Allocation();
            pool.allocate(16, a);
            produced.add(a);
        }
        long newest = produced.get(699).address();
        FutureTask<long[]> consumer = new FutureTask<>(() -> {
            long[] seen = new long[4];
            int[] releasedAt = {256, 257, 385, 700};
            int released = 0;
            for (int phase = 0; phase < releasedAt.length; phase++) {
                for (; released < releasedAt[phase]; released++) {
                    pool.free(produced.get(released));
                }
                seen[phase] = ownCache(pool).cachedBytes() / 16;
                if (phase == 1) {
                    assertEquals(128, ownCache(pool).arena.remoteFrees.size(),
                            "the older half was handed to the arena's queue, no lock taken");
                }
            }
            Allocation next = new Allocation();
            pool.allocate(16, next);
            assertEquals(newest, next.address(), "the newest entry stays on top");
            pool.free(next);
            return seen;
        });
        Thread thread = new Thread(consumer, "consumer");
        thread.start();
        long[] entries = consumer.get(20, TimeUnit.SECONDS);
        // 256 fills the stack; the 257th release gives 128 back and is pushed; 128 more give 128 back
        // again at the 384th; 700 = 385 + 315: 129 + 127 fill it, the 512th gives 128 back, ...
        assertArrayEquals(new long[] {256, 129, 129, expectedAfter(700)}, entries);
        assertEquals(0, pool.requestedBytes());
        thread.join();
        pool.trim();
        assertEquals(0, pool.committedBytes(), pool.stats()::report);
    }

    /** Entries left in an empty 256-entry stack after {@code releases} releases that find it full half the time. */
    private static long expectedAfter(int releases) {
        int count = 0;
        for (int i = 0; i < releases; i++) {
            if (count == 256) {
                count -= 128;
            }
            count++;
        }
        return count;
    }

    private static void freeMany(MemoryPool pool, int count, int size) {
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Allocation a = new Allocation();
            pool.allocate(size, a);
            all.add(a);
        }
        all.forEach(pool::free);
        assertEquals(0, pool.requestedBytes());
    }

    /** This thread's cache (the owner of a fresh allocation); its figures are exact on this thread. */
    private static ThreadCache ownCache(MemoryPool pool) {
        Allocation probe = new Allocation();
        pool.allocate(CHUNK + 1, probe); // huge: neither taken from nor given to the cache
        ThreadCache cache = probe.owner;
        pool.free(probe);
        return cache;
    }

    /**
     * Every {@link ThreadCache#SWEEP_INTERVAL} operations (allocations and
     * frees), a sweep gives back the entries of each class that were not used
     * since the previous sweep: entries of a class that was just used survive
     * the first sweep and go at the second.
     */
    @Test
    void entriesUnusedSinceTheLastSweepGoBack() {
        MemoryPool pool = newPool(1);
        freeMany(pool, 10, 1024); // 20 operations, the last 10 of them fill the stack of class 1024
        ThreadCache cache = ownCache(pool);
        long filled = cache.cachedBytes();
        assertTrue(filled >= 10 * 1024);
        Allocation a = new Allocation();
        int pairs = ThreadCache.SWEEP_INTERVAL / 2; // two operations each: 20 + 8192 operations, one sweep
        for (int i = 0; i < pairs; i++) {
            pool.allocate(16, a);
            pool.free(a);
        }
        assertTrue(cache.cachedBytes() >= filled, "class 1024 was used before the first sweep: kept, " + cache.cachedBytes());
        for (int i = 0; i < pairs; i++) { // the second sweep
            pool.allocate(16, a);
            pool.free(a);
        }
        assertTrue(cache.cachedBytes() <= 16 * ClassStack.REFILL_BATCH, "only 16-byte entries are left: " + cache.cachedBytes());
        assertEquals(cache.cachedBytes(), pool.stats().cachedBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * Memory of another arena is never cached: a thread bound to one arena
     * that frees memory of another hands it over through that arena's queue,
     * and the next snapshot finds it back in its arena.
     */
    @Test
    void memoryOfAnotherArenaGoesBackToItsArena() throws Exception {
        MemoryPool pool = newPool(2);
        List<Allocation> mine = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            Allocation a = new Allocation();
            pool.allocate(1024, a);
            mine.add(a);
        }
        ThreadCache ownCache = mine.get(0).owner;
        AtomicLong otherCached = new AtomicLong(-1);
        ConcurrentTasks.runConcurrently(List.of(() -> {
            ThreadCache other = ownCache(pool);
            assertNotSame(ownCache.arena, other.arena, "the second thread is bound to the other arena");
            mine.forEach(pool::free);
            otherCached.set(other.cachedBytes());
        }));
        assertEquals(0, otherCached.get(), "nothing of the other arena was cached");
        PoolStats stats = pool.stats(); // the snapshot drains the queue
        assertEquals(0, stats.requestedBytes());
        assertEquals(ownCache.cachedBytes(), stats.cachedBytes(), "only this thread's own cache holds memory");
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /** Eight allocations of {@code size} by this thread; its cache holds none of that class afterwards. */
    private static List<Allocation> allocateEight(MemoryPool pool, int size) {
        List<Allocation> mine = new ArrayList<>();
        for (int i = 0; i < 8; i++) { // refills of 2 (4 KiB: one-page subpages) or 1 (a run class): the cache ends empty
            Allocation a = new Allocation();
            pool.allocate(size, a);
            mine.add(a);
        }
        return mine;
    }

    /**
     * A thread bound to the other arena of a two-arena pool that runs the
     * tasks it is handed, one at a time. While it frees memory of the first
     * arena, which goes through that arena's remote-free queue and takes none
     * of its locks, the test can hold the first arena's lock, so that nothing
     * else (the decay thread) drains the queue before the test looks.
     */
    private static final class OtherArenaThread implements AutoCloseable {
        private final BlockingQueue<FutureTask<Void>> tasks = new LinkedBlockingQueue<>();
        private final Thread thread = new Thread(() -> {
            try {
                while (true) {
                    tasks.take().run();
                }
            } catch (InterruptedException e) {
                // closed
            }
        });

        OtherArenaThread(MemoryPool pool, Arena arena) throws Exception {
            thread.start();
            run(() -> assertNotSame(arena, ownCache(pool).arena, "the releasing thread is bound to the other arena"));
        }

        /** Runs a task on the thread and waits for it; its failure fails the caller. */
        void run(Runnable task) throws Exception {
            FutureTask<Void> future = new FutureTask<>(task, null);
            tasks.add(future);
            future.get(10, TimeUnit.SECONDS); // a bound for a broken test, not a pause
        }

        void free(MemoryPool pool, List<Allocation> allocations) throws Exception {
            run(() -> allocations.forEach(pool::free));
        }

        @Override
        public void close() {
            thread.interrupt();
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * The path checked: memory of a cached class that a thread bound to
     * another arena released waits in the owning arena's remote-free queue,
     * and the owner's next refill of that class takes it straight from the
     * queue, still taken, in the order it was released; the owner's cache then
     * hands it out last released first. Taking it apart and carving anew would
     * give it out in another order: the last subpage given an element back
     * heads the subpage list, and two neighbouring runs merge and are split
     * again from their low end. Memory
     * of another class in the same queue goes back to its subpage. 4 KiB is a
     * small class (two elements per one-page subpage), 64 KiB a run class. The
     * test holds the arena's lock throughout, so the decay thread cannot drain
     * the queue before the refill does.
     */
    @ParameterizedTest
    @ValueSource(ints = {4096, 65536})
    void aRefillTakesRemoteFreesOfItsClassStraightFromTheQueue(int size) throws Exception {
        MemoryPool pool = newPool(2);
        List<Allocation> mine = allocateEight(pool, size);
        Allocation oneK = new Allocation();
        pool.allocate(1024, oneK);
        Arena arena = oneK.owner.arena;
        Subpage oneKSubpage = oneK.chunk.subpageAt(Chunk.runStart(oneK.handle));
        int oneKFree = oneKSubpage.freeElements();
        // 1 and 2 are neighbours: runs given back to the chunk would merge, and the merged run would be split again in order
        List<Allocation> released = List.of(mine.get(1), mine.get(2), mine.get(5), mine.get(7), oneK);
        List<Long> expected = new ArrayList<>();
        for (int i = 3; i >= 0; i--) {
            expected.add(released.get(i).address());
        }
        List<Long> reallocated = new ArrayList<>();
        try (OtherArenaThread other = new OtherArenaThread(pool, arena)) {
            synchronized (arena) {
                other.free(pool, released);
                for (int i = 0; i < 4; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(size, a);
                    reallocated.add(a.address());
                    mine.set(mine.indexOf(released.get(i)), a);
                }
            }
        }
        assertEquals(expected, reallocated, "the released memory, last released first");
        assertEquals(oneKFree + 1, oneKSubpage.freeElements(), "the 1 KiB element went back to its subpage");
        mine.forEach(pool::free);
        assertEquals(0, pool.stats().requestedBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * A refill takes no more than its batch from the queue: the entries of its
     * class beyond the batch go back to their subpages like any other. An
     * entry that is already in the batch (memory freed twice) fails the refill,
     * and what the batch had taken goes back, so nothing stays taken for good.
     */
    @Test
    void aRefillTakesAtMostItsBatchAndRefusesMemoryFreedTwice() throws Exception {
        MemoryPool pool = newPool(2);
        List<Allocation> mine = allocateEight(pool, 4096);
        Arena arena = mine.get(0).owner.arena;
        int sizeIndex = SizeClasses.indexOf(4096);
        int[] chunks = new int[16];
        long[] handles = new long[16];
        try (OtherArenaThread other = new OtherArenaThread(pool, arena)) {
            synchronized (arena) {
                List<Allocation> released = List.of(mine.get(0), mine.get(2), mine.get(4), mine.get(6)); // one of each subpage
                List<Subpage> subpages = released.stream().map(a -> a.chunk.subpageAt(Chunk.runStart(a.handle))).toList();
                long first = released.get(0).handle;
                long second = released.get(1).handle;
                other.free(pool, released);
                assertEquals(2, arena.allocateBatch(sizeIndex, chunks, handles, 2));
                assertEquals(first, handles[0]);
                assertEquals(second, handles[1]);
                assertEquals(List.of(0, 0, 1, 1), subpages.stream().map(Subpage::freeElements).toList(),
                        "the two beyond the batch went back to their subpages");
                arena.freeBatch(chunks, handles, 0, 2);

                Allocation twice = mine.get(1);
                Subpage subpage = twice.chunk.subpageAt(Chunk.runStart(twice.handle));
                long entry = RemoteFreeQueue.encode(twice.chunk.id, twice.handle);
                other.free(pool, List.of(twice));
                assertTrue(arena.remoteFrees.offer(entry), "the same memory handed back a second time");
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> arena.allocateBatch(sizeIndex, chunks, handles, 16));
                assertTrue(e.getMessage().contains("freed twice"), e.getMessage());
                assertEquals(2, subpage.freeElements(), "the element the batch had taken went back");
            }
        }
        mine.stream().filter(Allocation::isLive).forEach(pool::free);
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The race checked: a thread fills its cache and dies; the cache, which
     * no other thread may touch while the owner lives, is flushed by
     * {@code trim()} once {@code join()} has observed the death. Committed
     * memory then drops to 0.
     */
    @Test
    void aDeadThreadsCacheIsReclaimedByTrim() throws Exception {
        MemoryPool pool = newPool(2);
        AtomicLong cached = new AtomicLong();
        Thread worker = new Thread(() -> cached.set(fillCache(pool).cachedBytes()));
        worker.start();
        worker.join();
        assertTrue(cached.get() > 200_000, "the dead thread's cache held memory: " + cached.get());
        assertTrue(pool.committedBytes() > 0);
        assertEquals(0, pool.requestedBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes(), pool.stats()::report);
        PoolStats stats = pool.stats();
        assertEquals(0, stats.chunks());
        assertEquals(stats.allocations(), stats.releases());
    }

    /**
     * The race checked: as above, but the dead thread's cache is reclaimed by
     * {@code stats()}: its memory is back in the arena (nothing cached, the
     * arena has no bound thread left) before any trim, and this thread can
     * reuse it without a new chunk.
     */
    @Test
    void aDeadThreadsCacheIsReclaimedByStats() throws Exception {
        MemoryPool pool = newPool(1);
        Thread worker = new Thread(() -> fillCache(pool));
        worker.start();
        worker.join();
        PoolStats stats = pool.stats();
        assertEquals(0, stats.cachedBytes(), stats::report);
        assertTrue(stats.report().contains("threads=0"), "the dead thread is no longer bound: " + stats.report());
        long committed = pool.committedBytes();
        List<Allocation> again = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            Allocation a = new Allocation();
            pool.allocate(16 + (i % 40) * 100, a);
            again.add(a);
        }
        assertEquals(committed, pool.committedBytes(), "the reclaimed memory was reused");
        again.forEach(pool::free);
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The race checked: allocations of a thread that has died are released
     * later by another thread, after the pool moved the dead thread's cache
     * out of its registry. They stay counted until released, are counted
     * released exactly once, and once all are gone the dead cache's figures
     * fold into the pool's totals without being counted twice.
     */
    @Test
    void allocationsOutlivingTheirThreadAreCountedUntilReleased() throws Exception {
        MemoryPool pool = newPool(2);
        List<Allocation> handed = new ArrayList<>();
        Thread worker = new Thread(() -> {
            fillCache(pool);
            for (int i = 0; i < 50; i++) {
                Allocation a = new Allocation();
                pool.allocate(100 + i * 1000, a);
                Patterns.write(a, i);
                handed.add(a);
            }
        });
        worker.start();
        worker.join();
        long requested = 0;
        long reserved = 0;
        for (Allocation a : handed) {
            requested += a.requestedBytes();
            reserved += a.reservedBytes();
        }
        PoolStats whileLive = pool.stats(); // the dead cache is flushed, its allocations still live
        assertEquals(requested, whileLive.requestedBytes());
        assertEquals(reserved, whileLive.reservedBytes());
        assertEquals(50, whileLive.liveAllocations());
        long allocations = whileLive.allocations();
        for (int i = 0; i < handed.size(); i++) {
            Patterns.verify(handed.get(i), i);
            pool.free(handed.get(i));
        }
        for (int round = 0; round < 3; round++) { // the first folds the dead cache into the totals, the rest re-read them
            PoolStats after = pool.stats();
            assertEquals(0, after.requestedBytes());
            assertEquals(0, after.reservedBytes());
            assertEquals(allocations, after.allocations(), "round " + round);
            assertEquals(allocations, after.releases(), "round " + round);
        }
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The race checked: {@code trim()} on one thread while another, live
     * thread holds memory in its cache. The live cache is not touched by the
     * trimming thread; it is flushed by its owner at the owner's next
     * operation, after which a trim brings committed memory to 0 while the
     * owner is still alive.
     */
    @Test
    void aLiveThreadFlushesItsCacheAtItsNextOperationAfterATrim() throws Exception {
        // a 4 MiB chunk: a 2 MiB request is too large for any cache (a region of its own), yet it is an operation
        MemoryPool pool = new MemoryPool(MemoryPoolTest.config().chunkSize(4 << 20).arenas(2).arenaSpreadBytes(0).build());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch filled = new CountDownLatch(1);
        CountDownLatch trimmed = new CountDownLatch(1);
        CountDownLatch operated = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        AtomicReference<ThreadCache> workerCache = new AtomicReference<>();
        AtomicLong cachedAfterOperation = new AtomicLong(-1);
        Thread worker = new Thread(() -> {
            try {
                workerCache.set(fillCache(pool));
                filled.countDown();
                assertTrue(trimmed.await(10, TimeUnit.SECONDS));
                Allocation big = new Allocation();
                pool.allocate(2 * LargeSlots.LIMIT, big); // flushes first; too large for any cache
                pool.free(big);
                cachedAfterOperation.set(workerCache.get().cachedBytes());
                operated.countDown();
                assertTrue(finish.await(10, TimeUnit.SECONDS));
            } catch (Throwable e) {
                failure.set(e);
                filled.countDown();
                operated.countDown();
            }
        });
        worker.start();
        assertTrue(filled.await(10, TimeUnit.SECONDS));
        assertEquals(null, failure.get());
        pool.trim();
        assertTrue(pool.committedBytes() > 0, "the live thread's cache still holds memory");
        trimmed.countDown();
        assertTrue(operated.await(10, TimeUnit.SECONDS));
        assertEquals(null, failure.get());
        assertEquals(0, cachedAfterOperation.get(), "the owner flushed at its next operation");
        pool.trim();
        assertEquals(0, pool.committedBytes(), "everything is back while the owner still lives");
        assertTrue(worker.isAlive());
        finish.countDown();
        worker.join();
    }
    /**
     * A size class's refills start small and grow with demand: 2, 4, 8, then
     * 16 allocations at a time for a thread that keeps allocating it; a sweep
     * that finds its entries unused halves the next refill. So a thread
     * touching many classes once holds little, and a producer still takes its
     * memory 16 at a time.
     */
    @Test
    void refillsGrowWithDemandAndShrinkWhenUnused() {
        MemoryPool pool = newPool(1);
        int sizeIndex = SizeClasses.indexOf(64);
        List<Allocation> held = new ArrayList<>();
        int[] cachedAfterRefill = new int[4];
        int refills = 0;
        for (int i = 0; i < 1 + 2 + 4 + 8; i++) {
            Allocation a = new Allocation();
            pool.allocate(64, a);
            held.add(a);
            int cached = ownCache(pool).stackFill(sizeIndex)[0];
            if (i == 0 || i == 2 || i == 6 || i == 14) { // the stack was empty: a refill, taking one for this request
                cachedAfterRefill[refills++] = cached;
            }
        }
        assertArrayEquals(new int[] {1, 3, 7, 15}, cachedAfterRefill);

        // a sweep's worth of traffic in another class: the 15 cached entries of this one go unused
        for (int i = 0; i < ThreadCache.SWEEP_INTERVAL; i++) {
            Allocation other = new Allocation();
            pool.allocate(1000, other);
            pool.free(other);
        }
        assertEquals(0, ownCache(pool).stackFill(sizeIndex)[0], "the sweep gave the unused entries back");
        Allocation next = new Allocation();
        pool.allocate(64, next);
        held.add(next);
        assertEquals(7, ownCache(pool).stackFill(sizeIndex)[0], "16 halved: a refill of 8, one taken");
        for (Allocation a : held) {
            pool.free(a);
        }
        pool.close();
    }
}
