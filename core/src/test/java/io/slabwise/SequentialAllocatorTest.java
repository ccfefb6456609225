package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sequential allocator (FIFO slab) on a pool of 1 MiB chunks: exact
 * accounting, chunk reuse and return, the tail policy, the general-pool and
 * huge paths, pinning, bad input, and release from other threads.
 *
 * <p>With 1 MiB chunks a slice may be at most 256 KiB (a quarter chunk), and a
 * chunk whose free tail is at most 4 KiB (1/256 chunk) is retired when the
 * next slice does not fit it.
 */
class SequentialAllocatorTest {

    private static final int KIB = 1024;
    private static final int CHUNK = 1 << 20;
    private static final int MAX_SLICE = CHUNK / 4;
    private static final int MAX_TAIL_WASTE = CHUNK / 256;

    private final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(2).arenaSpreadBytes(0).build());
    private final SequentialAllocator log = pool.sequential("log_cache", 2, 2 * CHUNK);

    private Allocation slice(int size) {
        return slice(log, size);
    }

    private static Allocation slice(SequentialAllocator allocator, int size) {
        Allocation a = new Allocation();
        assertTrue(allocator.allocate(size, a));
        assertTrue(a.isLive());
        return a;
    }

    private static int roundedToEight(int size) {
        return (size + 7) & -8;
    }

    private CategoryStats logStats() {
        return pool.stats().category("log_cache");
    }

    /** Gives everything back: the allocator's open chunks, then the pool's idle chunks. */
    private void assertEverythingReturns() {
        log.trim();
        pool.trim();
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals(0, stats.committedBytes(), stats::report);
        assertEquals(0, log.stats().chunks(), log.stats()::toString);
        assertEquals(stats.chunksAllocated(), stats.chunksReleased());
    }

    @Test
    void slicesReserveTheirSizeRoundedToEightBytesOneAfterTheOther() {
        Allocation a = slice(1);
        Allocation b = slice(13);
        Allocation c = slice(4096);
        assertEquals(1, a.requestedBytes());
        assertEquals(8, a.reservedBytes());
        assertEquals(16, b.reservedBytes());
        assertEquals(4096, c.reservedBytes());
        assertEquals("log_cache", a.category().name());
        assertEquals(a.offset() + 8, b.offset(), "carved one after the other");
        assertEquals(b.offset() + 16, c.offset());
        assertEquals(a.address() + 8, b.address());

        CategoryStats category = logStats();
        assertEquals(1 + 13 + 4096, category.requested());
        assertEquals(8 + 16 + 4096, category.reserved());
        assertEquals(3, category.liveBuffers());
        SequentialStats seq = log.stats();
        assertEquals(8 + 16 + 4096, seq.liveBytes());
        assertEquals(3, seq.slicesCarved());
        assertEquals(1, seq.chunks());
        assertEquals(1, seq.openChunks());
        assertEquals(0, seq.pinnedChunks());
        assertEquals(CHUNK, seq.chunkBytes());
        PoolStats stats = pool.stats();
        assertEquals(CHUNK, stats.committedBytes(), "one chunk, counted as committed but not as reserved");
        assertEquals(8 + 16 + 4096, stats.reservedBytes());

        pool.free(a);
        pool.free(b);
        pool.free(c);
        assertEquals(0, logStats().requested());
        assertEquals(0, logStats().reserved());
        assertEquals(0, log.stats().liveBytes());
        assertEquals(1, log.stats().chunks(), "the open chunk stays open while empty");
        assertEverythingReturns();
    }

    /**
     * A seeded workload of slices from 1 byte to 64 KiB, released mostly in
     * FIFO order and sometimes out of order: at every step the pool, the
     * category and the allocator's figures equal a model of the live slices.
     */
    @Test
    void seededWorkloadIsAccountedExactly() {
        Random random = new Random(42);
        List<Allocation> live = new ArrayList<>();
        long requested = 0;
        long reserved = 0;
        long carvedLive = 0;
        long carved = 0;
        long fallbacks = 0;
        long allocations = 0;
        long releases = 0;
        for (int i = 0; i < 6000; i++) {
            if (live.isEmpty() || live.size() < 300 && random.nextInt(100) < 60) {
                int size = 1 + (int) Math.exp(random.nextDouble() * Math.log(64 * KIB));
                long fallbacksBefore = log.stats().fallbackAllocations();
                Allocation a = slice(size);
                boolean fellBack = log.stats().fallbackAllocations() != fallbacksBefore;
                assertEquals(size, a.requestedBytes());
                assertEquals(fellBack, !isSlice(a), "the fallback counter counts exactly the general-pool requests");
                if (fellBack) {
                    fallbacks++;
                    assertEquals(pool.reservedSizeFor(size), a.reservedBytes(), "a fallback reserves a size class");
                } else {
                    carved++;
                    carvedLive += a.reservedBytes();
                    assertEquals(roundedToEight(size), a.reservedBytes(), "a slice reserves its size rounded to 8");
                }
                live.add(a);
                requested += size;
                reserved += a.reservedBytes();
                allocations++;
            } else {
                int index = random.nextInt(100) < 80 ? 0 : random.nextInt(live.size()); // mostly FIFO
                Allocation a = live.remove(index);
                requested -= a.requestedBytes();
                reserved -= a.reservedBytes();
                if (isSlice(a)) {
                    carvedLive -= a.reservedBytes();
                }
                pool.free(a);
                assertFalse(a.isLive());
                releases++;
            }
            if (i % 97 == 0) {
                PoolStats stats = pool.stats();
                CategoryStats category = stats.category("log_cache");
                assertEquals(requested, category.requested());
                assertEquals(reserved, category.reserved());
                assertEquals(allocations, category.allocations());
                assertEquals(releases, category.releases());
                assertEquals(live.size(), category.liveBuffers());
                assertEquals(requested, stats.requestedBytes(), "nothing else in the pool");
                assertEquals(reserved, stats.reservedBytes());
                assertEquals((long) stats.chunks() * CHUNK, stats.committedBytes(), "no huge regions");

                SequentialStats seq = log.stats();
                assertEquals(carvedLive, seq.liveBytes(), seq::toString);
                assertEquals(carved, seq.slicesCarved());
                assertEquals(fallbacks, seq.fallbackAllocations());
                assertEquals(seq.chunks(), seq.openChunks() + seq.pinnedChunks() + seq.spareChunks());
                assertTrue(seq.spareChunks() <= 1);
                assertTrue(seq.openChunks() <= 2 * 2, "current and overflow per stripe");
                assertTrue(seq.pinnedLiveBytes() <= seq.liveBytes());
                assertTrue(seq.chunks() <= stats.chunks() - stats.idleChunks(), "slab chunks are the pool's chunks");
            }
        }
        live.forEach(pool::free);
        assertEquals(0, log.stats().liveBytes());
        assertEverythingReturns();
    }

    /** Whether {@code a} is a slice of a slab chunk rather than general-pool memory. */
    private static boolean isSlice(Allocation a) {
        return a.releaser != null && a.releaser.getClass().getEnclosingClass() == SequentialAllocator.class;
    }

    /**
     * A log cache bounded at 3 MiB, round after round: once the window has
     * turned over, every chunk the allocator needs is one it emptied before
     * (its spare, or the arena's idle chunk), so {@code chunksAllocated} stays
     * flat and committed memory stays within a few chunks of what is live.
     * Without the spare, a current and an overflow chunk emptied together
     * sent one chunk back to the OS every few rounds, to be taken again.
     */
    @Test
    void fifoRoundsReuseEmptiedChunksInsteadOfTakingNewOnes() {
        Random random = new Random(7);
        ArrayDeque<Allocation> window = new ArrayDeque<>();
        long bound = 3L * CHUNK;
        long live = 0;
        long chunksAfterWarmUp = -1;
        long carvedBytes = 0;
        for (int round = 0; round < 40; round++) {
            long turnedOver = 0;
            while (turnedOver < bound) { // one round: as many bytes as the window holds
                int size = 100 + random.nextInt(32 * KIB);
                while (live + size > bound) {
                    Allocation oldest = window.pollFirst();
                    live -= oldest.requestedBytes();
                    pool.free(oldest);
                }
                Allocation a = slice(size);
                window.addLast(a);
                live += size;
                turnedOver += size;
                carvedBytes += a.reservedBytes();
            }
            PoolStats stats = pool.stats();
            assertEquals(live, stats.requestedBytes());
            assertTrue(stats.committedBytes() <= bound + 3L * CHUNK, stats::report);
            if (round == 3) {
                chunksAfterWarmUp = stats.chunksAllocated();
            } else if (round > 3) {
                assertEquals(chunksAfterWarmUp, stats.chunksAllocated(),
                        "round " + round + ": an emptied chunk is reused before a new one is taken\n" + stats.report());
            }
        }
        assertTrue(carvedBytes / CHUNK > 10 * chunksAfterWarmUp,
                "many chunks' worth carved through few chunks: " + carvedBytes + " bytes through " + chunksAfterWarmUp);
        SequentialStats seq = log.stats();
        assertEquals(0, seq.fallbackAllocations(), "small records never leave the slab chunks");
        assertTrue(seq.chunks() <= bound / CHUNK + 3, "the window's chunks, two open ones and the spare: " + seq);
        window.forEach(pool::free);
        assertEverythingReturns();
    }

    /**
     * The first chunk, emptied while the second is carved, becomes the
     * allocator's spare and is the third chunk it uses; {@code trim()} gives
     * the spare back.
     */
    @Test
    void anEmptiedChunkIsKeptAsTheSpareAndReusedBeforeANewOneIsTaken() {
        List<Allocation> first = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            first.add(slice(64 * KIB)); // exactly one chunk
        }
        long firstAddress = first.get(0).address();
        List<Allocation> second = new ArrayList<>();
        second.add(slice(64 * KIB)); // no room left: the first chunk is retired, the second opened
        assertEquals(2, pool.stats().chunksAllocated());
        assertEquals(1, log.stats().pinnedChunks());
        first.forEach(pool::free);
        SequentialStats afterRelease = log.stats();
        assertEquals(1, afterRelease.spareChunks(), "the emptied chunk is kept for reuse: " + afterRelease);
        assertEquals(2, afterRelease.chunks());
        assertEquals(1, afterRelease.openChunks());
        assertEquals(0, afterRelease.pinnedChunks());
        assertEquals(2L * CHUNK, pool.committedBytes());
        for (int i = 0; i < 15; i++) {
            second.add(slice(64 * KIB));
        }
        Allocation third = slice(64 * KIB);
        PoolStats stats = pool.stats();
        assertEquals(2, stats.chunksAllocated(), "no new chunk from the OS: " + stats.report());
        assertEquals(0, stats.idleChunks());
        assertEquals(2L * CHUNK, stats.committedBytes());
        assertEquals(firstAddress, third.address(), "carved from the start of the emptied chunk");
        assertEquals(0, log.stats().spareChunks());
        second.forEach(pool::free); // the second chunk becomes the spare
        assertEquals(1, log.stats().spareChunks());
        assertEquals(2, log.trim(), "the open chunk retired, the spare given back");
        assertEquals(0, log.stats().spareChunks());
        assertEquals(1, log.stats().chunks(), "the open chunk, still holding a slice");
        pool.free(third);
        assertEverythingReturns();
    }

    /**
     * The spare and the arena's idle chunk between them absorb a current and
     * an overflow chunk that empty together: nothing goes back to the OS only
     * to be taken again.
     */
    @Test
    void twoChunksEmptiedTogetherAreBothReused() {
        List<Allocation> current = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            current.add(slice(240 * KIB)); // a 64 KiB tail stays open
        }
        List<Allocation> overflow = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            overflow.add(slice(250 * KIB));
        }
        log.trim(); // retire both
        current.forEach(pool::free);
        overflow.forEach(pool::free);
        PoolStats emptied = pool.stats();
        assertEquals(2, emptied.chunksAllocated());
        assertEquals(0, emptied.chunksReleased(), "one spare, one idle in the arena: " + emptied.report());
        assertEquals(1, log.stats().spareChunks());
        assertEquals(1, emptied.idleChunks());
        List<Allocation> again = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            again.add(slice(240 * KIB));
        }
        for (int i = 0; i < 4; i++) {
            again.add(slice(250 * KIB));
        }
        assertEquals(2, pool.stats().chunksAllocated(), "both reused");
        again.forEach(pool::free);
        assertEverythingReturns();
    }

    @Test
    void aRecordThatDoesNotFitALargeTailGoesToTheOverflowChunk() {
        int quarterless = 240 * KIB;
        List<Allocation> current = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            current.add(slice(quarterless)); // 960 KiB of the chunk: a 64 KiB tail is left
        }
        Allocation big = slice(100 * KIB); // does not fit the tail, and the tail is too large to give up
        SequentialStats stats = log.stats();
        assertEquals(2, stats.openChunks(), "current and overflow: " + stats);
        assertEquals(0, stats.wastedTailBytes(), "the tail is kept for smaller records");
        assertEquals(0, stats.fallbackAllocations());
        Allocation filler = slice(56 * KIB); // fits the current chunk's tail
        assertEquals(current.get(3).offset() + quarterless, filler.offset());
        assertEquals(current.get(0).address() + 4L * quarterless, filler.address(), "same chunk as the first slices");
        current.forEach(pool::free);
        pool.free(big);
        pool.free(filler);
        assertEverythingReturns();
    }

    /**
     * When a record fits neither the current nor the overflow chunk and both
     * keep a tail too large to give up, the chunk with the smaller tail is
     * retired and a new overflow chunk takes the record; nothing goes to the
     * general pool.
     */
    @Test
    void whenNeitherChunkHasRoomTheSmallerTailIsGivenUp() {
        List<Allocation> slices = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            slices.add(slice(240 * KIB)); // current: a 64 KiB tail
        }
        slices.add(slice(100 * KIB)); // overflow opened
        for (int i = 0; i < 3; i++) {
            slices.add(slice(240 * KIB)); // into the overflow: 820 KiB carved, a 204 KiB tail
        }
        Allocation record = slice(250 * KIB); // fits neither; the current chunk's 64 KiB tail is the smaller
        SequentialStats stats = log.stats();
        assertEquals(0, stats.fallbackAllocations(), stats::toString);
        assertTrue(isSlice(record));
        assertEquals(64 * KIB, stats.wastedTailBytes(), "the smaller tail is given up");
        assertEquals(3, stats.chunks());
        assertEquals(2, stats.openChunks(), "the former overflow is current, the new chunk the overflow");
        assertEquals(1, stats.pinnedChunks(), "the retired chunk lives until its slices go");
        assertEquals(8L * 240 * KIB + 100 * KIB - 240 * KIB + 250 * KIB, stats.liveBytes());
        Allocation intoFormerOverflow = slice(200 * KIB); // fits the 204 KiB tail of the chunk that is current now
        assertEquals(slices.get(4).address() + 820 * KIB, intoFormerOverflow.address());

        CategoryStats category = logStats();
        assertEquals(pool.stats().requestedBytes(), category.requested(), "all of it in the category");

        slices.forEach(pool::free);
        pool.free(record);
        pool.free(intoFormerOverflow);
        assertEverythingReturns();
    }

    /**
     * When the record fits neither chunk and the overflow chunk's tail is the
     * smaller one, the overflow chunk is retired and the current one stays
     * open for the smaller records that follow.
     */
    @Test
    void theOverflowChunkIsRetiredWhenItsTailIsTheSmaller() {
        List<Allocation> slices = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            slices.add(slice(240 * KIB)); // current: a 64 KiB tail
        }
        slices.add(slice(100 * KIB)); // overflow opened
        for (int i = 0; i < 3; i++) {
            slices.add(slice(250 * KIB));
        }
        slices.add(slice(150 * KIB)); // the overflow: 1000 KiB carved, a 24 KiB tail
        Allocation big = slice(100 * KIB); // fits neither; the overflow's tail is the smaller
        SequentialStats stats = log.stats();
        assertEquals(24 * KIB, stats.wastedTailBytes(), stats::toString);
        assertEquals(3, stats.chunks());
        assertEquals(2, stats.openChunks(), "the current chunk and a new overflow");
        assertEquals(1, stats.pinnedChunks(), "the retired overflow");
        assertEquals(0, stats.fallbackAllocations());
        Allocation small = slice(60 * KIB); // the current chunk stayed open for it
        assertEquals(slices.get(0).address() + 960 * KIB, small.address());
        slices.forEach(pool::free);
        pool.free(big);
        pool.free(small);
        assertEverythingReturns();
    }

    /**
     * An overflow chunk whose tail is small is retired and replaced when a
     * record fits neither it nor the current chunk, whose tail is large.
     */
    @Test
    void anOverflowChunkWithASmallTailIsReplaced() {
        List<Allocation> slices = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            slices.add(slice(240 * KIB));
        }
        slices.add(slice(59 * KIB)); // current: 1019 KiB carved, a 5 KiB tail (just too large to give up)
        for (int i = 0; i < 4; i++) {
            slices.add(slice(250 * KIB)); // overflow: 1000 KiB carved, a 24 KiB tail
        }
        slices.add(slice(21 * KIB)); // not into the current tail, into the overflow's: 3 KiB left there
        assertEquals(slices.get(5).address() + 1000 * KIB, slices.get(9).address());
        SequentialStats before = log.stats();
        assertEquals(2, before.openChunks());
        assertEquals(0, before.wastedTailBytes());
        assertTrue(5 * KIB > MAX_TAIL_WASTE && 3 * KIB <= MAX_TAIL_WASTE, "the premise of this test");
        Allocation big = slice(100 * KIB); // fits neither: the current tail is large, the overflow's small
        SequentialStats stats = log.stats();
        assertEquals(3 * KIB, stats.wastedTailBytes(), stats::toString);
        assertEquals(3, stats.chunks());
        assertEquals(2, stats.openChunks(), "the current chunk and a new overflow");
        assertEquals(1, stats.pinnedChunks(), "the retired overflow");
        assertEquals(0, stats.fallbackAllocations());
        Allocation small = slice(4 * KIB); // still fits the current chunk's tail
        assertEquals(slices.get(4).address() + 59 * KIB, small.address());
        slices.forEach(pool::free);
        pool.free(big);
        pool.free(small);
        assertEverythingReturns();
    }

    @Test
    void requestsLargerThanAQuarterChunkGoToTheGeneralPoolAndLargerThanAChunkTakeTheHugePath() {
        Allocation large = slice(MAX_SLICE + 1);
        assertEquals(1, log.stats().fallbackAllocations());
        assertEquals(0, log.stats().slicesCarved());
        assertEquals(0, log.stats().chunks(), "no slab chunk was opened");
        assertEquals(pool.reservedSizeFor(MAX_SLICE + 1), large.reservedBytes());
        assertEquals(MAX_SLICE + PoolConfig.PAGE_SIZE, large.reservedBytes(), "above an eighth of a chunk: a region of its own");

        Allocation huge = slice(CHUNK + 1);
        assertEquals(2, log.stats().fallbackAllocations());
        int hugeSize = CHUNK + PoolConfig.PAGE_SIZE;
        assertEquals(hugeSize, huge.reservedBytes(), "a huge region is rounded to whole pages");
        PoolStats stats = pool.stats();
        assertEquals(2, stats.hugeAllocations());
        assertEquals(large.reservedBytes() + hugeSize, stats.hugeCommittedBytes());
        assertEquals((long) stats.chunks() * CHUNK + large.reservedBytes() + hugeSize, stats.committedBytes());
        CategoryStats category = stats.category("log_cache");
        assertEquals(MAX_SLICE + 1 + CHUNK + 1, category.requested());
        assertEquals(large.reservedBytes() + hugeSize, category.reserved());

        huge.chunkMemory().put(huge.offset() + CHUNK, (byte) 7); // the last byte is usable
        pool.free(huge);
        PoolStats afterHuge = pool.stats();
        assertEquals(1, afterHuge.hugeAllocations());
        assertEquals(large.reservedBytes(), afterHuge.hugeCommittedBytes());
        assertEquals(0, afterHuge.hugeIdleBytes(), "a region larger than a chunk is never kept idle");
        pool.free(large);
        assertEverythingReturns();
    }

    /**
     * One long-lived slice keeps its whole chunk after everything around it
     * was released: the chunk shows as pinned, by a few live bytes.
     */
    @Test
    void aLongLivedSlicePinsItsChunkAndShowsInTheStats() {
        Allocation survivor = slice(100);
        List<Allocation> others = new ArrayList<>();
        for (int i = 0; i < 15; i++) {
            others.add(slice(64 * KIB));
        }
        others.add(slice(64 * KIB - 104 - 4 * KIB)); // leaves a 4 KiB tail: small enough to give up
        for (int i = 0; i < 24; i++) {
            others.add(slice(64 * KIB)); // the first chunk is retired, a second carved
        }
        others.forEach(pool::free); // the second chunk, retired full, empties and becomes the spare
        SequentialStats stats = log.stats();
        assertEquals(3, stats.chunks(), stats.toString());
        assertEquals(1, stats.openChunks());
        assertEquals(1, stats.spareChunks());
        assertEquals(1, stats.pinnedChunks(), "the first chunk is held by the survivor alone");
        assertEquals(104, stats.pinnedLiveBytes(), "100 bytes rounded to 8 hold a whole 1 MiB chunk");
        assertEquals(104, stats.liveBytes());
        assertEquals(4 * KIB, stats.wastedTailBytes());
        assertTrue(stats.pinnedOccupancy() < 0.001, "occupancy " + stats.pinnedOccupancy());
        log.trim(); // retires the open chunk, which holds nothing, and gives back the spare
        SequentialStats trimmed = log.stats();
        assertEquals(1, trimmed.chunks(), trimmed.toString());
        assertEquals(0, trimmed.openChunks());
        assertEquals(0, trimmed.spareChunks());
        assertEquals(1, trimmed.pinnedChunks());
        assertEquals(4 * KIB, trimmed.wastedTailBytes(), "the open chunk held nothing: it went back whole, no tail given up");
        PoolStats poolStats = pool.stats();
        assertEquals(104, poolStats.reservedBytes());
        assertEquals(CHUNK, poolStats.committedBytes() - (long) poolStats.idleChunks() * CHUNK);
        assertTrue(poolStats.externalFragmentation() > 0.99, "one pinned chunk for 104 bytes: " + poolStats.summary());
        pool.free(survivor);
        SequentialStats released = log.stats();
        assertEquals(0, released.pinnedChunks());
        assertEquals(1, released.spareChunks(), "the emptied chunk is the spare now");
        assertEquals(1, released.chunks());
        assertEverythingReturns();
    }

    /**
     * Releases on another thread change the carving thread's remote counters
     * and the chunk's packed count of released bytes and slices: the live,
     * pinned and carved-free figures stay exact whichever thread releases,
     * while the chunk is open and after it is retired, and the chunk goes back
     * with its last slice.
     */
    @Test
    void figuresStayExactWhenSlicesAreReleasedOnAnotherThread() throws Exception {
        SequentialAllocator one = pool.sequential("one_stripe", 1, CHUNK);
        List<Allocation> first = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            first.add(slice(one, 64 * KIB - 3)); // 16 slices of 64 KiB fill the first chunk
        }
        List<Allocation> early = new ArrayList<>(first.subList(0, 4));
        ConcurrentTasks.runConcurrently(List.of(() -> early.forEach(pool::free))); // while the chunk is open
        SequentialStats open = one.stats();
        assertEquals(12L * 64 * KIB, open.liveBytes(), open::toString);
        assertEquals(0, open.pinnedLiveBytes());
        assertEquals(1, open.openChunks());
        assertEquals(CHUNK - 12L * 64 * KIB, pool.stats().carvedFreeBytes());

        Allocation second = slice(one, 100); // retires the full first chunk and opens a second
        List<Allocation> late = new ArrayList<>(first.subList(4, 14));
        ConcurrentTasks.runConcurrently(List.of(() -> late.forEach(pool::free))); // after the retirement
        SequentialStats pinned = one.stats();
        assertEquals(2L * 64 * KIB + 104, pinned.liveBytes(), pinned::toString);
        assertEquals(2L * 64 * KIB, pinned.pinnedLiveBytes(), "the two slices left in the retired chunk");
        assertEquals(1, pinned.pinnedChunks());
        assertEquals(17, pinned.slicesCarved());
        PoolStats stats = pool.stats();
        CategoryStats category = stats.category("one_stripe");
        assertEquals(2L * (64 * KIB - 3) + 100, category.requested(), stats::report);
        assertEquals(2L * 64 * KIB + 104, category.reserved());
        assertEquals(2L * CHUNK - (2L * 64 * KIB + 104), stats.carvedFreeBytes());

        List<Allocation> last = new ArrayList<>(first.subList(14, 16));
        ConcurrentTasks.runConcurrently(List.of(() -> last.forEach(pool::free)));
        SequentialStats emptied = one.stats();
        assertEquals(0, emptied.pinnedChunks(), "the last release gave the retired chunk back");
        assertEquals(1, emptied.spareChunks());
        assertEquals(104, emptied.liveBytes());
        pool.free(second);
        assertEquals(0, one.stats().liveBytes());
        assertEquals(2L * CHUNK, pool.stats().carvedFreeBytes(), "the open chunk and the spare, both empty");
        one.trim();
        assertEquals(0, pool.stats().carvedFreeBytes());
        assertEverythingReturns();
    }

    @Test
    void badSizesAreRejectedWithTheCategoryAndTheSize() {
        SequentialAllocator limited = pool.sequential("x", 2, 1000);
        assertEquals(1000, limited.maxRequest());
        Allocation holder = new Allocation();
        IllegalArgumentException over = assertThrows(IllegalArgumentException.class, () -> limited.allocate(1001, holder));
        assertTrue(over.getMessage().contains("'x'") && over.getMessage().contains("1001"), over.getMessage());
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> log.allocate(0, holder));
        assertTrue(zero.getMessage().contains("log_cache") && zero.getMessage().endsWith(": 0"), zero.getMessage());
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> log.allocate(-5, holder));
        assertTrue(negative.getMessage().contains("log_cache") && negative.getMessage().contains("-5"), negative.getMessage());
        assertFalse(holder.isLive());
        assertEquals(0, pool.stats().allocations(), "nothing was counted");
        assertTrue(limited.allocate(1000, holder), "the largest request is accepted");
        assertThrows(IllegalStateException.class, () -> limited.allocate(8, holder), "the holder is still live");
        pool.free(holder);
        limited.trim();
        assertThrows(IllegalArgumentException.class, () -> pool.sequential("x", 0, 1000), "no stripes");
        assertThrows(IllegalArgumentException.class, () -> pool.sequential("x", 1, 0), "no request fits");
        assertEverythingReturns();
    }

    @Test
    void doubleFreeIsRejectedAndLeavesTheAccountingAlone() {
        Allocation a = slice(64);
        Allocation b = slice(64);
        pool.free(a);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.free(a));
        assertTrue(e.getMessage().contains("double free"), e.getMessage());
        assertEquals(64, logStats().requested());
        assertEquals(1, logStats().liveBuffers());
        assertEquals(64, log.stats().liveBytes());
        pool.free(b);
        assertEverythingReturns(); // the chunk's count was not dropped twice
    }

    /**
     * The race checked: several threads carve from one stripe (one lock, one
     * current chunk) at once, and every slice is released on another thread,
     * so a chunk's live count drops to zero on whichever thread frees its
     * last slice while its carver moves on, and an emptied chunk goes back to
     * the arena from a thread that is not bound to it. Patterns at both ends
     * of every slice prove no two live slices overlap; at the end nothing is
     * live and every chunk goes back.
     */
    @Test
    void slicesCarvedOnOneStripeAndReleasedOnOtherThreadsNeverOverlap() throws Exception {
        SequentialAllocator shared = pool.sequential("shared_log", 1, CHUNK);
        int threads = 4;
        int perThread = 4000;
        List<BlockingQueue<Stamped>> queues = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            queues.add(new ArrayBlockingQueue<>(perThread));
        }
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int self = t;
            tasks.add(() -> {
                Random random = new Random(self);
                BlockingQueue<Stamped> mine = queues.get(self);
                BlockingQueue<Stamped> next = queues.get((self + 1) % threads);
                int received = 0;
                for (int i = 0; i < perThread; i++) {
                    int size = random.nextInt(8) == 0 ? 1 + random.nextInt(64 * KIB) : 1 + random.nextInt(2 * KIB);
                    Allocation a = slice(shared, size);
                    next.add(Stamped.write(a, ((long) self << 32) | i));
                    Stamped theirs;
                    while ((theirs = mine.poll()) != null) {
                        theirs.checkAndFree(pool);
                        received++;
                    }
                }
                while (received < perThread) { // the left neighbour's last slices
                    ConcurrentTasks.takeFromNeighbour(mine).checkAndFree(pool);
                    received++;
                }
            });
        }
        ConcurrentTasks.runConcurrently(tasks);
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        CategoryStats category = stats.category("shared_log");
        assertEquals((long) threads * perThread, category.allocations());
        assertEquals(category.allocations(), category.releases());
        assertEquals(0, shared.stats().liveBytes());
        assertEquals(0, shared.stats().pinnedChunks(), "every retired chunk went back when its last slice did");
        shared.trim();
        assertEverythingReturns();
    }

    /**
     * The race checked: {@link SequentialAllocator#trim()} retires the open
     * chunks while other threads carve from them and release slices of them,
     * so the retirement's reference drop races with the release of a chunk's
     * last slice: exactly one of them must give the chunk back (none leaked,
     * none given back twice), and a carve never lands in a retired chunk.
     */
    @Test
    void trimRacingWithCarvesAndReleasesGivesEveryChunkBackOnce() throws Exception {
        int workers = 3;
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < workers; t++) {
            int self = t;
            tasks.add(() -> {
                Random random = new Random(50 + self);
                ArrayDeque<Stamped> window = new ArrayDeque<>();
                for (int i = 0; i < 6000; i++) {
                    if (window.size() >= 64) {
                        window.pollFirst().checkAndFree(pool);
                    }
                    window.addLast(Stamped.write(slice(1 + random.nextInt(16 * KIB)), ((long) self << 32) | i));
                }
                window.forEach(s -> s.checkAndFree(pool));
            });
        }
        tasks.add(() -> { // the trimmer: a trim after every 32 carves, until the workers are done
            long total = (long) workers * 6000;
            long lastTrim = 0;
            for (long spins = 0; spins < 100_000_000L; spins++) {
                long carved = log.stats().slicesCarved();
                if (carved >= total) {
                    break;
                }
                if (carved - lastTrim >= 32) {
                    log.trim();
                    lastTrim = carved;
                } else {
                    Thread.onSpinWait();
                }
            }
        });
        ConcurrentTasks.runConcurrently(tasks);
        assertEquals(0, log.stats().liveBytes());
        assertEverythingReturns();
    }

    /** A slice with a stamp written at its start, its middle and its end. */
    private record Stamped(Allocation allocation, long stamp) {

        /** Writes the stamp: the first byte, or the first long, the last long and a middle byte, as the size allows. */
        static Stamped write(Allocation a, long stamp) {
            int n = a.requestedBytes();
            if (n < 8) {
                a.chunkMemory().put(a.offset(), (byte) stamp);
            } else {
                a.chunkMemory().putLong(a.offset(), stamp);
            }
            if (n >= 16) {
                a.chunkMemory().putLong(a.offset() + n - 8, ~stamp);
            }
            if (n >= 24) {
                a.chunkMemory().put(a.offset() + n / 2, (byte) (stamp ^ n));
            }
            return new Stamped(a, stamp);
        }

        /** Checks the stamp is intact (no other live slice wrote over it), then frees the slice. */
        void checkAndFree(MemoryPool pool) {
            Allocation a = allocation;
            int n = a.requestedBytes();
            if (n < 8) {
                assertEquals((byte) stamp, a.chunkMemory().get(a.offset()), "the first byte is still this slice's");
            } else {
                assertEquals(stamp, a.chunkMemory().getLong(a.offset()), "the first bytes are still this slice's");
            }
            if (n >= 16) {
                assertEquals(~stamp, a.chunkMemory().getLong(a.offset() + n - 8), "the last bytes too");
            }
            if (n >= 24) {
                assertEquals((byte) (stamp ^ n), a.chunkMemory().get(a.offset() + n / 2), "and a middle byte");
            }
            pool.free(a);
        }
    }

    /** A trim that retires an open chunk with a live slice gives up its tail while the slice lives; an empty one gives up none. */
    @Test
    void aTrimGivesUpTheTailsOfOpenChunksWithLiveSlicesOnly() {
        Allocation live = slice(1000);
        log.trim();
        assertEquals(CHUNK - 1000, log.stats().wastedTailBytes(), "the tail behind the live slice");
        pool.free(live);
        Allocation released = slice(1000);
        pool.free(released);
        pool.trim(); // retires the new open chunk, empty
        assertEquals(CHUNK - 1000, log.stats().wastedTailBytes(), log.stats()::toString);
        assertEverythingReturns();
    }
}
