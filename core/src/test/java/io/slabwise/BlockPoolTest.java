package io.slabwise;

import org.junit.jupiter.api.Test;

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
 * The block pool on a pool of 1 MiB chunks: payload layout, what a payload
 * reserves, exact accounting, chunks going back when all their blocks are
 * free, bad input, and release from other threads.
 *
 * <p>Two block pools are used: {@code block_cache} with the default 1 MiB
 * blocks (one per chunk, 64 KiB sub-blocks), and {@code small_blocks} with
 * 256 KiB blocks (four per chunk, 16 KiB sub-blocks) where chunks hold several
 * blocks.
 */
class BlockPoolTest {

    private static final int KIB = 1024;
    private static final int PAGE = PoolConfig.PAGE_SIZE;
    private static final int CHUNK = 1 << 20;
    private static final int BLOCK = 1 << 20;
    private static final int SUB = BLOCK / 16;
    private static final int SMALL_BLOCK = 256 * KIB;
    private static final int SMALL_SUB = SMALL_BLOCK / 16;

    private final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(2).build());
    private final BlockPool blocks = pool.blocks("block_cache");
    private final BlockPool small = pool.blocks("small_blocks", SMALL_BLOCK, 2);

    private static long requested(List<Allocation> parts) {
        return parts.stream().mapToLong(Allocation::requestedBytes).sum();
    }

    private static long reserved(List<Allocation> parts) {
        return parts.stream().mapToLong(Allocation::reservedBytes).sum();
    }

    private static boolean isSlot(Allocation part) {
        return part.releaser instanceof BlockPool;
    }

    /** What a payload of {@code size} bytes reserves: blocks, sub-blocks, the remainder's pages and last partial page. */
    private long expectedReserved(BlockPool from, int size) {
        int block = from.blockSize();
        int sub = from.subBlockSize();
        int rest = size % block;
        int remainder = rest % sub;
        int pages = remainder & -PAGE;
        int partial = remainder - pages;
        return (long) (size / block) * block + (long) (rest / sub) * sub
                + (pages > 0 ? pool.reservedSizeFor(pages) : 0) + (partial > 0 ? pool.reservedSizeFor(partial) : 0);
    }

    private void assertEverythingReturns() {
        assertEquals(0, blocks.stats().chunks(), blocks.stats()::toString);
        assertEquals(0, small.stats().chunks(), small.stats()::toString);
        blocks.trim();
        small.trim();
        pool.trim();
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals(0, stats.committedBytes(), stats::report);
        assertEquals(stats.chunksAllocated(), stats.chunksReleased());
    }

    @Test
    void aPayloadIsBlocksThenSubBlocksThenExactPagesThenOneSmallElement() {
        int size = 2 * BLOCK + 3 * SUB + 3 * PAGE + 1000;
        List<Allocation> parts = blocks.allocate(size);
        assertEquals(7, parts.size(), parts::toString);
        for (int i = 0; i < 2; i++) {
            assertEquals(BLOCK, parts.get(i).reservedBytes());
            assertEquals(BLOCK, parts.get(i).requestedBytes());
            assertTrue(isSlot(parts.get(i)));
        }
        for (int i = 2; i < 5; i++) {
            assertEquals(SUB, parts.get(i).reservedBytes());
            assertTrue(isSlot(parts.get(i)));
        }
        assertEquals(3 * PAGE, parts.get(5).requestedBytes(), "the remainder's whole pages");
        assertEquals(3 * PAGE, parts.get(5).reservedBytes(), "as an exact run");
        assertEquals(1000, parts.get(6).requestedBytes(), "the last partial page");
        assertEquals(pool.reservedSizeFor(1000), parts.get(6).reservedBytes());
        assertFalse(isSlot(parts.get(5)) || isSlot(parts.get(6)), "both from the general pool");
        for (Allocation part : parts) {
            assertEquals("block_cache", part.category().name());
        }
        assertEquals(size, requested(parts));
        assertEquals(expectedReserved(blocks, size), reserved(parts));

        CategoryStats category = pool.stats().category("block_cache");
        assertEquals(size, category.requested());
        assertEquals(reserved(parts), category.reserved());
        assertEquals(7, category.liveBuffers(), "every part is one allocation");
        BlockStats stats = blocks.stats();
        assertEquals(2, stats.liveBlocks());
        assertEquals(3, stats.liveSubBlocks());
        assertEquals(13, stats.freeSubBlocks());
        assertEquals(3, stats.chunks(), "two blocks, and one block cut into sub-blocks");
        assertEquals(0, stats.freeBlocks());
        assertEquals(13L * SUB, stats.freeSlotBytes());

        parts.forEach(pool::free);
        BlockStats after = blocks.stats();
        assertEquals(0, after.liveBlocks());
        assertEquals(0, after.liveSubBlocks());
        assertEquals(0, after.chunks(), "chunks whose slots are all free go back at once");
        assertEquals(0, pool.stats().category("block_cache").requested());
        assertEverythingReturns();
    }

    @Test
    void aPayloadHasOnlyThePartsItNeeds() {
        assertParts(BLOCK, 1);
        assertParts(SUB, 1);
        assertParts(3 * BLOCK + 2 * SUB, 5);
        assertParts(PAGE, 1); // one page: an exact run, nothing else
        assertParts(1, 1);
        assertParts(SUB - 1, 2); // seven pages and a partial one
        assertEverythingReturns();
    }

    private void assertParts(int size, int expectedParts) {
        List<Allocation> parts = blocks.allocate(size);
        assertEquals(expectedParts, parts.size(), () -> size + ": " + parts);
        assertEquals(size, requested(parts));
        assertEquals(expectedReserved(blocks, size), reserved(parts));
        parts.forEach(pool::free);
    }

    /**
     * Every payload from 64 KiB to 8 MiB (a sweep with an odd step, the
     * sizes just past each sub-block, page and size-class edge, and seeded
     * random sizes) reserves exactly blocks + sub-blocks + pages + one size
     * class of its last partial page: less than 512 bytes over, within 2%.
     */
    @Test
    void reservedStaysWithinTwoPercentOfRequestedFrom64KiBTo8MiB() {
        List<Integer> sizes = new ArrayList<>();
        for (int size = 64 * KIB; size <= 8 * BLOCK; size += 4093) {
            sizes.add(size);
        }
        for (int subs = 1; subs < 16; subs++) {
            for (int pages = 0; pages < 8; pages++) {
                for (int partial : new int[] {1, 129, 4097, PAGE - 1}) {
                    sizes.add(subs * SUB + pages * PAGE + partial);
                }
            }
        }
        Random random = new Random(3);
        for (int i = 0; i < 500; i++) {
            sizes.add(64 * KIB + random.nextInt(8 * BLOCK - 64 * KIB + 1));
        }
        double worst = 0;
        for (int size : sizes) {
            List<Allocation> parts = blocks.allocate(size);
            long reserved = reserved(parts);
            assertEquals(size, requested(parts));
            assertEquals(expectedReserved(blocks, size), reserved, "at " + size);
            long waste = reserved - size;
            assertTrue(waste >= 0 && waste < 512, size + " reserves " + waste + " bytes more");
            double ratio = (double) reserved / size;
            assertTrue(ratio <= 1.02, "within 2% at " + size + ": " + ratio);
            worst = Math.max(worst, ratio);
            parts.forEach(pool::free);
        }
        assertTrue(worst < 1.01, "worst " + worst);
        assertEverythingReturns();
    }

    /**
     * A seeded LRU-like workload on both block pools (payloads of 64 KiB to
     * 8 MiB, random victims): after every few operations the category figures
     * equal a model of the live payloads, the block pool's counts of live
     * blocks and sub-blocks equal the parts handed out, and its chunks are
     * exactly its live, free and cut blocks.
     */
    @Test
    void seededWorkloadIsAccountedExactly() {
        for (BlockPool under : List.of(blocks, small)) {
            String name = under.category().name();
            Random random = new Random(5);
            List<List<Allocation>> live = new ArrayList<>();
            long requested = 0;
            long reserved = 0;
            long allocations = 0;
            long releases = 0;
            for (int i = 0; i < 1500; i++) {
                if (live.isEmpty() || live.size() < 24 && random.nextInt(100) < 55) {
                    int size = 64 * KIB + random.nextInt(8 * BLOCK - 64 * KIB + 1);
                    List<Allocation> parts = under.allocate(size);
                    assertEquals(size, requested(parts));
                    assertEquals(expectedReserved(under, size), reserved(parts));
                    live.add(parts);
                    requested += size;
                    reserved += reserved(parts);
                    allocations += parts.size();
                } else {
                    List<Allocation> victim = live.remove(random.nextInt(live.size()));
                    requested -= requested(victim);
                    reserved -= reserved(victim);
                    releases += victim.size();
                    victim.forEach(pool::free);
                }
                if (i % 50 == 0) {
                    PoolStats stats = pool.stats();
                    CategoryStats category = stats.category(name);
                    assertEquals(requested, category.requested());
                    assertEquals(reserved, category.reserved());
                    assertEquals(allocations, category.allocations());
                    assertEquals(releases, category.releases());
                    assertEquals((long) stats.chunks() * CHUNK, stats.committedBytes(), "no huge regions");
                    assertShapeMatches(under, live);
                }
            }
            live.forEach(p -> p.forEach(pool::free));
            assertEquals(0, under.stats().chunks());
        }
        assertEverythingReturns();
    }

    /** The block pool's figures against the parts handed out. */
    private void assertShapeMatches(BlockPool under, List<List<Allocation>> live) {
        long liveBlocks = 0;
        long liveSubBlocks = 0;
        for (List<Allocation> parts : live) {
            for (Allocation part : parts) {
                if (isSlot(part)) {
                    if (part.reservedBytes() == under.blockSize()) {
                        liveBlocks++;
                    } else {
                        assertEquals(under.subBlockSize(), part.reservedBytes());
                        liveSubBlocks++;
                    }
                }
            }
        }
        BlockStats stats = under.stats();
        assertEquals(liveBlocks, stats.liveBlocks(), stats::toString);
        assertEquals(liveSubBlocks, stats.liveSubBlocks(), stats::toString);
        long subSlots = stats.liveSubBlocks() + stats.freeSubBlocks();
        assertEquals(0, subSlots % BlockPool.SUB_BLOCKS_PER_BLOCK, "sub-blocks come in whole blocks");
        long cutBlocks = subSlots / BlockPool.SUB_BLOCKS_PER_BLOCK;
        long blocksPerChunk = CHUNK / under.blockSize();
        assertEquals(stats.chunks() * blocksPerChunk, stats.liveBlocks() + stats.freeBlocks() + cutBlocks, stats::toString);
        assertTrue(stats.freeSubBlocks() < cutBlocks * BlockPool.SUB_BLOCKS_PER_BLOCK || cutBlocks == 0,
                "a block whose sub-blocks are all free is a whole block again: " + stats);
    }

    /**
     * A chunk holding blocks goes back to the pool as soon as its last block
     * is free (the arena keeps it idle for reuse, and {@code pool.trim()}
     * gives it back); a block cut into sub-blocks is a whole block again as
     * soon as its last sub-block is free.
     */
    @Test
    void chunksGoBackWhenAllTheirBlocksAreFree() {
        List<Allocation> four = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Allocation block = new Allocation();
            assertTrue(small.allocateBlock(block));
            assertEquals(SMALL_BLOCK, block.requestedBytes());
            assertEquals(SMALL_BLOCK, block.reservedBytes());
            four.add(block);
        }
        BlockStats full = small.stats();
        assertEquals(1, full.chunks());
        assertEquals(4, full.liveBlocks());
        assertEquals(0, full.freeBlocks());
        for (int i = 0; i < 3; i++) {
            pool.free(four.get(i));
        }
        BlockStats one = small.stats();
        assertEquals(1, one.chunks(), "one live block holds the chunk");
        assertEquals(1, one.liveBlocks());
        assertEquals(3, one.freeBlocks());
        assertEquals(3L * SMALL_BLOCK, one.freeSlotBytes());
        pool.free(four.get(3));
        assertEquals(0, small.stats().chunks());
        assertEquals(0, small.trim(), "nothing empty was held");
        PoolStats emptied = pool.stats();
        assertEquals(1, emptied.idleChunks(), "the arena keeps the chunk for reuse");
        assertEquals(CHUNK, emptied.committedBytes());
        long taken = emptied.chunksAllocated();

        List<Allocation> subs = new ArrayList<>();
        for (int i = 0; i < 17; i++) {
            List<Allocation> parts = small.allocate(SMALL_SUB);
            assertEquals(1, parts.size());
            subs.add(parts.get(0));
        }
        assertEquals(taken, pool.stats().chunksAllocated(), "the idle chunk was reused");
        BlockStats cut = small.stats();
        assertEquals(1, cut.chunks());
        assertEquals(17, cut.liveSubBlocks());
        assertEquals(15, cut.freeSubBlocks(), "two blocks cut into sub-blocks");
        assertEquals(0, cut.liveBlocks());
        assertEquals(2, cut.freeBlocks());
        pool.free(subs.remove(16)); // the second cut block's only sub-block: a whole block again
        BlockStats whole = small.stats();
        assertEquals(0, whole.freeSubBlocks());
        assertEquals(3, whole.freeBlocks());
        subs.forEach(pool::free);
        assertEquals(0, small.stats().chunks());
        pool.trim();
        assertEquals(0, pool.committedBytes(), "trim gives the idle chunk back");
        assertEverythingReturns();
    }

    @Test
    void badInputIsRejectedWithTheCategoryAndTheSize() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> blocks.allocate(0));
        assertTrue(zero.getMessage().contains("block_cache") && zero.getMessage().endsWith(": 0"), zero.getMessage());
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> blocks.allocate(-1));
        assertTrue(negative.getMessage().contains("block_cache") && negative.getMessage().contains("-1"),
                negative.getMessage());
        assertThrows(IllegalArgumentException.class, () -> pool.blocks("x", 3000, 1), "not a power of two");
        assertThrows(IllegalArgumentException.class, () -> pool.blocks("x", 2 * CHUNK, 1), "larger than a chunk");
        assertThrows(IllegalArgumentException.class, () -> pool.blocks("x", PAGE / 2, 1), "smaller than a page");
        assertThrows(IllegalArgumentException.class, () -> pool.blocks("x", BLOCK, 0), "no stripes");
        assertEquals(0, pool.stats().allocations(), "nothing was counted");
        Allocation live = new Allocation();
        assertTrue(blocks.allocateBlock(live));
        assertThrows(IllegalStateException.class, () -> blocks.allocateBlock(live), "the holder is still live");
        pool.free(live);
        assertEverythingReturns();
    }

    /** Freeing a block, a sub-block or a remainder twice throws, and leaves slots and accounting alone. */
    @Test
    void doubleFreeIsRejectedAndLeavesTheAccountingAlone() {
        List<Allocation> parts = blocks.allocate(BLOCK + SUB + PAGE + 10);
        List<Allocation> other = blocks.allocate(BLOCK + SUB);
        for (Allocation part : parts) {
            pool.free(part);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.free(part));
            assertTrue(e.getMessage().contains("double free"), e.getMessage());
        }
        CategoryStats category = pool.stats().category("block_cache");
        assertEquals(BLOCK + SUB, category.requested());
        assertEquals(2, category.liveBuffers());
        BlockStats stats = blocks.stats();
        assertEquals(1, stats.liveBlocks());
        assertEquals(1, stats.liveSubBlocks());
        other.forEach(pool::free);
        assertEverythingReturns();
    }

    /**
     * The race checked: parts are taken on several threads from the stripes
     * of both block pools and released on other threads, so a slot goes back
     * to its chunk's stripe (under that stripe's lock) from a thread that did
     * not take it, while the stripe's own threads take slots from the same
     * chunks. Stamps at both ends of every part prove no two live parts
     * overlap; at the end every chunk is back and the pool gives all its
     * memory up.
     */
    @Test
    void partsReleasedOnOtherThreadsNeverOverlap() throws Exception {
        int threads = 4;
        int perThread = 250;
        List<BlockingQueue<Payload>> queues = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            queues.add(new ArrayBlockingQueue<>(perThread));
        }
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int self = t;
            tasks.add(() -> {
                Random random = new Random(100 + self);
                BlockingQueue<Payload> mine = queues.get(self);
                BlockingQueue<Payload> next = queues.get((self + 1) % threads);
                int received = 0;
                for (int i = 0; i < perThread; i++) {
                    BlockPool from = random.nextBoolean() ? blocks : small;
                    List<Allocation> parts = from.allocate(1 + random.nextInt(3 * BLOCK));
                    next.add(Payload.write(parts, ((long) self << 32) | i));
                    Payload theirs;
                    while ((theirs = mine.poll()) != null) {
                        theirs.checkAndFree(pool);
                        received++;
                    }
                }
                while (received < perThread) {
                    ConcurrentTasks.takeFromNeighbour(mine).checkAndFree(pool);
                    received++;
                }
            });
        }
        ConcurrentTasks.runConcurrently(tasks);
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertTrue(stats.category("block_cache").allocations() > 0 && stats.category("small_blocks").allocations() > 0,
                "both block pools were used");
        assertEverythingReturns();
    }

    /**
     * The race checked: on a single stripe, threads cut blocks into
     * sub-blocks (the sub-block stripe's lock, then the block stripe's) while
     * other threads free the last sub-block of a block, which gives that
     * block back to the block stripe; no block may be cut twice or lost.
     */
    @Test
    void subBlockRegionsComeAndGoOnOneStripeWithoutLosingABlock() throws Exception {
        BlockPool contended = pool.blocks("contended", SMALL_BLOCK, 1);
        int threads = 4;
        int perThread = 1500;
        List<BlockingQueue<Payload>> queues = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            queues.add(new ArrayBlockingQueue<>(perThread));
        }
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int self = t;
            tasks.add(() -> {
                Random random = new Random(200 + self);
                BlockingQueue<Payload> mine = queues.get(self);
                BlockingQueue<Payload> next = queues.get((self + 1) % threads);
                List<Payload> kept = new ArrayList<>();
                int received = 0;
                for (int i = 0; i < perThread; i++) {
                    List<Allocation> parts = contended.allocate(SMALL_SUB * (1 + random.nextInt(3)));
                    Payload payload = Payload.write(parts, ((long) self << 32) | i);
                    if (random.nextBoolean()) {
                        next.add(payload); // freed on the neighbour's thread
                    } else {
                        kept.add(payload);
                        next.add(Payload.write(contended.allocate(SMALL_SUB), ~(((long) self << 32) | i)));
                    }
                    if (kept.size() > 8) {
                        kept.remove(random.nextInt(kept.size())).checkAndFree(pool);
                    }
                    Payload theirs;
                    while ((theirs = mine.poll()) != null) {
                        theirs.checkAndFree(pool);
                        received++;
                    }
                }
                kept.forEach(p -> p.checkAndFree(pool));
                while (received < perThread) {
                    ConcurrentTasks.takeFromNeighbour(mine).checkAndFree(pool);
                    received++;
                }
            });
        }
        ConcurrentTasks.runConcurrently(tasks);
        BlockStats stats = contended.stats();
        assertEquals(0, stats.chunks(), stats::toString);
        assertEquals(0, stats.liveSubBlocks());
        CategoryStats category = pool.stats().category("contended");
        assertEquals(0, category.requested());
        assertEquals(category.allocations(), category.releases());
        assertEverythingReturns();
    }

    /** The parts of one payload, each stamped at its first and last bytes. */
    private record Payload(List<Allocation> parts, long stamp) {

        static Payload write(List<Allocation> parts, long stamp) {
            for (int i = 0; i < parts.size(); i++) {
                Allocation p = parts.get(i);
                long mark = stamp + i;
                int n = p.requestedBytes();
                if (n >= 16) {
                    p.memory().putLong(p.offset(), mark);
                    p.memory().putLong(p.offset() + n - 8, ~mark);
                } else {
                    p.memory().put(p.offset(), (byte) mark);
                }
            }
            return new Payload(parts, stamp);
        }

        void checkAndFree(MemoryPool pool) {
            for (int i = 0; i < parts.size(); i++) {
                Allocation p = parts.get(i);
                long mark = stamp + i;
                int n = p.requestedBytes();
                if (n >= 16) {
                    assertEquals(mark, p.memory().getLong(p.offset()), "the first bytes are still this part's");
                    assertEquals(~mark, p.memory().getLong(p.offset() + n - 8), "the last bytes too");
                } else {
                    assertEquals((byte) mark, p.memory().get(p.offset()));
                }
            }
            parts.forEach(pool::free);
        }
    }
}
