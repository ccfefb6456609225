package io.slabwise;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The thread cache's holders behind {@link MemoryPool#allocateStashed}: the
 * stash of blank ones, and the ones kept filled with the memory they released
 * for the thread's next allocation of their size class.
 */
@Timeout(60)
class HolderStashTest {

    private final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).build());

    @AfterEach
    void close() {
        assertEquals(0, pool.stats().liveAllocations());
        pool.close();
    }

    private ThreadCache own() {
        return pool.threadCaches.own();
    }

    @Test
    void aHolderFreedOnItsThreadServesTheNextAllocationOfItsClassWithItsMemory() {
        Allocation first = pool.general.allocateStashed(pool.defaultCategory(), 100, false);
        assertTrue(first.isLive());
        assertSame(own(), first.owner);
        int offset = first.offset();
        long address = first.address();
        pool.free(first);
        assertFalse(first.isLive(), "kept with its memory, but not live");
        assertThrows(IllegalStateException.class, () -> pool.free(first), "a double free of a kept holder throws");
        assertThrows(IllegalStateException.class, first::buffer);
        assertEquals(0, own().stash.size(), "kept filled, not stashed blank");
        long cached = pool.stats().cachedBytes(); // the kept memory, and the rest of the first refill's batch

        Allocation second = pool.general.allocateStashed(pool.defaultCategory(), 97, false); // same class as 100
        assertSame(first, second);
        assertTrue(second.isLive());
        assertEquals(offset, second.offset());
        assertEquals(address, second.address());
        assertEquals(97, second.requestedBytes());
        PoolStats stats = pool.stats();
        assertEquals(97, stats.requestedBytes(), stats::report);
        assertEquals(second.reservedBytes(), stats.reservedBytes());
        assertEquals(1, stats.liveAllocations());
        assertEquals(cached - first.reservedBytes(), stats.cachedBytes());
        pool.free(second);
        assertThrows(IllegalStateException.class, () -> pool.free(second), "a double free still throws");
    }

    @Test
    void aKeptHolderTakesTheCategoryOfItsNextAllocation() {
        Category logs = pool.category("logs");
        Category blocks = pool.category("blocks");
        Allocation a = pool.general.allocateStashed(logs, 700, false);
        pool.free(a);
        Allocation b = pool.general.allocateStashed(blocks, 700, false);
        assertSame(a, b);
        assertSame(blocks, b.category());
        PoolStats stats = pool.stats();
        assertEquals(0, stats.category("logs").requested(), stats::report);
        assertEquals(0, stats.category("logs").liveBuffers());
        assertEquals(700, stats.category("blocks").requested());
        assertEquals(1, stats.category("blocks").liveBuffers());
        pool.free(b);
    }

    @Test
    void anotherClassTakesABlankHolderAndAFlushTurnsKeptHoldersBlank() {
        Allocation small = pool.general.allocateStashed(pool.defaultCategory(), 100, false);
        pool.free(small);
        Allocation other = pool.general.allocateStashed(pool.defaultCategory(), 5000, false);
        assertNotSame(small, other, "the kept holder waits for its own class");
        pool.free(other);
        assertTrue(pool.stats().cachedBytes() >= small.reservedBytes() + other.reservedBytes());
        own().flush();
        assertEquals(0, pool.stats().cachedBytes(), "a flush gives kept memory back to the arena");
        assertEquals(2, own().stash.size(), "and keeps the holders, blank");
        assertFalse(small.isLive());
        assertEquals(0, small.requestedBytes());
    }

    /**
     * Above the cached sizes (64 KiB) and up to the dedicated threshold (128
     * KiB with 1 MiB chunks), a run is fitted to whole pages; released on its
     * thread, its holder stays filled in the large slot for the next request
     * of the same pages, which takes it as it is.
     */
    @Test
    void aFittedRunIsKeptFilledInTheLargeSlotForARequestOfItsPages() {
        Category logs = pool.category("logs");
        Allocation first = pool.general.allocateStashed(pool.defaultCategory(), 100_000, false); // 13 pages
        assertEquals(13 * PoolConfig.PAGE_SIZE, first.reservedBytes());
        long address = first.address();
        pool.free(first);
        assertFalse(first.isLive(), "kept with its memory, but not live");
        assertThrows(IllegalStateException.class, () -> pool.free(first), "a double free of a kept holder throws");
        assertEquals(0, own().stash.size(), "kept filled, not stashed blank");
        assertEquals(13 * PoolConfig.PAGE_SIZE, pool.stats().cachedBytes());

        Allocation other = pool.general.allocateStashed(pool.defaultCategory(), 90_000, false); // 11 pages: not its pages
        assertNotSame(first, other);
        pool.free(other); // the slot is taken: cleared, stashed, its run back to the cache's other ways

        Allocation second = pool.general.allocateStashed(logs, 99_000, false); // 13 pages too
        assertSame(first, second);
        assertTrue(second.isLive());
        assertEquals(address, second.address());
        assertSame(logs, second.category());
        PoolStats stats = pool.stats();
        assertEquals(99_000, stats.category("logs").requested(), stats::report);
        assertEquals(13 * PoolConfig.PAGE_SIZE, stats.category("logs").reserved());
        assertEquals(0, stats.category("network").requested());
        assertEquals(1, stats.liveAllocations());
        pool.free(second);

        own().flush();
        assertEquals(0, pool.stats().cachedBytes(), "a flush gives the kept run back");
        assertFalse(second.isLive());
        assertEquals(0, second.requestedBytes(), "and the holder goes blank");
    }

    /**
     * A dedicated region (above 128 KiB with 1 MiB chunks) released on its
     * thread stays filled in the thread's dedicated slot, still counted as
     * parked there, for the next request it fits (its pages or up to an
     * eighth fewer), which takes it whole.
     */
    @Test
    void aDedicatedRegionIsKeptFilledInTheSlotForARequestItFits() {
        Allocation first = pool.general.allocateStashed(pool.defaultCategory(), 200_000, false); // 25 pages
        assertEquals(1, pool.stats().hugeAllocations());
        assertEquals(25 * PoolConfig.PAGE_SIZE, first.reservedBytes());
        long address = first.address();
        pool.free(first);
        assertFalse(first.isLive(), "kept with its region, but not live");
        assertThrows(IllegalStateException.class, () -> pool.free(first), "a double free of a kept holder throws");
        assertEquals(0, own().stash.size());
        PoolStats parked = pool.stats();
        assertEquals(0, parked.hugeAllocations(), parked::report);
        assertEquals(0, parked.reservedBytes());
        assertEquals(25 * PoolConfig.PAGE_SIZE, parked.committedBytes() - parked.chunks() * (1L << 20), parked::report);

        Allocation second = pool.general.allocateStashed(pool.defaultCategory(), 190_000, false); // 24 pages: fits
        assertSame(first, second);
        assertEquals(address, second.address());
        assertEquals(25 * PoolConfig.PAGE_SIZE, second.reservedBytes(), "the whole region");
        PoolStats stats = pool.stats();
        assertEquals(1, stats.hugeAllocations(), stats::report);
        assertEquals(190_000, stats.requestedBytes());
        assertEquals(25 * PoolConfig.PAGE_SIZE, stats.reservedBytes());
        pool.free(second);

        Allocation larger = pool.general.allocateStashed(pool.defaultCategory(), 300_000, false); // does not fit the kept one
        assertNotSame(first, larger);
        pool.free(larger);
        own().flush();
        assertFalse(first.isLive());
        assertEquals(0, first.requestedBytes(), "a flush turns the kept holder blank");
        assertEquals(0, pool.stats().hugeAllocations());
        pool.trim();
        assertEquals(0, pool.committedBytes(), "and its region went where a slotted one goes");
    }

    /** A request just above an unaligned dedicated threshold gets its region even if its pages match the kept run. */
    @Test
    void aKeptRunNeverServesARequestThatGetsADedicatedRegion() {
        MemoryPool unaligned = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).dedicatedAbove(100_000).build());
        try {
            Allocation run = unaligned.general.allocateStashed(unaligned.defaultCategory(), 100_000, false); // 13 pages
            assertEquals(0, unaligned.stats().hugeAllocations());
            unaligned.free(run);
            Allocation above = unaligned.general.allocateStashed(unaligned.defaultCategory(), 100_001, false); // 13 pages too
            assertNotSame(run, above);
            assertEquals(1, unaligned.stats().hugeAllocations(), "a region of its own");
            unaligned.free(above);
        } finally {
            unaligned.close();
        }
    }

    @Test
    void theStashAndTheKeptHoldersStayWithinTheirCapacities() {
        Allocation[] held = new Allocation[ClassStack.KEPT_LIMIT + HolderStash.CAPACITY + 3];
        for (int i = 0; i < held.length; i++) {
            held[i] = pool.general.allocateStashed(pool.defaultCategory(), 64, false);
        }
        for (Allocation a : held) {
            pool.free(a);
        }
        assertEquals(HolderStash.CAPACITY, own().stash.size());
        assertTrue(pool.stats().cachedBytes() >= (long) held.length * 64, "every release cached, kept or not");
        Allocation plain = new Allocation();
        pool.allocate(64, plain);
        pool.free(plain);
        assertEquals(HolderStash.CAPACITY, own().stash.size(), "plain holders never enter the stash");
        assertFalse(plain.isLive());
    }

    /** Holders kept filled count against the stack's capacity, so that turning them into entries always fits. */
    @Test
    void aPlainAllocationOfAClassWithKeptHoldersTakesThemAsEntries() {
        int size = 64 * 1024; // a page class: a small stack, so the capacity is reached
        List<Allocation> stashed = new ArrayList<>();
        for (int i = 0; i < ClassStack.KEPT_LIMIT; i++) {
            stashed.add(pool.general.allocateStashed(pool.defaultCategory(), size, false));
        }
        Set<Long> keptPlaces = new HashSet<>();
        for (Allocation a : stashed) {
            keptPlaces.add(place(a));
            pool.free(a);
        }
        List<Allocation> plain = new ArrayList<>();
        Set<Long> places = new HashSet<>();
        for (int i = 0; i < 40; i++) {
            Allocation a = new Allocation();
            pool.allocate(size, a);
            assertTrue(places.add(place(a)), "no memory handed out twice");
            plain.add(a);
        }
        assertTrue(places.containsAll(keptPlaces), "the kept memory was used first");
        for (Allocation a : plain) {
            pool.free(a);
        }
        for (int i = 0; i < 40; i++) {
            Allocation a = pool.general.allocateStashed(pool.defaultCategory(), size, false);
            pool.free(a);
        }
        int[] fill = own().stackFill(SizeClasses.indexOf(size));
        assertTrue(fill[0] <= fill[1], () -> fill[0] + " entries cached, capacity " + fill[1]);
        assertEquals((long) fill[0] * size, pool.stats().cachedBytes());
    }

    @Test
    void aCategoryWithAQuotaIsNeverKeptSoItsQuotaComesBackAtOnce() {
        MemoryPool limited = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).quota("capped", 4096).build());
        try {
            Category capped = limited.category("capped");
            Allocation a = limited.general.allocateStashed(capped, 4096, false);
            limited.free(a);
            assertEquals(0, capped.trackedReserved.get());
            assertEquals(1, limited.threadCaches.own().stash.size(), "cleared and stashed, not kept");
            Allocation b = limited.general.allocateStashed(capped, 4096, false);
            assertSame(a, b);
            assertEquals(4096, capped.trackedReserved.get());
            limited.free(b);
        } finally {
            limited.close();
        }
    }

    @Test
    void aClosedPoolKeepsNothing() {
        MemoryPool closing = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).build());
        Allocation a = closing.general.allocateStashed(closing.defaultCategory(), 100, false);
        closing.close();
        closing.free(a);
        assertEquals(0, closing.threadCaches.own() == null ? 0 : closing.threadCaches.own().cachedBytes());
        assertEquals(0, closing.committedBytes(), "the last release of a closed pool gives its chunk back");
    }

    /**
     * A holder freed on another thread is neither kept nor stashed there: it
     * goes back, cleared, to the cache that made it, whose next allocation
     * takes it once the stash is empty.
     */
    @Test
    void aHolderFreedOnAnotherThreadGoesBackToItsOwner() throws Exception {
        Allocation a = pool.general.allocateStashed(pool.defaultCategory(), 64, false);
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            int stashedThere = other.submit(() -> {
                pool.free(a);
                ThreadCache own = pool.threadCaches.own();
                return own == null ? 0 : own.stash.size();
            }).get();
            assertEquals(0, stashedThere);
        } finally {
            other.shutdown();
            assertTrue(other.awaitTermination(30, TimeUnit.SECONDS));
        }
        assertEquals(0, own().stash.size(), "not in the owner's stash: given back beside it");
        assertFalse(a.isLive());
        assertEquals(null, a.nextReturned);
        Allocation next = pool.general.allocateStashed(pool.defaultCategory(), 64, false);
        assertSame(a, next, "the owner's next allocation takes the holder given back");
        assertTrue(next.isLive());
        assertEquals(64, next.requested);
        Allocation fresh = pool.general.allocateStashed(pool.defaultCategory(), 64, false);
        assertNotSame(a, fresh, "one holder given back serves one allocation");
        pool.free(fresh);
        pool.free(next);
    }

    /**
     * Producers allocate with stashed holders and hand them to consumers that
     * free them on their own threads, so holders keep going back to the
     * producers while they allocate: a holder is never handed out while it
     * is live, none serves two allocations at once, and every count and byte
     * comes back.
     */
    @Test
    void holdersGoingBackToTheirOwnersUnderTrafficAreNeverHandedOutTwice() throws Exception {
        int producers = 2;
        int perProducer = 20_000;
        BlockingQueue<Allocation> handoff = new ArrayBlockingQueue<>(64);
        AtomicInteger producing = new AtomicInteger(producers);
        List<Runnable> tasks = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int seed = p;
            tasks.add(() -> {
                Random random = new Random(20261126L + seed);
                Set<Allocation> held = Collections.newSetFromMap(new IdentityHashMap<>());
                try {
                    for (int i = 0; i < perProducer; i++) {
                        Allocation a = pool.general.allocateStashed(pool.defaultCategory(), 16 + random.nextInt(2000), false);
                        assertTrue(a.isLive());
                        assertEquals(null, a.nextReturned, "a holder handed out still linked");
                        assertTrue(held.add(a), "a holder this thread still holds was handed out again");
                        if (random.nextInt(4) == 0) {
                            continue; // held a while, then freed on this thread: into the stash
                        }
                        held.remove(a);
                        assertTrue(handoff.offer(a, 10, TimeUnit.SECONDS), "no consumer took the handoff");
                        if (held.size() > 8) {
                            Allocation mine = held.iterator().next();
                            held.remove(mine);
                            pool.free(mine);
                        }
                    }
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                } finally {
                    held.forEach(pool::free);
                    producing.decrementAndGet();
                }
            });
        }
        for (int c = 0; c < 2; c++) {
            tasks.add(() -> {
                try {
                    while (producing.get() > 0 || !handoff.isEmpty()) {
                        Allocation a = handoff.poll(1, TimeUnit.MILLISECONDS);
                        if (a != null) {
                            pool.free(a); // on another thread: back to its producer
                        }
                    }
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });
        }
        ConcurrentTasks.runConcurrently(tasks);
        assertTrue(handoff.isEmpty());
        assertEquals(0, pool.requestedBytes(), pool.stats()::report);
        PoolStats stats = pool.stats();
        assertEquals(stats.allocations(), stats.releases());
    }

    /** Where an allocation's memory is: its chunk (one arena here, so ids are unique) and offset. */
    private static long place(Allocation a) {
        return ((long) a.chunk.id << 32) | a.offset();
    }

    /**
     * A seeded random mix of stashed and plain allocations and releases of a
     * few classes, flushes and sweeps, checked against a model after every
     * step: no memory is live twice, and the pool's counts and cached bytes
     * agree with what the test holds.
     */
    @Test
    void randomTrafficAgreesWithAModel() {
        Random random = new Random(20261125L);
        int[] sizes = {16, 64, 100, 1024, 4097, 65536};
        List<Allocation> live = new ArrayList<>();
        long requested = 0;
        for (int step = 0; step < 30_000; step++) {
            int action = random.nextInt(10);
            if (action < 5 && live.size() < 200) {
                int size = sizes[random.nextInt(sizes.length)] - random.nextInt(8);
                Allocation a;
                if (random.nextInt(4) == 0) {
                    a = new Allocation();
                    assertTrue(pool.allocate(size, a));
                } else {
                    a = pool.general.allocateStashed(pool.defaultCategory(), size, false);
                }
                for (Allocation other : live) {
                    boolean apart = other.chunk != a.chunk || other.offset() + other.reservedBytes() <= a.offset()
                            || a.offset() + a.reservedBytes() <= other.offset();
                    assertTrue(apart, () -> "overlap: " + a + " and " + other);
                }
                live.add(a);
                requested += size;
            } else if (action < 9 && !live.isEmpty()) {
                Allocation a = live.remove(random.nextInt(live.size()));
                requested -= a.requestedBytes();
                pool.free(a);
                assertFalse(a.isLive());
            } else if (random.nextInt(50) == 0) {
                own().flush();
            }
            if (step % 997 == 0) {
                PoolStats stats = pool.stats();
                assertEquals(requested, stats.requestedBytes(), stats::report);
                assertEquals(live.size(), stats.liveAllocations());
                assertEquals(own().cachedBytes(), stats.cachedBytes(), stats::report);
            }
        }
        for (Allocation a : live) {
            pool.free(a);
        }
        own().flush();
        assertEquals(0, pool.stats().cachedBytes());
    }
}
