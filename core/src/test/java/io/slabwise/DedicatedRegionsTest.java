package io.slabwise;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Requests above the dedicated threshold (an eighth of a chunk by default)
 * get regions of their own; released ones stay idle, up to a chunk's bytes,
 * for a request of their pages or up to an eighth fewer, and go back on
 * decay, trim, at the ceiling and on close.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DedicatedRegionsTest {

    private static final int CHUNK = MemoryPoolTest.CHUNK;
    private static final int PAGE = PoolConfig.PAGE_SIZE;
    /** 37 pages: above the default threshold of 128 KiB with 1 MiB chunks. */
    private static final int PAGES_37 = 37 * PAGE;

    private final ManualTime time = new ManualTime();

    private PoolConfig.Builder config() {
        return MemoryPoolTest.config().arenas(1).ticker(time).scheduler(time);
    }

    private static Allocation allocate(MemoryPool pool, int size) {
        Allocation a = new Allocation();
        assertTrue(pool.allocate(size, a));
        return a;
    }

    @Test
    void theThresholdIsAnEighthOfAChunkUnlessSetAndNeverBelowTheCachedSizes() {
        assertEquals(512 * 1024, PoolConfig.builder().build().dedicatedAbove());
        assertEquals(CHUNK / 8, PoolConfig.builder().chunkSize(CHUNK).build().dedicatedAbove());
        assertEquals(300_000, PoolConfig.builder().dedicatedAbove(300_000).build().dedicatedAbove());
        assertTrue(PoolConfig.builder().build().toString().contains("dedicatedAbove=524288"));

        MemoryPool pool = new MemoryPool(config().dedicatedAbove(PAGE).build());
        Allocation cached = allocate(pool, 64 * 1024); // a size thread caches keep: from a chunk all the same
        assertEquals(0, pool.stats().hugeAllocations());
        assertEquals(1, pool.stats().chunks());
        Allocation above = allocate(pool, 64 * 1024 + PAGE + 1);
        assertEquals(1, pool.stats().hugeAllocations(), "above the largest cached class: a region of its own");
        assertEquals(0, above.offset());
        pool.free(cached);
        pool.free(above);
        pool.close();
    }

    @Test
    void badThresholdsAreRefusedWithTheSettingNamed() {
        IllegalArgumentException low = assertThrows(IllegalArgumentException.class,
                () -> PoolConfig.builder().dedicatedAbove(PAGE - 1));
        assertTrue(low.getMessage().contains("dedicatedAbove") && low.getMessage().contains(String.valueOf(PAGE - 1)),
                low.getMessage());
        IllegalArgumentException high = assertThrows(IllegalArgumentException.class,
                () -> PoolConfig.builder().chunkSize(CHUNK).dedicatedAbove(CHUNK + 1).build());
        assertTrue(high.getMessage().contains("dedicatedAbove") && high.getMessage().contains("chunk size"),
                high.getMessage());
    }

    @Test
    void aReleasedRegionServesARequestOfItsPagesOrUpToAnEighthFewer() {
        MemoryPool pool = new MemoryPool(config().build());
        Allocation a = allocate(pool, PAGES_37 - 100);
        assertEquals(PAGES_37, a.reservedBytes());
        assertEquals(PAGES_37, pool.committedBytes(), "a region of its own, no chunk");
        assertEquals(0, pool.stats().chunks());
        long address = a.address();
        pool.free(a);
        assertEquals(PAGES_37, pool.committedBytes(), "kept idle");
        assertEquals(PAGES_37, pool.stats().hugeIdleBytes());
        assertEquals(0, pool.reservedBytes());

        Allocation same = allocate(pool, PAGES_37); // other bytes, the same pages
        assertEquals(address, same.address(), "the idle region is reused");
        assertEquals(PAGES_37, pool.committedBytes());
        assertEquals(0, pool.stats().hugeIdleBytes());
        pool.free(same);

        Allocation larger = allocate(pool, PAGES_37 + 1); // one page more: the idle region does not serve it
        assertNotEquals(address, larger.address());
        assertEquals(PAGES_37 + PAGES_37 + PAGE, pool.committedBytes());
        assertEquals(PAGES_37, pool.stats().hugeIdleBytes());
        Allocation tooSmall = allocate(pool, 32 * PAGE); // 5 pages fewer: more than an eighth of 32
        assertNotEquals(address, tooSmall.address());
        assertEquals(PAGES_37, pool.stats().hugeIdleBytes());
        Allocation smaller = allocate(pool, 33 * PAGE - 5); // 4 pages fewer: an eighth of 33, the idle region serves it
        assertEquals(address, smaller.address());
        assertEquals(PAGES_37, smaller.reservedBytes(), "it reserves the whole region");
        assertEquals(PAGES_37 + PAGE + 32 * PAGE + PAGES_37, pool.reservedBytes());
        assertEquals(PAGES_37 + PAGE + 32 * PAGE + PAGES_37, pool.committedBytes());
        pool.free(larger);
        pool.free(tooSmall);
        pool.free(smaller);
        assertEquals(0, pool.reservedBytes());
        assertEquals(3L * PAGES_37 - 5 * PAGE + PAGE, pool.stats().hugeIdleBytes(), "all three fit within a chunk's bytes");
        pool.trim();
        assertEquals(0, pool.committedBytes());
        assertEquals(0, pool.stats().hugeIdleBytes());
    }

    /**
     * The first region a thread releases goes into its own slot, the next
     * into the pool's recent cell, the others to the idle list, which keeps at
     * most a chunk's bytes, the oldest going back first. They serve in that
     * order, the list's newest first.
     */
    @Test
    void aThreadsSlotTheRecentCellThenIdleRegionsOfAtMostAChunkOfBytesTheOldestGoingBackFirst() {
        MemoryPool pool = new MemoryPool(config().build());
        List<Allocation> held = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            held.add(allocate(pool, PAGES_37));
        }
        List<Long> addresses = new ArrayList<>();
        for (Allocation a : held) {
            addresses.add(a.address());
            pool.free(a); // in order: the slot, the cell, then the list, whose first is its oldest
        }
        int listed = CHUNK / PAGES_37; // 3 regions of 37 pages fit in 128 pages: the fourth listed pushes out the first
        assertEquals((long) (2 + listed) * PAGES_37, pool.stats().hugeIdleBytes());
        assertEquals((long) (2 + listed) * PAGES_37, pool.committedBytes(), "the oldest listed one went back");
        assertEquals(0, pool.stats().hugeAllocations(), "parked regions are not live");
        assertEquals(0, pool.stats().hugeCommittedBytes());
        long[] expected = {addresses.get(0), addresses.get(1), addresses.get(5), addresses.get(4), addresses.get(3)};
        for (int i = 0; i < expected.length; i++) {
            Allocation again = allocate(pool, PAGES_37);
            assertEquals(expected[i], again.address(), "the slot, the cell, then the most recently listed");
            held.set(i, again);
        }
        assertEquals(0, pool.stats().hugeIdleBytes());
        assertEquals(5, pool.stats().hugeAllocations());
        Allocation fresh = allocate(pool, PAGES_37);
        for (long address : expected) {
            assertNotEquals(address, fresh.address(), "nothing idle is left: a new region");
        }
        for (int i = 0; i < expected.length; i++) {
            pool.free(held.get(i));
        }
        pool.free(fresh);
        pool.close();
        assertEquals(0, pool.committedBytes());
    }

    /** A reused region charges the category all its pages; where the quota has no room for them, a new region is taken. */
    @Test
    void aQuotaWithoutRoomForTheLargerIdleRegionGetsANewOneOfItsPages() {
        MemoryPool pool = new MemoryPool(config().quota("large", 60 * PAGE).build());
        Category large = pool.category("large");
        Allocation a = new Allocation();
        assertTrue(pool.allocate(large, 37 * PAGE, a));
        long idleAddress = a.address();
        pool.free(a);
        Allocation b = new Allocation();
        assertTrue(pool.allocate(large, 33 * PAGE, b));
        assertEquals(idleAddress, b.address(), "the quota has room for all 37 pages");
        assertEquals(37 * PAGE, pool.stats().category("large").reserved());
        pool.free(b);

        Allocation held = new Allocation();
        assertTrue(pool.allocate(large, 25 * PAGE, held)); // 37 pages are too many for the idle region to serve 25
        Allocation c = new Allocation();
        assertTrue(pool.allocate(large, 33 * PAGE, c)); // 25 + 33 fit the quota; 25 + 37 would not
        assertNotEquals(idleAddress, c.address(), "a new region of 33 pages, not the idle 37");
        assertEquals(33 * PAGE, c.reservedBytes());
        assertEquals(58 * PAGE, pool.stats().category("large").reserved());
        assertEquals(PAGES_37, pool.stats().hugeIdleBytes(), "the idle region was put back");
        pool.free(held);
        pool.free(c);
        pool.close();
    }

    @Test
    void regionsLargerThanAChunkAreNeverKeptIdle() {
        MemoryPool pool = new MemoryPool(config().build());
        Allocation huge = allocate(pool, CHUNK + 1);
        assertEquals(CHUNK + PAGE, pool.committedBytes());
        pool.free(huge);
        assertEquals(0, pool.committedBytes());
        assertEquals(0, pool.stats().hugeIdleBytes());
        pool.close();
    }

    /**
     * Listed regions decay from when they were listed, the recent cell's from
     * the first decay that found it there; a thread's slot, like the rest of
     * its cache, goes back on trim.
     */
    @Test
    void idleRegionsDecayAndGoBackOnTrim() {
        MemoryPool pool = new MemoryPool(config().idleChunkDecay(Duration.ofSeconds(10)).build());
        Allocation slotted = allocate(pool, PAGES_37);
        Allocation celled = allocate(pool, PAGES_37);
        Allocation listed = allocate(pool, PAGES_37);
        pool.free(slotted);
        pool.free(celled);
        pool.free(listed);
        time.runScheduled(); // the first decay to see the cell's region
        time.assertDecayEdge(Duration.ofSeconds(10), pool::committedBytes, 3L * PAGES_37, PAGES_37,
                "the cell's and the listed region");
        assertEquals(PAGES_37, pool.stats().hugeIdleBytes(), "the slot's");
        assertEquals(1, pool.trim());
        assertEquals(0, pool.committedBytes());
        pool.close();
    }

    /** A thread's slot serves only that thread: another one gets a region of its own meanwhile. */
    @Test
    void aSlotServesOnlyItsThread() throws InterruptedException {
        MemoryPool pool = new MemoryPool(config().build());
        Allocation mine = allocate(pool, PAGES_37);
        long slotted = mine.address();
        pool.free(mine);
        long[] other = new long[1];
        ConcurrentTasks.runConcurrently(List.of(() -> {
            Allocation theirs = allocate(pool, PAGES_37);
            other[0] = theirs.address();
            pool.free(theirs); // into that thread's slot; the thread then dies
        }));
        assertNotEquals(slotted, other[0]);
        Allocation again = allocate(pool, PAGES_37);
        assertEquals(slotted, again.address(), "still in this thread's slot");
        pool.free(again);
        pool.close();
        assertEquals(0, pool.committedBytes());
    }

    @Test
    void idleRegionsGoBackBeforeARefusalAtTheCeiling() {
        MemoryPool pool = new MemoryPool(config().maxMemory(CHUNK).build());
        pool.free(allocate(pool, 60 * PAGE));
        assertEquals(60 * PAGE, pool.committedBytes());
        Allocation other = allocate(pool, 70 * PAGE); // 60 + 70 pages exceed the 128 of the ceiling
        assertEquals(70 * PAGE, pool.committedBytes(), "the idle region went back to make room");
        assertEquals(0, pool.stats().hugeIdleBytes());
        pool.free(other);
        pool.close();
    }

    @Test
    void aClosedPoolKeepsNoIdleRegion() {
        MemoryPool pool = new MemoryPool(config().build());
        pool.free(allocate(pool, PAGES_37));
        Allocation live = allocate(pool, 20 * PAGE);
        pool.close();
        assertEquals(20 * PAGE, pool.committedBytes(), "close gave back the idle region");
        pool.free(live);
        assertEquals(0, pool.committedBytes(), "released after close: straight back");
    }

    /**
     * Threads release dedicated regions while another thread closes the
     * pool, each run releasing at a different point around the close (the
     * threads start together at a barrier): whatever the order, once every
     * buffer is released and the threads are gone, nothing is committed. A
     * region parked in the recent cell or listed after close() emptied them
     * would stay committed.
     */
    @Test
    void regionsReleasedAroundCloseAllGoBack() throws InterruptedException {
        for (int run = 0; run < 40; run++) {
            MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(2).build());
            int threads = 3;
            List<List<Allocation>> held = new ArrayList<>();
            CyclicBarrier start = new CyclicBarrier(threads + 1);
            List<Runnable> tasks = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                List<Allocation> mine = new ArrayList<>();
                held.add(mine);
                int skip = (run + t) % 5;
                tasks.add(() -> {
                    for (int i = 0; i < 6; i++) {
                        mine.add(allocate(pool, (20 + i) * PAGE));
                    }
                    ConcurrentTasks.await(start, "a worker did not reach the barrier");
                    for (int i = 0; i < skip; i++) {
                        Thread.onSpinWait(); // a different point around the close in each run
                    }
                    mine.forEach(pool::free);
                });
            }
            int closeSkip = run % 7;
            tasks.add(() -> {
                ConcurrentTasks.await(start, "a worker did not reach the barrier");
                for (int i = 0; i < closeSkip; i++) {
                    Thread.onSpinWait();
                }
                pool.close();
            });
            ConcurrentTasks.runConcurrently(tasks);
            pool.stats(); // reclaims the dead workers' caches, their slots included
            assertEquals(0, pool.committedBytes(), "run " + run + ": " + pool.stats().summary());
        }
    }

    @Test
    void resizeInPlaceNeverCrossesTheThreshold() {
        MemoryPool pool = new MemoryPool(config().build());
        Allocation region = allocate(pool, PAGES_37);
        assertTrue(pool.resizeInPlace(region, PAGES_37 - PAGE + 1), "the same pages");
        assertTrue(pool.resizeInPlace(region, 33 * PAGE), "an eighth fewer: as a reused region would serve it");
        assertEquals(PAGES_37, region.reservedBytes());
        assertFalse(pool.resizeInPlace(region, 32 * PAGE), "more than an eighth fewer: it must move");
        assertFalse(pool.resizeInPlace(region, PAGES_37 + 1), "more pages: it must move");
        assertFalse(pool.resizeInPlace(region, CHUNK / 8), "a run would serve it: it must move");
        Allocation run = allocate(pool, CHUNK / 8); // 16 pages, a run
        assertEquals(1, pool.stats().hugeAllocations(), "one region, one run");
        assertFalse(pool.resizeInPlace(run, CHUNK / 8 + 1), "one byte more needs a region of its own");
        pool.free(region);
        pool.free(run);
        pool.close();
    }

    /**
     * Threads release and allocate regions of a few sizes in lockstep, so
     * that every round hands idle regions from one thread to another: no two
     * live allocations ever share a region (each stamps its first and last
     * bytes and finds them intact at its release), and the accounting ends
     * exact, with at most a chunk's bytes idle.
     */
    @Test
    void regionsPassBetweenThreadsWithoutEverBeingSharedAndTheAccountingStaysExact()
            throws InterruptedException {
        MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(2).build());
        int threads = 4;
        int rounds = 300;
        int[] pages = {17, 17, 20, 37, 37, 64};
        Set<Long> liveAddresses = new HashSet<>();
        CyclicBarrier allocated = new CyclicBarrier(threads, () -> {
            synchronized (liveAddresses) {
                liveAddresses.clear();
            }
        });
        List<Runnable> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long stamp = 0x5A5A_0000_0000L | t;
            Random random = new Random(31 + t);
            workers.add(() -> {
                Allocation held = null;
                for (int round = 0; round < rounds; round++) {
                    if (held != null) {
                        assertEquals(stamp, held.chunkMemory().getLong(held.offset()), "first bytes intact");
                        assertEquals(stamp, held.chunkMemory().getLong(held.offset() + held.reservedBytes() - 8),
                                "last bytes intact");
                        pool.free(held);
                    }
                    held = allocate(pool, pages[random.nextInt(pages.length)] * PAGE - random.nextInt(PAGE));
                    held.chunkMemory().putLong(held.offset(), stamp);
                    held.chunkMemory().putLong(held.offset() + held.reservedBytes() - 8, stamp);
                    synchronized (liveAddresses) {
                        assertTrue(liveAddresses.add(held.address()), "a region live twice: " + held);
                    }
                    ConcurrentTasks.await(allocated, "a worker did not reach the barrier");
                }
                pool.free(held);
            });
        }
        ConcurrentTasks.runConcurrently(workers);
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes());
        assertEquals(0, stats.reservedBytes());
        assertEquals(0, stats.hugeAllocations());
        assertEquals(stats.hugeIdleBytes(), stats.committedBytes(), "only idle regions are left");
        // the workers died: their slots went to the cell and the list when the statistics reclaimed their caches
        assertTrue(stats.hugeIdleBytes() <= 2L * CHUNK, "a chunk's bytes listed and the cell's: " + stats.hugeIdleBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes());
        pool.close();
    }

    /**
     * A chunk source whose {@code release} throws an {@link Error} while the
     * pool gives back several idle dedicated regions in one go (a trim, or the
     * oldest listed regions pushed out by a larger one): the Error reaches the
     * caller, as {@link ChunkSource#release} says, and the other regions of the
     * batch go back all the same: they have left the idle list, so one not
     * given back there would stay committed for good, even after close.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class ReleaseError {

        /** Direct memory whose next {@link #failures} releases free the region and then throw an {@link OutOfMemoryError}. */
        private static final class ErrorOnRelease implements ChunkSource {
            final AtomicInteger failures = new AtomicInteger();
            final Set<NativeRegion> outstanding = ConcurrentHashMap.newKeySet();

            @Override
            public NativeRegion allocate(int size) {
                NativeRegion region = ChunkSource.direct().allocate(size);
                outstanding.add(region);
                return region;
            }

            @Override
            public void release(NativeRegion region) {
                if (!outstanding.remove(region)) {
                    throw new AssertionError("released twice, or never taken");
                }
                ChunkSource.direct().release(region);
                if (failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    throw new OutOfMemoryError("release failed (test)");
                }
            }
        }

        private static MemoryPool pool(ErrorOnRelease source) {
            return new MemoryPool(MemoryPoolTest.config().arenas(1).chunkSource(source).build());
        }

        private static List<Allocation> allocate(MemoryPool pool, int count, int size) {
            List<Allocation> held = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                Allocation a = new Allocation();
                assertTrue(pool.allocate(size, a));
                held.add(a);
            }
            return held;
        }

        /** A trim gives back the recent cell's region and three listed ones; the first release throws. */
        @Test
        void aTrimGivesBackTheRestOfItsIdleRegionsPastAnError() {
            ErrorOnRelease source = new ErrorOnRelease();
            MemoryPool pool = pool(source);
            allocate(pool, 4, PAGES_37).forEach(pool::free); // the thread's slot, the recent cell, two listed
            assertEquals(4, source.outstanding.size());
            source.failures.set(1);
            assertThrows(OutOfMemoryError.class, pool::trim); // the slot's region is listed, then the batch goes back
            assertEquals(0, source.outstanding.size(), "every idle region went back to the source");
            assertEquals(0, pool.committedBytes());
            pool.close();
            assertEquals(0, pool.committedBytes());
        }

        /** A chunk-sized region pushes the three listed ones out of the idle list; the first release throws. */
        @Test
        void regionsPushedOutOfTheIdleListGoBackPastAnError() {
            ErrorOnRelease source = new ErrorOnRelease();
            MemoryPool pool = pool(source);
            List<Allocation> held = allocate(pool, 5, PAGES_37);
            Allocation whole = allocate(pool, 1, CHUNK).get(0); // a dedicated region of a chunk's bytes: it may stay idle
            held.forEach(pool::free); // the thread's slot, the recent cell, three listed (111 of the list's 128 pages)
            source.failures.set(1);
            assertThrows(OutOfMemoryError.class, () -> pool.free(whole)); // listed, it pushes the three out
            assertEquals(3, source.outstanding.size(), "the slot's, the cell's and the chunk-sized region stay idle");
            assertEquals(2L * PAGES_37 + CHUNK, pool.committedBytes());
            pool.close();
            assertEquals(0, pool.committedBytes());
            assertTrue(source.outstanding.isEmpty());
        }
    }
}
