package io.slabwise;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
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

    /**
     * The per-class limits of a thread cache hold for every cached class: a
     * class of which not one entry fits {@code maxCachedBytesPerClass}, or any
     * class when {@code maxCachedEntriesPerClass} is 0, keeps nothing; its
     * releases go back to the arena.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class ClassLimits {

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

    /**
     * A trim that runs while the decay (or any other reclaimer) is flushing a
     * dead thread's cache still gives back what that cache held: trim promises
     * that dead threads' caches are flushed before idle memory goes back.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class DeadCacheTrim {

        private static final int CHUNK = 1 << 20;
        private static final int REGION = 256 * 1024;

        /**
         * The race forced: the decay has taken a dead thread's cache out of the
         * live ones and is flushing it, held inside the chunk source's release of
         * a region that the flush of the thread's dedicated slot pushed out of
         * the idle list (before the flush reaches the thread's stacks). A trim on
         * another thread meanwhile must not return before that cache is flushed:
         * once it returns, with every buffer released and every thread but the
         * trimming one dead, nothing may be committed. Before, the trim found no
         * dead cache left to flush, gave back what was idle without the chunk the
         * dead thread's stack held, and returned with it committed (until a
         * decay time later).
         */
        @Test
        void aTrimDuringTheDecaysFlushOfADeadCacheWaitsForItAndGivesEverythingBack() throws Exception {
            ManualTime time = new ManualTime();
            HoldingSource source = new HoldingSource();
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).arenaSpreadBytes(0)
                    .idleChunkDecay(Duration.ofSeconds(10)).ticker(time).scheduler(time).chunkSource(source).build());

            Thread dying = new Thread(() -> {
                Allocation small = new Allocation();
                pool.allocate(64, small);
                pool.free(small); // into its stack, with the rest of the refill: the chunk stays in use
                Allocation region = new Allocation();
                pool.allocate(REGION, region);
                pool.free(region); // into its dedicated slot
            });
            dying.start();
            dying.join();

            // the trimming thread fills its own slot, the recent cell, then the idle list to its bound of a chunk's bytes
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch filled = new CountDownLatch(1);
            CountDownLatch go = new CountDownLatch(1);
            AtomicBoolean trimming = new AtomicBoolean();
            AtomicLong committedAfterTrim = new AtomicLong(-1);
            Thread trimmer = ConcurrentTasks.startCapturingFailure(() -> {
                List<Allocation> regions = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(REGION, a);
                    regions.add(a);
                }
                regions.forEach(pool::free);
                filled.countDown();
                ConcurrentTasks.await(go, "the decay held in its flush");
                trimming.set(true);
                pool.trim();
                committedAfterTrim.set(pool.committedBytes());
            }, failure);
            ConcurrentTasks.await(filled, "the idle regions");

            source.arm(); // the next release, the idle region the dead thread's slot pushes out, holds its caller
            Thread decay = ConcurrentTasks.startCapturingFailure(time::runScheduled, failure);
            ConcurrentTasks.await(source.held, "the decay's flush of the dead cache");
            go.countDown();
            // let the trim run until it is done or waits (for the flush under way); then the flush goes on
            while (trimmer.isAlive() && (!trimming.get() || trimmer.getState() == Thread.State.RUNNABLE)) {
                Thread.onSpinWait();
            }
            source.release.countDown();
            trimmer.join();
            decay.join();
            assertNull(failure.get());

            assertEquals(0, committedAfterTrim.get(),
                    "every thread but the trimming one is dead and every buffer released: the trim gave everything back");
            PoolStats stats = pool.stats();
            assertEquals(0, stats.requestedBytes(), stats::report);
            assertEquals(0, stats.reservedBytes(), stats::report);
            assertEquals(0, stats.committedBytes(), stats::report);
            assertEquals(0, source.live.get());
        }

        /** Direct memory that counts what it holds, and whose next release after {@link #arm()} waits to be let go. */
        static final class HoldingSource implements ChunkSource {
            final AtomicInteger live = new AtomicInteger();
            final CountDownLatch held = new CountDownLatch(1);
            final CountDownLatch release = new CountDownLatch(1);
            private final AtomicBoolean armed = new AtomicBoolean();

            void arm() {
                armed.set(true);
            }

            @Override
            public NativeRegion allocate(int size) {
                NativeRegion region = ChunkSource.direct().allocate(size);
                live.incrementAndGet();
                return region;
            }

            @Override
            public void release(NativeRegion region) {
                if (armed.compareAndSet(true, false)) {
                    held.countDown();
                    ConcurrentTasks.await(release, "the test letting the release go");
                }
                ChunkSource.direct().release(region);
                live.decrementAndGet();
            }
        }
    }

    /**
     * A flush asked of a live thread's cache (by a caller waiting at the ceiling,
     * or by a trim) is answered at that thread's next allocation or release,
     * whatever path the release takes: one that passes the cache by (a release
     * while someone waits, a dedicated region's) must answer it too, or the
     * memory in that cache stays out of reach of the waiter and of the trim.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class PendingFlush {

        private static final int CHUNK = 64 * 1024;

        /**
         * One arena of {@code chunkSize} chunks under a ceiling of one chunk,
         * where callers wait up to 5 s; no background decay races the test.
         */
        private static MemoryPool oneChunkCeiling(int chunkSize) {
            ManualTime time = new ManualTime();
            return new MemoryPool(PoolConfig.builder().chunkSize(chunkSize).arenas(1).arenaSpreadBytes(0)
                    .maxMemory(chunkSize).limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(5))
                    .chunkSource(ChunkSource.direct()).ticker(time).scheduler(time).build());
        }

        @Test
        void aReleaseWhileACallerWaitsHonoursThePendingFlush() throws Exception {
            releaseWhileACallerWaits(true);
        }

        /** The same when what the thread releases is another thread's allocation (a consumer's release). */
        @Test
        void aReleaseOfAnotherThreadsBufferWhileACallerWaitsHonoursThePendingFlush() throws Exception {
            releaseWhileACallerWaits(false);
        }

        /**
         * Queues a caller for {@code bytes} at the ceiling, opens {@code releaseNow}
         * for the other thread once it waits, and returns what the caller got
         * when it was served or gave up (its failure in {@code waiterFailure});
         * then opens {@code waiterDone}, so the other thread stays alive until then.
         */
        private static Allocation waitThenLetGo(MemoryPool pool, int bytes, CountDownLatch releaseNow,
                                                CountDownLatch waiterDone, AtomicReference<Throwable> waiterFailure)
                throws InterruptedException {
            Allocation out = new Allocation();
            Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(bytes, out), waiterFailure);
            ConcurrentTasks.awaitWaiting(pool, 1);
            releaseNow.countDown();
            waiter.join();
            waiterDone.countDown();
            return out;
        }

        private static void releaseWhileACallerWaits(boolean itsOwn) throws Exception {
            MemoryPool pool = oneChunkCeiling(CHUNK);
            CountDownLatch cached = new CountDownLatch(1);
            CountDownLatch releaseNow = new CountDownLatch(1);
            CountDownLatch waiterDone = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Allocation c = new Allocation();
            if (!itsOwn) {
                pool.allocate(1024, c); // by this thread, released by the other
                pool.trim(); // what its refill took besides stays in no cache of this thread
            }
            Thread consumer = ConcurrentTasks.startCapturingFailure(() -> {
                Allocation a = new Allocation();
                pool.allocate(1024, a);
                if (itsOwn) {
                    pool.allocate(1024, c);
                }
                pool.free(a); // into this thread's cache: the only chunk stays in use
                cached.countDown();
                ConcurrentTasks.await(releaseNow, "the waiter did not start waiting");
                pool.free(c); // this thread's next operation: it should honour the flush the waiter asked for
                // stay alive (a pooled worker idling): a dead thread's cache would be reclaimed by the waiter's retry
                ConcurrentTasks.await(waiterDone, "the waiter did not finish");
            }, failure);
            ConcurrentTasks.await(cached, "the consumer did not allocate");

            AtomicReference<Throwable> waiterFailure = new AtomicReference<>();
            Allocation whole = waitThenLetGo(pool, CHUNK, releaseNow, waiterDone, waiterFailure);
            consumer.join();
            assertNull(failure.get(), "consumer failed");
            assertNull(waiterFailure.get(), "the waiter was not served although the only other thread released"
                    + " everything it had allocated and had been asked to flush its cache");
            pool.free(whole);
            pool.close();
            assertEquals(0, pool.committedBytes());
        }

        /**
         * The same contract after a trim(): a live thread asked to flush whose next
         * operation is the release of a dedicated region (MemoryPool.freeDedicated,
         * never ThreadCache.free) does not flush, so its cached entries pin a chunk
         * that the next trim cannot give back although nothing is live.
         */
        @Test
        void aDedicatedReleaseAfterATrimHonoursThePendingFlush() throws Exception {
            int chunk = 1 << 20;
            ManualTime time = new ManualTime();
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(chunk).arenas(1).arenaSpreadBytes(0)
                    .minIdleChunks(0).chunkSource(ChunkSource.direct()).ticker(time).scheduler(time).build());
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch releaseNow = new CountDownLatch(1);
            CountDownLatch released = new CountDownLatch(1);
            CountDownLatch checked = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread worker = ConcurrentTasks.startCapturingFailure(() -> {
                Allocation small = new Allocation();
                pool.allocate(1024, small);
                pool.free(small); // cached by this thread: the arena's chunk stays in use
                Allocation region = new Allocation();
                pool.allocate(200 * 1024, region); // above dedicatedAbove (chunk / 8): a region of its own
                holding.countDown();
                ConcurrentTasks.await(releaseNow, "the trim did not run");
                pool.free(region); // the first operation after the trim asked this thread to flush
                released.countDown();
                ConcurrentTasks.await(checked, "the check did not run"); // alive, like a pooled worker
            }, failure);
            ConcurrentTasks.await(holding, "the worker did not allocate");
            pool.trim(); // asks the worker to flush at its next operation
            releaseNow.countDown();
            ConcurrentTasks.await(released, "the worker did not release");
            pool.trim();
            long committed = pool.committedBytes();
            long requested = pool.requestedBytes();
            checked.countDown();
            worker.join();
            assertNull(failure.get(), "worker failed");
            assertEquals(0, requested);
            assertEquals(0, committed, "nothing is live and the only other thread released after being asked to flush,"
                    + " yet its cache still pins a chunk");
            pool.close();
        }

        /**
         * Once a thread has answered a flush, a dedicated region it releases while
         * someone waits must still go where the waiter's reclaim can take it (the
         * recent cell or the idle list), not into that thread's slot, where only
         * its own next operation would give it back. The order is forced: the
         * waiter is queued, the worker answers the flush its reclaim asked for
         * (its own trim, which wakes nobody), then releases the region, which is
         * the only release the waiter sees.
         */
        @Test
        void aDedicatedRegionReleasedWhileACallerWaitsIsNotKeptInTheReleasersSlot() throws Exception {
            int chunk = 256 * 1024;
            int region = 160 * 1024; // above dedicatedAbove (chunk / 8): a region of its own; two do not fit the ceiling
            MemoryPool pool = oneChunkCeiling(chunk);
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch releaseNow = new CountDownLatch(1);
            CountDownLatch waiterDone = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread worker = ConcurrentTasks.startCapturingFailure(() -> {
                Allocation held = new Allocation();
                pool.allocate(region, held);
                holding.countDown();
                ConcurrentTasks.await(releaseNow, "the waiter did not start waiting");
                pool.trim(); // answers the flush the waiter asked for: the slot would take a region again
                pool.free(held);
                ConcurrentTasks.await(waiterDone, "the waiter did not finish"); // alive, like a pooled worker
            }, failure);
            ConcurrentTasks.await(holding, "the worker did not allocate");

            AtomicReference<Throwable> waiterFailure = new AtomicReference<>();
            Allocation wanted = waitThenLetGo(pool, region, releaseNow, waiterDone, waiterFailure);
            worker.join();
            assertNull(failure.get(), "worker failed");
            assertNull(waiterFailure.get(), "the region released while the caller waited was kept in the releaser's slot");
            pool.free(wanted);
            pool.close();
            assertEquals(0, pool.committedBytes());
        }
    }
}
