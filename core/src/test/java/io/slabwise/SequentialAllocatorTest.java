package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sequential allocator: exact accounting, chunk reuse and return, the tail policy, pinning, threads. */
class SequentialAllocatorTest {

    private static final int CHUNK = 1 << 20;

    private final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(2).build());
    private final SequentialAllocator log = pool.sequential("log_cache", 2, CHUNK * 2);

    private Allocation slice(int size) {
        Allocation a = new Allocation();
        assertTrue(log.allocate(size, a));
        return a;
    }

    @Test
    void slicesReserveTheirSizeRoundedToEightBytes() {
        Allocation a = slice(1);
        Allocation b = slice(13);
        Allocation c = slice(4096);
        assertEquals(8, a.reservedBytes());
        assertEquals(16, b.reservedBytes());
        assertEquals(4096, c.reservedBytes());
        assertEquals(a.offset() + 8, b.offset(), "carved one after the other");
        assertEquals(b.offset() + 16, c.offset());
        CategoryStats stats = pool.stats().category("log_cache");
        assertEquals(1 + 13 + 4096, stats.requested());
        assertEquals(8 + 16 + 4096, stats.reserved());
        pool.free(a);
        pool.free(b);
        pool.free(c);
        assertEquals(0, pool.stats().category("log_cache").reserved());
    }

    /**
     * A seeded FIFO workload: accounting matches the live slices exactly at
     * every check, committed stays within a few chunks of what is live, and
     * chunks are reused through the pool instead of taken anew from the OS.
     */
    @Test
    void fifoWorkloadIsExactAndReusesChunks() {
        Random random = new Random(11);
        ArrayDeque<Allocation> fifo = new ArrayDeque<>();
        long liveRequested = 0;
        long liveReserved = 0;
        long bound = 8L * CHUNK;
        long totalReserved = 0;
        for (int i = 0; i < 20_000; i++) {
            int size = 1 + (int) Math.exp(random.nextDouble() * Math.log(128 * 1024));
            while (liveRequested + size > bound) {
                Allocation old = fifo.pollFirst();
                liveRequested -= old.requestedBytes();
                liveReserved -= old.reservedBytes();
                pool.free(old);
            }
            Allocation a = slice(size);
            fifo.addLast(a);
            totalReserved += a.reservedBytes();
            liveRequested += a.requestedBytes();
            liveReserved += a.reservedBytes();
            if (i % 1000 == 0) {
                PoolStats stats = pool.stats();
                assertEquals(liveRequested, stats.requestedBytes());
                assertEquals(liveReserved, stats.reservedBytes());
                assertTrue(stats.committedBytes() <= bound + 4L * CHUNK, stats::report);
            }
        }
        long taken = pool.stats().chunksAllocated();
        long carvedThrough = totalReserved / CHUNK;
        assertTrue(taken * 4 < carvedThrough, "emptied chunks are mostly reused: " + taken + " taken from the OS for "
                + carvedThrough + " chunks' worth of slices");
        SequentialStats seq = log.stats();
        assertTrue(seq.wastedTailBytes() <= (long) (CHUNK / 64) * (carvedThrough + 2),
                "each retired chunk gives up at most 1/64 of a chunk: " + seq);
        fifo.forEach(pool::free);
        log.trim();
        pool.trim();
        assertEquals(0, pool.stats().requestedBytes());
        assertEquals(0, pool.committedBytes());
    }

    @Test
    void aRecordThatDoesNotFitALargeTailGoesToTheOverflowChunk() {
        int quarterless = 240 * 1024;
        List<Allocation> first = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            first.add(slice(quarterless)); // 960 KiB of the 1 MiB chunk; a 64 KiB tail is left
        }
        Allocation big = slice(100 * 1024); // does not fit the tail, and the tail is too large to give up
        SequentialStats stats = log.stats();
        assertEquals(2, stats.openChunks(), "current and overflow: " + stats);
        assertEquals(0, stats.wastedTailBytes(), "the tail is kept for smaller records");
        assertEquals(0, stats.fallbackAllocations());
        Allocation filler = slice(64 * 1024 - 8); // fits the current chunk's tail
        assertEquals(first.get(3).offset() + quarterless, filler.offset());
        first.forEach(pool::free);
        pool.free(big);
        pool.free(filler);
    }

    @Test
    void requestsLargerThanAQuarterChunkGoToTheGeneralPool() {
        Allocation large = slice(CHUNK / 2 + 1);
        assertEquals(1, log.stats().fallbackAllocations());
        assertEquals(pool.reservedSizeFor(CHUNK / 2 + 1), large.reservedBytes());
        Allocation huge = slice(CHUNK + 1);
        assertEquals(2, log.stats().fallbackAllocations());
        assertEquals(CHUNK + 1, pool.stats().category("log_cache").requested() - (CHUNK / 2 + 1));
        pool.free(large);
        pool.free(huge);
    }

    @Test
    void aLongLivedSlicePinsItsChunkAndShowsInTheStats() {
        Allocation survivor = slice(100);
        List<Allocation> others = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            others.add(slice(64 * 1024));
        }
        others.forEach(pool::free);
        log.trim(); // retire the open chunks: the survivor's chunk is now pinned
        SequentialStats stats = log.stats();
        assertEquals(1, stats.pinnedChunks(), stats.toString());
        assertEquals(104, stats.pinnedLiveBytes());
        assertTrue(stats.pinnedOccupancy() < 0.001);
        pool.free(survivor);
        assertEquals(0, log.stats().chunks());
    }

    @Test
    void badSizesAreRejectedWithTheCategoryAndSize() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> log.allocate(0, new Allocation()));
        assertTrue(zero.getMessage().contains("log_cache") && zero.getMessage().contains(": 0"), zero.getMessage());
        SequentialAllocator limited = pool.sequential("small_log", 1, 1000);
        IllegalArgumentException over = assertThrows(IllegalArgumentException.class, () -> limited.allocate(1001, new Allocation()));
        assertTrue(over.getMessage().contains("small_log") && over.getMessage().contains("1001"), over.getMessage());
        assertThrows(IllegalArgumentException.class, () -> log.allocate(-5, new Allocation()));
    }

    @Test
    void doubleFreeIsRejected() {
        Allocation a = slice(64);
        pool.free(a);
        assertThrows(IllegalStateException.class, () -> pool.free(a));
        assertEquals(0, pool.stats().category("log_cache").reserved());
    }

    /**
     * The race checked: slices carved on several threads (several stripes) and
     * released on other threads, with each chunk's live count dropping to zero
     * on whichever thread releases its last slice. Patterns prove no two live
     * slices overlap; at the end nothing is live and every chunk is back.
     */
    @Test
    void slicesReleasedOnOtherThreadsNeverOverlap() throws Exception {
        int threads = 4;
        List<BlockingQueue<Stamped>> queues = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            queues.add(new ArrayBlockingQueue<>(10_000));
        }
        Thread[] workers = new Thread[threads];
        long[] verified = new long[threads];
        for (int t = 0; t < threads; t++) {
            int self = t;
            workers[t] = new Thread(() -> {
                Random random = new Random(self);
                for (int i = 0; i < 5000; i++) {
                    Allocation a = new Allocation();
                    log.allocate(1 + random.nextInt(20_000), a);
                    long stamp = ((long) self << 32) | i;
                    a.memory().putLong(a.offset(), stamp);
                    if (a.reservedBytes() > 8) {
                        a.memory().putLong(a.offset() + a.reservedBytes() - 8, ~stamp);
                    }
                    queues.get((self + 1) % threads).add(new Stamped(a, stamp));
                    Stamped theirs;
                    while ((theirs = queues.get(self).poll()) != null) {
                        theirs.checkAndFree(pool);
                        verified[self]++;
                    }
                }
            });
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        for (BlockingQueue<Stamped> q : queues) {
            Stamped left;
            while ((left = q.poll()) != null) {
                left.checkAndFree(pool);
            }
        }
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        log.trim();
        pool.trim();
        assertEquals(0, pool.committedBytes());
        assertTrue(verified[0] + verified[1] + verified[2] + verified[3] > 0);
    }

    /** A slice with the stamp written at both of its ends. */
    private record Stamped(Allocation allocation, long stamp) {
        void checkAndFree(MemoryPool pool) {
            Allocation a = allocation;
            assertEquals(stamp, a.memory().getLong(a.offset()), "the first bytes are still this slice's");
            long last = a.memory().getLong(a.offset() + a.reservedBytes() - 8);
            if (a.reservedBytes() > 8) {
                assertEquals(~stamp, last, "the last bytes are still this slice's");
            }
            pool.free(a);
        }
    }
}
