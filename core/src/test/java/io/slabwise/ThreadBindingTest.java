package io.slabwise;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * How threads meet the pool: platform threads are bound to arenas one each
 * before any arena gets a second, virtual threads get no cache of their own,
 * and a cache costs nothing until its thread caches something.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ThreadBindingTest {

    /**
     * The race: threads that start at once each read the least-bound arena and
     * then count themselves in it. Done apart, several read the same count and
     * pile into one arena while others stay empty. A barrier releases all the
     * threads together, many times over; every arena must end with exactly one.
     */
    @Test
    void threadsStartingTogetherSpreadOverTheArenas() throws Exception {
        int arenas = 4;
        for (int trial = 0; trial < 50; trial++) {
            MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(arenas).arenaSpreadBytes(0).chunkSize(64 * 1024).build());
            CyclicBarrier start = new CyclicBarrier(arenas);
            CyclicBarrier allocated = new CyclicBarrier(arenas + 1);
            CyclicBarrier done = new CyclicBarrier(arenas + 1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < arenas; t++) {
                Thread thread = new Thread(() -> {
                    try {
                        start.await();
                        Allocation a = new Allocation();
                        pool.allocate(64, a);
                        allocated.await(); // stay alive (and bound) until the arenas were read
                        done.await();
                        pool.free(a);
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                });
                threads.add(thread);
                thread.start();
            }
            allocated.await();
            int[] bound = new int[arenas];
            for (ArenaSnapshot arena : pool.stats().arenaSnapshots()) {
                bound[arena.index()] = arena.threads();
            }
            done.await();
            for (Thread thread : threads) {
                thread.join();
            }
            int[] one = new int[arenas];
            Arrays.fill(one, 1);
            assertArrayEquals(one, bound, "trial " + trial + ": threads per arena");
        }
    }

    @Test
    void aNewCacheMakesNoStackUntilItsThreadCaches() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
        Allocation a = new Allocation();
        pool.allocate(100_000, a); // above the cached sizes: no stack needed
        ThreadCache cache = a.owner;
        assertEquals(0, cache.stacksMade(), "a thread that only allocated a large buffer caches nothing");
        pool.free(a);
        pool.allocate(1024, a);
        pool.free(a);
        pool.allocate(2048, a);
        pool.free(a);
        assertEquals(2, cache.stacksMade(), "one stack per size class used");

        Thread worker = new Thread(() -> {
            Allocation b = new Allocation();
            pool.allocate(1024, b);
            pool.free(b);
        });
        worker.start();
        worker.join();
        assertEquals(2, pool.threadCaches.platformCaches(), "this thread's cache and the dead worker's");
        assertEquals(1, pool.threadCaches.reclaimDead());
        assertEquals(1, pool.threadCaches.platformCaches(), "the dead worker's cache left the registry");
        pool.trim();
        assertEquals(0, pool.committedBytes(), "the dead worker's cached memory went back");
    }

    /** A dead thread's cache, kept while its buffers live, drops its stacks and keeps only its counters. */
    @Test
    void aDeadThreadsCacheDropsItsStacksButKeepsCountingItsLiveBuffers() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
        Allocation[] left = new Allocation[1];
        Thread worker = new Thread(() -> {
            Allocation a = new Allocation();
            pool.allocate(1024, a);
            pool.free(a);
            left[0] = new Allocation();
            pool.allocate(512, left[0]);
        });
        worker.start();
        worker.join();
        ThreadCache dead = left[0].owner;
        assertTrue(dead.stacksMade() > 0);
        pool.threadCaches.reclaimDead();
        assertEquals(0, dead.stacksMade(), "stacks dropped");
        assertEquals(512, pool.requestedBytes(), "the live buffer is still counted");
        pool.free(left[0]); // released by another thread: counted in the dead cache's remote counters
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.reservedBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * Virtual threads share a cache per arena: none registers a cache of its
     * own, and the accounting stays exact while thousands of them allocate,
     * hand buffers to one another and release them on other threads.
     */
    @Test
    void virtualThreadsGetNoCacheOfTheirOwnAndAreCountedExactly() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(2).arenaSpreadBytes(0).build());
        int tasks = 5_000;
        List<Allocation> handedOver = java.util.Collections.synchronizedList(new ArrayList<>());
        onVirtualThreads(virtual -> {
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < tasks; i++) {
                int size = 64 + (i * 37) % 70_000; // small, page-run and above-cached sizes
                futures.add(virtual.submit(() -> {
                    assertTrue(VirtualThreads.isVirtual(Thread.currentThread()));
                    Allocation a = new Allocation();
                    pool.allocate(size, a);
                    a.chunkMemory().put(a.offset(), (byte) 1);
                    Allocation b = new Allocation();
                    pool.allocate(size, b);
                    pool.free(a);
                    handedOver.add(b); // released later by another thread
                }));
            }
            for (Future<?> future : futures) {
                future.get();
            }
        });
        assertEquals(0, pool.threadCaches.platformCaches(), "no virtual thread registered a cache of its own");
        assertEquals(tasks, handedOver.size());
        assertTrue(pool.requestedBytes() > 0);
        for (Allocation b : handedOver) {
            pool.free(b); // on this platform thread
        }
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.reservedBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes(), "everything a virtual thread released reached its arena");
    }

    /**
     * Virtual threads choose their shared cache among the arenas in use, or
     * one arena per carrier thread if that is more: 64 of them holding 1 KiB
     * each at once in a pool of 16 arenas, far below
     * {@link PoolConfig#arenaSpreadBytes()}, commit the first chunk of at most
     * that many arenas, not a chunk in every arena (on a machine of fewer
     * than 16 processors).
     */
    @Test
    void virtualThreadsOfASmallPoolShareOneArenaPerCarrier() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(16).chunkSize(4 << 20)
                .chunkSource(PoolMemory.chunkByChunk()).build());
        int threads = 64;
        CyclicBarrier allHold = new CyclicBarrier(threads + 1);
        CountDownLatch measured = new CountDownLatch(1);
        onVirtualThreads(virtual -> {
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                futures.add(virtual.submit(() -> {
                    Allocation a = new Allocation();
                    pool.allocate(1024, a);
                    allHold.await(30, TimeUnit.SECONDS);
                    measured.await(30, TimeUnit.SECONDS);
                    pool.free(a);
                    return null;
                }));
            }
            allHold.await(30, TimeUnit.SECONDS);
            long committed = pool.committedBytes();
            measured.countDown();
            int arenas = Math.min(16, VirtualThreads.carriers());
            assertTrue(committed >= pool.config().firstChunkSize() && committed <= arenas * pool.config().firstChunkSize(),
                    () -> committed + " bytes committed for 64 KiB, " + arenas + " arenas at most: " + pool.stats().report());
            for (Future<?> future : futures) {
                future.get();
            }
        });
        assertEquals(0, pool.requestedBytes());
        pool.close();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * A virtual thread whose shared cache another thread holds takes the next
     * one free instead of going past every cache to an arena: with the first
     * arena's cache held (a virtual thread in the middle of its step on the
     * other carrier), 32 virtual threads, one after the other, each allocate
     * through the second arena's cache, whatever their thread ids; with both
     * held, they go past the caches and still get their memory. Each
     * allocation is counted once, and all of it comes back. (Run one at a
     * time: virtual threads running together also find the second cache
     * taken, by each other, and then go past both, as they should. No
     * scheduler: a decay could hold a cache's lock for a moment.)
     */
    @Test
    void aVirtualThreadWhoseSharedCacheIsTakenUsesTheNextOneFree() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        assumeTrue(VirtualThreads.carriers() >= 2, "one carrier thread: virtual threads of a small pool use one arena");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(2).scheduler((task, period) -> () -> { }).build());
        SharedCache first = pool.threadCaches.shared(0);
        SharedCache second = pool.threadCaches.shared(1);
        List<Allocation> elsewhere = new ArrayList<>();
        List<Allocation> past = new ArrayList<>();
        onVirtualThreads(virtual -> {
            assertTrue(first.lockShared());
            try {
                elsewhere.addAll(allocateOneByOne(virtual, pool, 32));
                assertTrue(second.lockShared());
                try {
                    past.addAll(allocateOneByOne(virtual, pool, 8));
                } finally {
                    second.unlockShared();
                }
            } finally {
                first.unlockShared();
            }
        });
        for (Allocation a : elsewhere) {
            assertSame(second, a.owner, "counted on the cache that was free");
            assertSame(second.arena, a.chunk.arena, "memory of the free cache's arena");
        }
        for (Allocation a : past) {
            assertTrue(a.owner == first || a.owner == second, "counted on a shared cache");
        }
        assertEquals(40L * 1024, pool.requestedBytes());
        elsewhere.forEach(pool::free);
        past.forEach(pool::free);
        assertEquals(0, pool.requestedBytes());
        pool.close();
        assertEquals(0, pool.committedBytes());
    }

    /** {@code threads} virtual threads, one after the other, each allocating 1 KiB; their allocations. */
    private static List<Allocation> allocateOneByOne(ExecutorService virtual, MemoryPool pool, int threads) throws Exception {
        List<Allocation> made = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            made.add(virtual.submit(() -> {
                Allocation a = new Allocation();
                pool.allocate(1024, a);
                return a;
            }).get());
        }
        return made;
    }

    /**
     * The two ways a shared cache counts, forced: while the test holds the
     * cache's lock, virtual threads allocate past it and count with atomic
     * adds; the releases made later hold the lock and count with plain
     * writes. Both land in the same figures, exactly.
     */
    @Test
    void aSharedCacheCountsExactlyWhetherItsLockIsFreeOrTaken() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
        SharedCache shared = pool.threadCaches.shared(0);
        List<Allocation> held = java.util.Collections.synchronizedList(new ArrayList<>());
        onVirtualThreads(virtual -> {
            long requested = 0;
            assertTrue(shared.lockShared());
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int i = 0; i < 200; i++) {
                    int size = 64 + i * 13;
                    requested += size;
                    futures.add(virtual.submit(() -> {
                        Allocation a = pool.general.allocateStashed(pool.defaultCategory(), size, false);
                        Allocation passing = new Allocation();
                        pool.allocate(size, passing);
                        pool.free(passing); // the lock is taken: counted atomically, freed through the arena's queue
                        held.add(a);
                    }));
                }
                for (Future<?> future : futures) {
                    future.get();
                }
                PoolStats stats = pool.stats();
                assertEquals(requested, stats.requestedBytes(), stats::report);
                assertEquals(200, stats.liveAllocations());
            } finally {
                shared.unlockShared();
            }
            List<Future<?>> releases = new ArrayList<>();
            for (Allocation a : held) {
                releases.add(virtual.submit(() -> pool.free(a))); // the lock is free: counted under it
            }
            for (Future<?> release : releases) {
                release.get();
            }
        });
        PoolStats stats = pool.stats();
        assertNothingLive(stats);
        assertEquals(400, stats.allocations());
        pool.trim();
        assertEquals(0, pool.committedBytes(), "everything came back");
        pool.close();
    }

    /**
     * An allocation a virtual thread makes while the test holds the shared
     * cache's lock: past the cache, from the arena, counted with atomic adds.
     */
    private static Allocation allocatePastTheLock(ExecutorService virtual, MemoryPool pool, SharedCache shared,
                                                  Category category, int size) throws Exception {
        assertTrue(shared.lockShared());
        try {
            return virtual.submit(() -> pool.general.allocateStashed(category, size, false)).get();
        } finally {
            shared.unlockShared();
        }
    }

    /** Allocations and releases enough for two sweeps of a cache. */
    private static final long SWEPT_ROUNDS = 2L * ThreadCache.SWEEP_INTERVAL + 7;

    /**
     * A virtual thread's holder, released with the shared cache's lock free,
     * is kept there with its memory, and the next virtual thread's allocation
     * of that size takes the same holder and the same bytes; while the lock is
     * taken, the release goes past the cache and the next allocation gets
     * other memory in another holder. Counts stay exact either way.
     */
    @Test
    void aVirtualThreadsHolderServesTheNextVirtualThreadWithItsMemory() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
        SharedCache shared = pool.threadCaches.shared(0);
        Category category = pool.defaultCategory();
        onVirtualThreads(virtual -> {
            for (int size : new int[] {1000, 100_000, 600_000}) { // a class's stack, the large slot, the dedicated slot
                Allocation first = virtual.submit(() -> pool.general.allocateStashed(category, size, false)).get();
                long address = first.address();
                virtual.submit(() -> pool.free(first)).get();
                assertFalse(first.isLive());
                assertTrue(first.kept, "the released holder was not kept filled in the shared cache");
                Allocation second = virtual.submit(() -> pool.general.allocateStashed(category, size, false)).get();
                assertSame(first, second, "the kept holder was not handed to the next virtual thread");
                assertEquals(address, second.address());
                assertEquals(size, pool.stats().requestedBytes());

                assertTrue(shared.lockShared());
                Allocation third;
                try {
                    virtual.submit(() -> pool.free(second)).get(); // past the busy cache: not kept
                    third = virtual.submit(() -> pool.general.allocateStashed(category, size, false)).get();
                } finally {
                    shared.unlockShared();
                }
                assertFalse(second.kept, "kept while another thread held the cache");
                assertNotSame(second, third);
                assertTrue(third.isLive());
                assertEquals(size, pool.stats().requestedBytes());
                virtual.submit(() -> pool.free(third)).get();
                assertEquals(0, pool.stats().requestedBytes());
            }
            // past sweeps of the shared cache, which turn its kept holders back into plain entries; between
            // the passes, a release counted without an allocation (made past the busy cache) shifts the
            // sweeps from allocations to releases or back
            for (int pass = 0; pass < 2; pass++) {
                virtual.submit(() -> {
                    for (long i = 0; i < SWEPT_ROUNDS; i++) {
                        pool.free(pool.general.allocateStashed(category, 64 + (int) (i % 3) * 1000, false));
                    }
                    return null;
                }).get();
                Allocation odd = allocatePastTheLock(virtual, pool, shared, category, 64);
                virtual.submit(() -> pool.free(odd)).get();
            }
        });
        PoolStats stats = pool.stats();
        assertNothingLive(stats);
        assertEquals(9 + 2 * (SWEPT_ROUNDS + 1), stats.allocations());
        pool.trim();
        assertEquals(0, pool.committedBytes(), "kept holders' memory came back at the trim");
        pool.close();
    }

    /**
     * A virtual thread's allocation in a category the shared cache had not
     * counted under its lock yet (a dedicated region and a class, each
     * allocated past the busy lock, so counted with atomic adds), released
     * under the lock on another virtual thread: the count goes to the lock
     * holder's array, which must make room for the category, and lands
     * exactly once. A third category's region, allocated and released with
     * the lock free, is counted under it both times.
     */
    @Test
    void aReleaseCountedUnderTheSharedLockMakesRoomForItsCategory() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
        SharedCache shared = pool.threadCaches.shared(0);
        onVirtualThreads(virtual -> {
            Allocation dedicated = allocatePastTheLock(virtual, pool, shared, pool.category("regions"), 600_000);
            virtual.submit(() -> pool.free(dedicated)).get();
            assertTrue(dedicated.kept, "the region was not kept in the shared cache's slot");

            Allocation small = allocatePastTheLock(virtual, pool, shared, pool.category("past_the_lock"), 1000);
            virtual.submit(() -> pool.free(small)).get();

            Category locked = pool.category("under_the_lock");
            Allocation region = virtual.submit(() -> pool.general.allocateStashed(locked, 700_000, false)).get();
            assertEquals(700_000, pool.stats().category("under_the_lock").requested());
            virtual.submit(() -> pool.free(region)).get();
        });
        PoolStats stats = pool.stats();
        assertNothingLive(stats);
        for (String name : new String[] {"regions", "past_the_lock", "under_the_lock"}) {
            assertEquals(0, stats.category(name).requested(), stats::report);
            assertEquals(0, stats.category(name).liveBuffers(), stats::report);
        }
        assertEquals(3, stats.allocations());
        pool.close();
    }

    /**
     * A virtual thread's holder in a category with a quota is never kept
     * filled: its release, one step under the shared cache's lock, counts it,
     * caches its memory in the class's stack, stashes the cleared holder and
     * gives the quota its bytes back, so the next virtual thread fits under
     * the quota again, in the same holder and the same memory.
     */
    @Test
    void aVirtualThreadsReleaseInAQuotaCategoryCachesItsMemoryAndStashesItsHolder() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        int size = 1024;
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).quota("capped", 4 * size).build());
        SharedCache shared = pool.threadCaches.shared(0);
        Category capped = pool.category("capped");
        onVirtualThreads(virtual -> {
            for (int round = 0; round < 3; round++) {
                List<Allocation> held = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    held.add(virtual.submit(() -> pool.general.allocateStashed(capped, size, false)).get());
                }
                assertEquals(4L * size, capped.trackedReserved.get());
                assertThrows(MemoryLimitException.class,
                        () -> unwrap(virtual.submit(() -> pool.general.allocateStashed(capped, size, false))));
                int stashedBefore = shared.stash.size();
                long[] addresses = new long[held.size()];
                for (int i = 0; i < held.size(); i++) {
                    Allocation a = held.get(i);
                    addresses[i] = a.address();
                    virtual.submit(() -> pool.free(a)).get();
                    assertFalse(a.kept, "a quota category's holder was kept filled");
                    assertFalse(a.isLive());
                }
                assertEquals(0, capped.trackedReserved.get(), "the quota did not get its bytes back");
                assertEquals(stashedBefore + held.size(), shared.stash.size(), "the cleared holders were not stashed");
                assertTrue(shared.stackFill(SizeClasses.indexOf(size))[0] >= held.size(), "the memory was not cached");
                // the stash and the stack are both last in, first out: the last holder released comes back first,
                // with the last memory released
                Allocation next = virtual.submit(() -> pool.general.allocateStashed(capped, size, false)).get();
                assertSame(held.get(held.size() - 1), next);
                assertEquals(addresses[held.size() - 1], next.address());
                virtual.submit(() -> pool.free(next)).get();
            }
        });
        PoolStats stats = pool.stats();
        assertNothingLive(stats);
        assertEquals(15, stats.allocations());
        pool.close();
        assertEquals(0, pool.committedBytes(), "the closed pool kept memory the shared cache had cached");
    }

    /**
     * A virtual thread's allocation that finds no kept holder of its size
     * takes a blank holder from the shared cache's stash (here one a quota
     * category's release left there) rather than making one.
     */
    @Test
    void aVirtualThreadWithNoKeptHolderTakesAStashedBlankOne() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).quota("capped", 1 << 20).build());
        SharedCache shared = pool.threadCaches.shared(0);
        Category capped = pool.category("capped");
        onVirtualThreads(virtual -> {
            Allocation quoted = virtual.submit(() -> pool.general.allocateStashed(capped, 1000, false)).get();
            virtual.submit(() -> pool.free(quoted)).get();
            assertEquals(1, shared.stash.size());
            Allocation other = virtual.submit(() -> pool.general.allocateStashed(pool.defaultCategory(), 5000, false)).get();
            assertSame(quoted, other, "a new holder was made while the stash had one");
            assertEquals(0, shared.stash.size());
            assertTrue(other.isLive());
            assertEquals(5000, other.requestedBytes());
            virtual.submit(() -> pool.free(other)).get();
            assertTrue(other.kept, "a default-category holder is kept filled");
        });
        assertNothingLive(pool.stats());
        pool.close();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * A virtual thread that holds several dedicated regions at once: the
     * shared cache keeps each released one filled, in its slot and then among
     * its extra regions, and the next burst takes the same holders with the
     * same memory. Past those, a region goes back to the pool's idle regions
     * and its cleared holder to the shared stash, so that no holder is made
     * again. The statistics count the kept regions as parked, not live, and
     * a trim gives them all back.
     */
    @Test
    void aVirtualThreadsRegionsAreKeptFilledBeyondTheSlotAndTheirHoldersStashedPastThat() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
        SharedCache shared = pool.threadCaches.shared(0);
        Category category = pool.defaultCategory();
        int size = 1 << 20;
        int kept = 1 + LargeSlots.SHARED_EXTRA_REGIONS;
        onVirtualThreads(virtual -> {
            List<Allocation> first = virtual.submit(() -> burst(pool, category, size, kept)).get();
            assertTrue(first.stream().allMatch(a -> a.kept), "a region was not kept filled");
            long[] addresses = first.stream().mapToLong(Allocation::address).sorted().toArray();
            assertEquals(kept, shared.parkedRegions()[0]);
            assertEquals((long) kept * size, shared.parkedRegions()[1]);
            assertNothingLive(pool.stats());

            List<Allocation> second = virtual.submit(() -> burst(pool, category, size, kept)).get();
            assertEquals(new java.util.HashSet<>(first), new java.util.HashSet<>(second), "new holders were made");
            assertArrayEquals(addresses, second.stream().mapToLong(Allocation::address).sorted().toArray());

            List<Allocation> third = virtual.submit(() -> burst(pool, category, size, kept + 2)).get();
            assertEquals(kept, third.stream().filter(a -> a.kept).count());
            assertEquals(2, shared.stash.size(), "the holders of the regions past the kept ones were not stashed");
            assertEquals(kept, shared.parkedRegions()[0]);
            PoolStats stats = pool.stats();
            assertNothingLive(stats);
            assertEquals(3L * kept + 2, stats.allocations());

            shared.requestFlush(); // as a trim, a close or a compaction asks while a thread holds the lock
            Allocation fresh = virtual.submit(() -> pool.general.allocateStashed(category, size, false)).get();
            // the lock's next holder makes the pending flush (at its unlock) before anything is handed out
            assertEquals(0, shared.parkedRegions()[0], "a kept region was left parked, or handed out, while a flush was pending");
            virtual.submit(() -> pool.free(fresh)).get();
        });
        pool.trim();
        assertEquals(0, shared.parkedRegions()[0], "a trim left regions in the shared cache");
        assertEquals(0, pool.committedBytes(), "a trim left memory committed");
        pool.close();
    }

    /** {@code count} allocations of {@code size} held at once, each written to, then released oldest first. */
    static List<Allocation> burst(MemoryPool pool, Category category, int size, int count) {
        List<Allocation> held = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Allocation a = pool.general.allocateStashed(category, size, false);
            a.buffer().putInt(size - 4, i);
            held.add(a);
        }
        for (Allocation a : held) {
            pool.free(a);
        }
        return held;
    }

    /**
     * Virtual threads release their buffers after the pool closed, some with
     * the shared cache free and some while another thread holds its lock:
     * nothing is cached or kept, and the last release leaves the pool with
     * nothing committed.
     */
    @Test
    void virtualThreadsReleasingIntoAClosedPoolLeaveNothingCommitted() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
        SharedCache shared = pool.threadCaches.shared(0);
        Category category = pool.defaultCategory();
        List<Allocation> held = new ArrayList<>();
        onVirtualThreads(virtual -> {
            for (int size : new int[] {64, 1000, 5000, 100_000, 600_000, 3_000_000}) {
                for (int i = 0; i < 4; i++) {
                    held.add(virtual.submit(() -> pool.general.allocateStashed(category, size, false)).get());
                    Allocation plain = new Allocation();
                    virtual.submit(() -> pool.allocate(size, plain)).get();
                    held.add(plain);
                }
            }
            pool.close();
            assertTrue(pool.committedBytes() > 0);
            for (int i = 0; i < held.size(); i++) {
                Allocation a = held.get(i);
                if (i % 3 == 0) {
                    assertTrue(shared.lockShared());
                    try {
                        virtual.submit(() -> pool.free(a)).get(); // past the busy cache
                    } finally {
                        shared.unlockShared();
                    }
                } else {
                    virtual.submit(() -> pool.free(a)).get();
                }
                assertFalse(a.kept, "kept in a closed pool");
            }
        });
        PoolStats stats = pool.stats();
        assertNothingLive(stats);
        assertEquals(0, pool.committedBytes(), "a closed pool kept memory after its last release");
    }

    /** The value of a finished task, or its failure's cause thrown. */
    private static <T> T unwrap(Future<T> future) throws Throwable {
        try {
            return future.get();
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause();
        }
    }

    /**
     * Many virtual threads on one arena's shared cache allocate stashed
     * holders of every kind of size (a class's stack, the large slot, the
     * dedicated slot, and above every slot), write a pattern of their own into
     * each, and check it before releasing, half of the releases on a platform
     * thread: no holder is handed out twice while live (the patterns would
     * clash), and the counts end exact.
     */
    @Test
    void virtualThreadsSharingACacheNeverShareMemory() throws Exception {
        assumeTrue(VirtualThreads.SUPPORTED, "virtual threads need Java 21 or later");
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build());
        Category category = pool.defaultCategory();
        int[] sizes = {64, 1000, 4097, 100_000, 600_000, 2 << 20};
        int threads = 16;
        int rounds = 300;
        java.util.concurrent.BlockingQueue<Allocation> toPlatform = new java.util.concurrent.LinkedBlockingQueue<>();
        java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        Thread platform = new Thread(() -> {
            try {
                for (int done = 0; done < threads * rounds / 2; done++) {
                    pool.free(toPlatform.take());
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        platform.start();
        onVirtualThreads(virtual -> {
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int seed = t;
                futures.add(virtual.submit(() -> {
                    java.util.Random random = new java.util.Random(seed);
                    start.await(30, TimeUnit.SECONDS);
                    for (int round = 0; round < rounds; round++) {
                        Allocation a = pool.general.allocateStashed(category, sizes[random.nextInt(sizes.length)], false);
                        long stamp = ((long) seed << 32) | round;
                        java.nio.ByteBuffer bytes = a.buffer();
                        bytes.putLong(0, stamp).putLong(bytes.capacity() - 8, stamp);
                        Thread.yield(); // let another virtual thread of the carrier run while this one holds memory
                        assertEquals(stamp, bytes.getLong(0), "another allocation wrote into this one");
                        assertEquals(stamp, bytes.getLong(bytes.capacity() - 8), "another allocation wrote into this one");
                        if ((round & 1) == 0) {
                            pool.free(a);
                        } else {
                            toPlatform.add(a);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> future : futures) {
                future.get(60, TimeUnit.SECONDS);
            }
        });
        platform.join(30_000);
        assertFalse(platform.isAlive());
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
        PoolStats stats = pool.stats();
        assertNothingLive(stats);
        assertEquals((long) threads * rounds, stats.allocations());
        pool.trim();
        assertEquals(0, pool.committedBytes(), "everything came back");
        pool.close();
    }

    @Test
    void aPlatformThreadIsNotVirtual() {
        assertFalse(VirtualThreads.isVirtual(Thread.currentThread()));
    }

    /** No live allocation left, and none of their bytes counted as requested or reserved. */
    private static void assertNothingLive(PoolStats stats) {
        assertEquals(0, stats.liveAllocations(), stats::report);
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
    }

    /** What a test does with an executor that starts a virtual thread per task. */
    interface OnVirtualThreads {
        void run(ExecutorService virtual) throws Exception;
    }

    /**
     * Runs {@code body} with an executor that starts a virtual thread per task
     * ({@code Executors.newVirtualThreadPerTaskExecutor()}, looked up because
     * the tests compile for Java 17), then shuts it down and waits for its
     * tasks; the caller has assumed virtual threads are supported.
     */
    static void onVirtualThreads(OnVirtualThreads body) throws Exception {
        Method factory = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService virtual = (ExecutorService) factory.invoke(null);
        try {
            body.run(virtual);
        } finally {
            virtual.shutdown();
            assertTrue(virtual.awaitTermination(30, TimeUnit.SECONDS));
        }
    }

    /**
     * Two live threads whose ids map to the same slot of the look-up by
     * thread id: the first takes the slot, the second finds its cache through
     * the thread-local, and each allocates and frees from its own cache with
     * exact counts; once the first has died and been reclaimed, a third
     * colliding thread takes the slot.
     */
    @Test
    void threadsWhoseIdsCollideEachFindTheirOwnCache() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(2).arenaSpreadBytes(0).chunkSize(64 * 1024).build());
        CyclicBarrier bothAllocated = new CyclicBarrier(3);
        CyclicBarrier checked = new CyclicBarrier(3);
        CountDownLatch firstBound = new CountDownLatch(1);
        ThreadCache[] seen = new ThreadCache[2];
        Runnable[] work = new Runnable[2];
        for (int i = 0; i < 2; i++) {
            int index = i;
            work[i] = () -> {
                Allocation a = new Allocation();
                pool.allocate(100 + index, a);
                firstBound.countDown(); // the second thread starts once the first has bound
                seen[index] = pool.threadCaches.current();
                assertTrue(seen[index].isOwnerThread(), "the cache found is the calling thread's own");
                ConcurrentTasks.await(bothAllocated, "a thread did not reach the barrier");
                ConcurrentTasks.await(checked, "a thread did not reach the barrier");
                pool.free(a);
                assertTrue(pool.threadCaches.current() == seen[index], "the same cache at every look-up");
            };
        }
        Thread first = new Thread(work[0]);
        Thread second = collidingWith(first, work[1]);
        first.start();
        ConcurrentTasks.await(firstBound, "the first thread did not allocate");
        second.start();
        ConcurrentTasks.await(bothAllocated, "a thread did not reach the barrier");
        assertTrue(seen[0] != seen[1], "two caches");
        assertTrue(pool.threadCaches.holdsIdSlot(first), "the first to bind takes the slot");
        assertFalse(pool.threadCaches.holdsIdSlot(second), "the second goes through the thread-local");
        assertEquals(201, pool.requestedBytes(), "each allocation counted once, by its own cache");
        ConcurrentTasks.await(checked, "a thread did not reach the barrier");
        first.join();
        second.join();
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.stats().liveAllocations()); // reclaims both dead threads' caches

        ThreadCache[] third = new ThreadCache[1];
        boolean[] slotted = new boolean[1];
        Thread late = collidingWith(first, () -> {
            Allocation a = new Allocation();
            pool.allocate(64, a);
            third[0] = pool.threadCaches.current();
            slotted[0] = pool.threadCaches.holdsIdSlot(Thread.currentThread());
            pool.free(a);
        });
        late.start();
        late.join();
        assertTrue(third[0] != seen[0] && third[0] != seen[1], "a cache of its own");
        assertTrue(slotted[0], "the dead first thread's slot went to the next thread that bound");
        assertEquals(0, pool.stats().liveAllocations());
        pool.close();
    }

    /**
     * {@code Thread.getId()} is not final: a subclass may report any id, the
     * same for two live threads. The id only picks a slot; the owner check
     * compares the thread itself, so the second thread must get a cache of its
     * own, never the first one's single-writer stacks.
     */
    @Test
    void twoLiveThreadsReportingTheSameIdGetCachesOfTheirOwn() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).arenaSpreadBytes(0).chunkSize(64 * 1024).build());
        ThreadCache[] seen = new ThreadCache[2];
        CountDownLatch firstBound = new CountDownLatch(1);
        CountDownLatch secondDone = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread first = new SameIdThread(() -> {
            Allocation a = new Allocation();
            pool.allocate(64, a);
            seen[0] = pool.threadCaches.current();
            firstBound.countDown();
            ConcurrentTasks.await(secondDone, "the second thread did not finish");
            pool.free(a);
        });
        Thread second = new SameIdThread(() -> {
            try {
                ConcurrentTasks.await(firstBound, "the first thread did not bind");
                Allocation a = new Allocation();
                pool.allocate(64, a);
                seen[1] = pool.threadCaches.current();
                pool.free(a);
            } catch (Throwable t) {
                failure.set(t);
            } finally {
                secondDone.countDown();
            }
        });
        first.start();
        second.start();
        first.join();
        second.join();
        assertNull(failure.get());
        assertNotSame(seen[0], seen[1], "the second thread was handed the first (live) thread's cache");
        assertEquals(0, pool.stats().liveAllocations());
        pool.close();
    }

    /** A legal {@code Thread} subclass whose {@code getId()} is not the JVM's id (a framework's worker number, say). */
    private static final class SameIdThread extends Thread {
        SameIdThread(Runnable task) {
            super(task);
        }

        @Override
        @SuppressWarnings("deprecation")
        public long getId() {
            return 7;
        }
    }

    /** A new (unstarted) thread running {@code task} whose id maps to the same slot as {@code other}'s. */
    @SuppressWarnings("deprecation") // Thread.getId, as the pool's look-up reads it on Java 17
    private static Thread collidingWith(Thread other, Runnable task) {
        while (true) {
            Thread thread = new Thread(task);
            if (((thread.getId() - other.getId()) & 255) == 0) {
                return thread;
            }
        }
    }

}
