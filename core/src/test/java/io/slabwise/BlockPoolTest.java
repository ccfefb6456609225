package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The block pool: payload layout, what it reserves, chunk return, bad input, threads. */
class BlockPoolTest {

    private static final int CHUNK = 4 << 20;
    private static final int BLOCK = 1 << 20;
    private static final int SUB = BLOCK / 16;

    private final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(2).build());
    private final BlockPool blocks = pool.blocks("block_cache", BLOCK, 2);

    private static long requested(List<Allocation> parts) {
        return parts.stream().mapToLong(Allocation::requestedBytes).sum();
    }

    private static long reserved(List<Allocation> parts) {
        return parts.stream().mapToLong(Allocation::reservedBytes).sum();
    }

    @Test
    void aPayloadIsBlocksThenSubBlocksThenARemainder() {
        int size = 2 * BLOCK + 3 * SUB + 1000;
        List<Allocation> parts = blocks.allocate(size);
        assertEquals(6, parts.size());
        for (int i = 0; i < 2; i++) {
            assertEquals(BLOCK, parts.get(i).reservedBytes());
        }
        for (int i = 2; i < 5; i++) {
            assertEquals(SUB, parts.get(i).reservedBytes());
        }
        assertEquals(1000, parts.get(5).requestedBytes());
        assertEquals(size, requested(parts));
        BlockStats stats = blocks.stats();
        assertEquals(2, stats.liveBlocks());
        assertEquals(3, stats.liveSubBlocks());
        parts.forEach(pool::free);
        assertEquals(0, blocks.stats().liveBlocks());
        assertEquals(0, blocks.stats().chunks(), "empty slot chunks go back at once");
    }

    /** Every payload from 64 KiB to 8 MiB reserves at most one eighth of a sub-block more than it asks for. */
    @Test
    void reservedStaysWithinASmallBoundOfRequested() {
        Random random = new Random(3);
        for (int i = 0; i < 300; i++) {
            int size = 64 * 1024 + random.nextInt(8 * BLOCK - 64 * 1024);
            List<Allocation> parts = blocks.allocate(size);
            long waste = reserved(parts) - size;
            assertTrue(waste >= 0 && waste <= SUB / 8, size + " wastes " + waste);
            assertTrue((double) reserved(parts) / size <= 1.02, "within 2% at " + size);
            parts.forEach(pool::free);
        }
    }

    /** A seeded LRU-like workload: accounting is exact, and after everything is released no chunk is held. */
    @Test
    void randomWorkloadIsExactAndReturnsEveryChunk() {
        Random random = new Random(5);
        List<List<Allocation>> live = new ArrayList<>();
        long liveRequested = 0;
        for (int i = 0; i < 2000; i++) {
            if (live.isEmpty() || random.nextInt(100) < 55) {
                int size = 64 * 1024 + random.nextInt(3 * BLOCK);
                live.add(blocks.allocate(size));
                liveRequested += size;
            } else {
                List<Allocation> victim = live.remove(random.nextInt(live.size()));
                liveRequested -= requested(victim);
                victim.forEach(pool::free);
            }
            if (i % 200 == 0) {
                CategoryStats stats = pool.stats().category("block_cache");
                assertEquals(liveRequested, stats.requested());
                long expectedReserved = live.stream().mapToLong(BlockPoolTest::reserved).sum();
                assertEquals(expectedReserved, stats.reserved());
                assertTrue(pool.committedBytes() >= expectedReserved);
            }
        }
        live.forEach(p -> p.forEach(pool::free));
        assertEquals(0, blocks.stats().chunks());
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    @Test
    void badInputIsRejected() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> blocks.allocate(0));
        assertTrue(zero.getMessage().contains("block_cache") && zero.getMessage().contains("0"), zero.getMessage());
        assertThrows(IllegalArgumentException.class, () -> blocks.allocate(-1));
        assertThrows(IllegalArgumentException.class, () -> pool.blocks("x", 3000, 1), "not a power of two");
        assertThrows(IllegalArgumentException.class, () -> pool.blocks("x", 2 * CHUNK, 1), "larger than a chunk");
        List<Allocation> parts = blocks.allocate(BLOCK);
        pool.free(parts.get(0));
        assertThrows(IllegalStateException.class, () -> pool.free(parts.get(0)), "double free");
    }

    /**
     * The race checked: blocks and sub-blocks taken on several threads (two
     * stripes) and released on other threads, each slot going back to its own
     * chunk's stripe under that stripe's lock. Patterns at both ends of every
     * part prove no two live parts overlap; at the end every chunk is back.
     */
    @Test
    void partsReleasedOnOtherThreadsNeverOverlap() throws Exception {
        int threads = 4;
        List<BlockingQueue<List<Allocation>>> queues = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            queues.add(new ArrayBlockingQueue<>(1000));
        }
        Thread[] workers = new Thread[threads];
        java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        for (int t = 0; t < threads; t++) {
            int self = t;
            workers[t] = new Thread(() -> {
                try {
                    Random random = new Random(100 + self);
                    for (int i = 0; i < 300; i++) {
                        List<Allocation> parts = blocks.allocate(64 * 1024 + random.nextInt(2 * BLOCK));
                        long stamp = ((long) self << 32) | i;
                        for (Allocation p : parts) {
                            if (p.requestedBytes() >= 16) {
                                p.memory().putLong(p.offset(), stamp);
                                p.memory().putLong(p.offset() + p.requestedBytes() - 8, stamp);
                            }
                        }
                        queues.get((self + 1) % threads).add(parts);
                        List<Allocation> theirs;
                        while ((theirs = queues.get(self).poll()) != null) {
                            verifyAndFree(theirs);
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("a worker failed", failure.get());
        }
        for (BlockingQueue<List<Allocation>> q : queues) {
            List<Allocation> left;
            while ((left = q.poll()) != null) {
                verifyAndFree(left);
            }
        }
        assertEquals(0, pool.stats().requestedBytes());
        assertEquals(0, blocks.stats().chunks());
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    private void verifyAndFree(List<Allocation> parts) {
        long stamp = parts.get(0).memory().getLong(parts.get(0).offset()); // the first part is a block or sub-block
        for (Allocation p : parts) {
            if (p.requestedBytes() >= 16) {
                assertEquals(stamp, p.memory().getLong(p.offset()));
                assertEquals(stamp, p.memory().getLong(p.offset() + p.requestedBytes() - 8));
            }
            pool.free(p);
        }
    }
}
