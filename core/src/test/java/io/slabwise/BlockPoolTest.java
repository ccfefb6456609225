package io.slabwise;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The block pool: payload layout (blocks, sub-blocks, mini-blocks), what a
 * payload reserves, exact accounting, the choice of region a slot is taken
 * from, idle blocks (kept up to a limit, reused, given back by trim, decay
 * and the ceiling), bad input, and release from other threads.
 *
 * <p>Two block pools are used: {@code block_cache} with the default 1 MiB
 * blocks (64 KiB sub-blocks, 2 KiB mini-blocks), and {@code small_blocks}
 * with 256 KiB blocks (16 KiB sub-blocks, 512-byte mini-blocks). Every block
 * is a region of its own from the chunk source, so nothing a block pool holds
 * is a pool chunk: the pool's committed bytes are its chunks, its huge
 * regions and its block regions.
 */
class BlockPoolTest {

    private static final int KIB = 1024;
    /** Every chunk of this size ({@code firstChunkSize} too): the tests count pages and bytes per chunk. */
    private static final int CHUNK = 1 << 20;
    private static final int BLOCK = 1 << 20;
    private static final int SUB = BLOCK / 16;
    private static final int MINI = SUB / 32;
    private static final int SMALL_BLOCK = 256 * KIB;
    private static final int SMALL_SUB = SMALL_BLOCK / 16;
    private static final int SMALL_MINI = SMALL_SUB / 32;

    private final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(2).arenaSpreadBytes(0).build());
    private final BlockPool blocks = pool.blocks("block_cache");
    private final BlockPool small = pool.blocks("small_blocks", SMALL_BLOCK, 2);

    private static long requested(List<Allocation> parts) {
        return parts.stream().mapToLong(Allocation::requestedBytes).sum();
    }

    private static long reserved(List<Allocation> parts) {
        return parts.stream().mapToLong(Allocation::reservedBytes).sum();
    }

    private static boolean isSlot(Allocation part) {
        return part.releaser != null && part.releaser.getClass().getEnclosingClass() == BlockPool.class;
    }

    /** How many mini-blocks hold what is left of {@code size} after its whole blocks and sub-blocks. */
    private static int miniBlocksFor(BlockPool from, int size) {
        int remainder = size % from.blockSize() % from.subBlockSize();
        return (remainder + from.miniBlockSize() - 1) / from.miniBlockSize();
    }

    /** What a payload of {@code size} bytes reserves: its blocks, its sub-blocks, the remainder in whole mini-blocks. */
    private static long expectedReserved(BlockPool from, int size) {
        int block = from.blockSize();
        int sub = from.subBlockSize();
        return (long) (size / block) * block + (long) (size % block / sub) * sub
                + (long) miniBlocksFor(from, size) * from.miniBlockSize();
    }

    /**
     * The parts of a payload of {@code size} bytes, in order: whole blocks,
     * whole sub-blocks, then mini-blocks, all full but the last, which holds
     * what is left; every part is a slot of the block pool, in its category.
     */
    private static void assertLayout(BlockPool from, int size, List<Allocation> parts) {
        int block = from.blockSize();
        int sub = from.subBlockSize();
        int mini = from.miniBlockSize();
        int wholeBlocks = size / block;
        int wholeSubBlocks = size % block / sub;
        int minis = miniBlocksFor(from, size);
        assertEquals(wholeBlocks + wholeSubBlocks + minis, parts.size(), () -> size + ": " + parts);
        int left = size;
        for (int i = 0; i < parts.size(); i++) {
            Allocation part = parts.get(i);
            int slot = i < wholeBlocks ? block : i < wholeBlocks + wholeSubBlocks ? sub : mini;
            int index = i;
            assertEquals(slot, part.reservedBytes(), () -> "part " + index + " of " + size + ": " + parts);
            assertEquals(Math.min(slot, left), part.requestedBytes(), () -> "part " + index + " of " + size + ": " + parts);
            assertTrue(isSlot(part), "no part comes from the general pool");
            assertSame(from.category(), part.category());
            left -= part.requestedBytes();
        }
        assertEquals(0, left);
        assertEquals(size, requested(parts));
        assertEquals(expectedReserved(from, size), reserved(parts));
        assertTrue(reserved(parts) - size < mini, () -> size + " reserves " + (reserved(parts) - size) + " bytes more");
    }

    /** Nothing live is left: the block pools hold idle blocks only, and trimming gives every byte back. */
    private void assertEverythingReturns() {
        for (BlockPool under : List.of(blocks, small)) {
            BlockStats stats = under.stats();
            assertEquals(0, stats.liveBlocks() + stats.liveSubBlocks() + stats.liveMiniBlocks(), stats::toString);
            assertEquals(0, stats.freeSubBlocks() + stats.freeMiniBlocks(), "no cut region is left: " + stats);
            assertEquals(stats.idleBlocks(), stats.blocks(), "only idle blocks are held: " + stats);
            assertTrue(stats.idleBlocks() <= pool.config().maxIdleBlocks(), stats::toString);
            assertEquals(stats.idleBlocks(), under.trim(), "trim gives back every idle block");
            assertEquals(0, under.stats().blocks());
        }
        pool.trim();
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals(0, stats.blockRegionBytes(), stats::report);
        assertEquals(0, stats.committedBytes(), stats::report);
        assertEquals(stats.chunksAllocated(), stats.chunksReleased());
    }

    /**
     * The pool's identity when quiet: the regions it holds are its chunks, its
     * huge regions and its block regions, committed bytes are those regions and
     * the room left in their groups, and the block regions are the blocks the
     * block pools hold.
     */
    private static void assertCommittedIsChunksHugeAndBlocks(MemoryPool pool, PoolStats stats, BlockPool... pools) {
        long blockBytes = 0;
        for (BlockPool under : pools) {
            blockBytes += under.stats().blockBytes();
        }
        assertEquals(blockBytes, stats.blockRegionBytes(), stats::report);
        long regionBytes = PoolMemory.regionBytes(pool);
        assertEquals(stats.chunkBytes() + stats.hugeCommittedBytes() + stats.blockRegionBytes(),
                regionBytes, stats::report);
        assertTrue(stats.committedBytes() >= regionBytes, stats::report);
    }

    /**
     * A payload of 2 blocks, 3 sub-blocks and 5000 bytes is exactly those
     * blocks and sub-blocks, then three mini-blocks (2 KiB, 2 KiB, and 904
     * bytes of the last), all in one sub-block; the category, the pool and
     * the block pool account every part, and nothing comes from the general
     * pool.
     */
    @Test
    void aPayloadIsBlocksThenSubBlocksThenMiniBlocksTheLastPartlyUsed() {
        int size = 2 * BLOCK + 3 * SUB + 5000;
        List<Allocation> parts = blocks.allocate(size);
        assertEquals(8, parts.size(), parts::toString);
        int[] requested = {BLOCK, BLOCK, SUB, SUB, SUB, MINI, MINI, 5000 - 2 * MINI};
        int[] reserved = {BLOCK, BLOCK, SUB, SUB, SUB, MINI, MINI, MINI};
        for (int i = 0; i < parts.size(); i++) {
            assertEquals(requested[i], parts.get(i).requestedBytes(), "part " + i);
            assertEquals(reserved[i], parts.get(i).reservedBytes(), "part " + i);
            assertTrue(isSlot(parts.get(i)), "part " + i + " is a slot of the block pool, not of the general pool");
            assertEquals("block_cache", parts.get(i).category().name());
        }
        assertLayout(blocks, size, parts);
        long reservedBytes = 2L * BLOCK + 3 * SUB + 3 * MINI;
        assertEquals(reservedBytes, reserved(parts));
        assertEquals(3L * MINI - 5000, reserved(parts) - requested(parts), "less than one mini-block over");
        Allocation firstMini = parts.get(5);
        for (Allocation mini : parts.subList(5, 8)) {
            assertSame(firstMini.chunk, mini.chunk, "the mini-blocks share a block");
            assertEquals((firstMini.address() - firstMini.chunk.region.address()) / SUB,
                    (mini.address() - mini.chunk.region.address()) / SUB, "and a sub-block of it");
        }
        for (int i = 0; i < parts.size(); i++) {
            Patterns.write(parts.get(i), i);
        }
        for (int i = 0; i < parts.size(); i++) {
            Patterns.verify(parts.get(i), i); // no two parts overlap
        }

        PoolStats pooled = pool.stats();
        CategoryStats category = pooled.category("block_cache");
        assertEquals(size, category.requested());
        assertEquals(reservedBytes, category.reserved());
        assertEquals(8, category.liveBuffers(), "every part is one allocation");
        assertEquals(8, category.allocations());
        assertEquals(size, pooled.requestedBytes(), pooled::report);
        assertEquals(reservedBytes, pooled.reservedBytes());
        assertEquals(0, pooled.chunks(), "no chunk: nothing of a payload comes from the general pool");
        assertEquals(0, pooled.chunksAllocated());
        assertEquals(3L * BLOCK, pooled.blockRegionBytes(), "two blocks, one cut into sub-blocks");
        assertEquals(3L * BLOCK, pooled.committedBytes());
        BlockStats stats = blocks.stats();
        assertEquals("block_cache", stats.category());
        assertEquals(BLOCK, stats.blockSize());
        assertEquals(SUB, stats.subBlockSize());
        assertEquals(MINI, stats.miniBlockSize());
        assertEquals(3, stats.blocks(), stats::toString);
        assertEquals(2, stats.liveBlocks(), "the block cut into sub-blocks is not in use whole");
        assertEquals(0, stats.idleBlocks());
        assertEquals(3, stats.liveSubBlocks(), "the sub-block cut into mini-blocks is not in use whole");
        assertEquals(12, stats.freeSubBlocks());
        assertEquals(3, stats.liveMiniBlocks());
        assertEquals(29, stats.freeMiniBlocks());
        assertEquals(3L * BLOCK, stats.blockBytes());
        assertEquals(12L * SUB + 29L * MINI, stats.freeSlotBytes());
        assertEquals(stats.freeSlotBytes(), pooled.carvedFreeBytes(), "the free room inside the blocks held");
        assertCommittedIsChunksHugeAndBlocks(pool, pooled, blocks, small);

        parts.forEach(pool::free);
        int kept = Math.min(3, pool.config().maxIdleBlocks());
        BlockStats after = blocks.stats();
        assertEquals(0, after.liveBlocks() + after.liveSubBlocks() + after.liveMiniBlocks(), after::toString);
        assertEquals(0, after.freeSubBlocks() + after.freeMiniBlocks(), "a region whose slots are all free is whole again");
        assertEquals(kept, after.idleBlocks(), "emptied blocks are kept for reuse");
        assertEquals(kept, after.blocks());
        assertEquals((long) kept * BLOCK, pool.committedBytes());
        CategoryStats released = pool.stats().category("block_cache");
        assertEquals(0, released.requested());
        assertEquals(0, released.reserved());
        assertEquals(8, released.releases());
        assertEverythingReturns();
    }

    /** With 256 KiB blocks a mini-block is 512 bytes: 2 blocks, 3 sub-blocks and 1000 bytes are 7 parts. */
    @Test
    void miniBlocksScaleWithTheBlockSize() {
        assertEquals(SMALL_SUB, small.subBlockSize());
        assertEquals(SMALL_MINI, small.miniBlockSize());
        int size = 2 * SMALL_BLOCK + 3 * SMALL_SUB + 1000;
        List<Allocation> parts = small.allocate(size);
        assertLayout(small, size, parts);
        assertEquals(7, parts.size());
        assertEquals(1000 - SMALL_MINI, parts.get(6).requestedBytes());
        BlockStats stats = small.stats();
        assertEquals(2, stats.liveMiniBlocks());
        assertEquals(30, stats.freeMiniBlocks());
        assertEquals(3L * SMALL_BLOCK, pool.stats().blockRegionBytes());
        parts.forEach(pool::free);
        assertEverythingReturns();
    }

    @Test
    void aPayloadHasOnlyThePartsItNeeds() {
        assertParts(BLOCK, 1);
        assertParts(SUB, 1);
        assertParts(MINI, 1);
        assertParts(1, 1);
        assertParts(MINI + 1, 2);
        assertParts(3 * BLOCK + 2 * SUB, 5);
        assertParts(8 * KIB, 4); // four mini-blocks: no run of pages any more
        assertParts(SUB - 1, 32); // 31 full mini-blocks and a partial one
        assertParts(BLOCK - 1, 15 + 32); // the most parts after the blocks
        assertParts(2 * BLOCK + 1, 3);
        assertEverythingReturns();
    }

    private void assertParts(int size, int expectedParts) {
        List<Allocation> parts = blocks.allocate(size);
        assertEquals(expectedParts, parts.size(), () -> size + ": " + parts);
        assertLayout(blocks, size, parts);
        parts.forEach(pool::free);
    }

    /**
     * Every payload from 64 KiB to 8 MiB (a sweep with an odd step, the
     * sizes just past each sub-block and mini-block edge, and seeded random
     * sizes) reserves exactly blocks + sub-blocks + whole mini-blocks: less
     * than one mini-block over, under 3.2% from 64 KiB and under 0.2% from
     * 1 MiB up.
     */
    @Test
    void reservedIsLessThanOneMiniBlockOverRequestedFrom64KiBTo8MiB() {
        List<Integer> sizes = new ArrayList<>();
        for (int size = 64 * KIB; size <= 8 * BLOCK; size += 4093) {
            sizes.add(size);
        }
        for (int wholeBlocks : new int[] {0, 1, 5}) {
            for (int subs = wholeBlocks == 0 ? 1 : 0; subs < 16; subs++) {
                for (int minis = 0; minis < 32; minis += 3) {
                    for (int partial : new int[] {1, 129, MINI / 2, MINI - 1}) {
                        sizes.add(wholeBlocks * BLOCK + subs * SUB + minis * MINI + partial);
                    }
                }
            }
        }
        Random random = new Random(3);
        for (int i = 0; i < 500; i++) {
            sizes.add(64 * KIB + random.nextInt(8 * BLOCK - 64 * KIB + 1));
        }
        long worstWaste = 0;
        for (int size : sizes) {
            List<Allocation> parts = blocks.allocate(size);
            assertLayout(blocks, size, parts);
            long waste = reserved(parts) - size;
            assertTrue(waste >= 0 && waste < MINI, size + " reserves " + waste + " bytes more");
            double ratio = (double) reserved(parts) / size;
            assertTrue(ratio < 1.032, "under 3.2% at " + size + ": " + ratio);
            if (size >= BLOCK) {
                assertTrue(ratio < 1.002, "under 0.2% from a block up, at " + size + ": " + ratio);
            }
            worstWaste = Math.max(worstWaste, waste);
            parts.forEach(pool::free);
        }
        assertEquals(MINI - 1, worstWaste, "one byte into a mini-block wastes the rest of it");
        assertEquals(0, pool.stats().chunksAllocated(), "the general pool was never used");
        assertEverythingReturns();
    }

    /**
     * A seeded LRU-like workload on both block pools (payloads of 64 KiB to
     * 8 MiB, random victims): after every few operations the category figures
     * equal a model of the live payloads, the block pool's counts of live
     * blocks, sub-blocks and mini-blocks equal the parts handed out, its
     * blocks are exactly its live, idle and cut blocks, and the pool's
     * committed bytes are its chunks (none), huge regions (none) and block
     * regions, which are the blocks both block pools hold.
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
                    assertLayout(under, size, parts);
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
                    assertEquals(0, stats.chunks(), "nothing comes from the general pool");
                    assertEquals(0, stats.hugeCommittedBytes());
                    assertCommittedIsChunksHugeAndBlocks(pool, stats, blocks, small);
                    assertEquals(blocks.stats().freeSlotBytes() + small.stats().freeSlotBytes(), stats.carvedFreeBytes(),
                            "the free room inside the blocks held");
                    assertShapeMatches(under, live);
                }
            }
            live.forEach(p -> p.forEach(pool::free));
            BlockStats emptied = under.stats();
            assertEquals(emptied.idleBlocks(), emptied.blocks(), emptied::toString);
            assertEquals(pool.config().maxIdleBlocks(), emptied.idleBlocks(), "the limit of idle blocks is kept");
        }
        assertEverythingReturns();
    }

    /** The block pool's figures against the parts handed out. */
    private void assertShapeMatches(BlockPool under, List<List<Allocation>> live) {
        long liveBlocks = 0;
        long liveSubBlocks = 0;
        long liveMiniBlocks = 0;
        for (List<Allocation> parts : live) {
            for (Allocation part : parts) {
                assertTrue(isSlot(part));
                if (part.reservedBytes() == under.blockSize()) {
                    liveBlocks++;
                } else if (part.reservedBytes() == under.subBlockSize()) {
                    liveSubBlocks++;
                } else {
                    assertEquals(under.miniBlockSize(), part.reservedBytes());
                    liveMiniBlocks++;
                }
            }
        }
        BlockStats stats = under.stats();
        assertEquals(liveBlocks, stats.liveBlocks(), stats::toString);
        assertEquals(liveSubBlocks, stats.liveSubBlocks(), stats::toString);
        assertEquals(liveMiniBlocks, stats.liveMiniBlocks(), stats::toString);
        long miniSlots = stats.liveMiniBlocks() + stats.freeMiniBlocks();
        assertEquals(0, miniSlots % BlockPool.MINI_BLOCKS_PER_SUB_BLOCK, "mini-blocks come in whole sub-blocks: " + stats);
        long cutSubBlocks = miniSlots / BlockPool.MINI_BLOCKS_PER_SUB_BLOCK;
        long subSlots = stats.liveSubBlocks() + cutSubBlocks + stats.freeSubBlocks();
        assertEquals(0, subSlots % BlockPool.SUB_BLOCKS_PER_BLOCK, "sub-blocks come in whole blocks: " + stats);
        long cutBlocks = subSlots / BlockPool.SUB_BLOCKS_PER_BLOCK;
        assertEquals(stats.blocks(), stats.liveBlocks() + stats.idleBlocks() + cutBlocks, stats::toString);
        assertTrue(stats.idleBlocks() <= pool.config().maxIdleBlocks(), stats::toString);
        assertTrue(stats.freeSubBlocks() <= cutBlocks * (BlockPool.SUB_BLOCKS_PER_BLOCK - 1),
                "a block whose sub-blocks are all free is a whole block again: " + stats);
        assertTrue(stats.freeMiniBlocks() <= cutSubBlocks * (BlockPool.MINI_BLOCKS_PER_SUB_BLOCK - 1),
                "a sub-block whose mini-blocks are all free is a whole sub-block again: " + stats);
        assertEquals(stats.idleBlocks() * under.blockSize() + stats.freeSubBlocks() * under.subBlockSize()
                + stats.freeMiniBlocks() * under.miniBlockSize(), stats.freeSlotBytes());
    }

    /**
     * A slot is taken from the region with the fewest free slots that still
     * holds every slot of that size the payload needs, so a payload's slots
     * share a region; when no region holds them all, from the fullest region
     * with a free slot, so holes are filled first. "Every slot it needs" is
     * counted again for each slot, so a payload's last slots may fill a hole
     * its first ones passed over. Shown with sub-blocks on a single stripe:
     * block X has 3 free sub-blocks and block Y 10.
     */
    @Test
    void slotsComeFromTheFullestRegionThatHoldsThemAll() {
        BlockPool one = pool.blocks("one_stripe", BLOCK, 1);
        List<Allocation> singles = new ArrayList<>();
        for (int i = 0; i < 16 + 6; i++) {
            List<Allocation> parts = one.allocate(SUB);
            assertEquals(1, parts.size());
            singles.add(parts.get(0));
        }
        Chunk x = singles.get(0).chunk;
        Chunk y = singles.get(16).chunk;
        assertNotSame(x, y);
        for (int i = 0; i < 16; i++) {
            assertSame(x, singles.get(i).chunk, "the first block is filled before another is cut");
        }
        for (int i = 0; i < 3; i++) {
            pool.free(singles.remove(0)); // X: 3 free, Y: 10 free
        }
        BlockStats before = one.stats();
        assertEquals(2, before.blocks());
        assertEquals(13, before.freeSubBlocks());

        List<Allocation> two = one.allocate(2 * SUB);
        for (Allocation part : two) {
            assertSame(x, part.chunk, "X, the fullest that holds both");
        }
        List<Allocation> five = one.allocate(5 * SUB); // X has 1 free: too few for all five
        for (int i = 0; i < 4; i++) {
            assertSame(y, five.get(i).chunk, "Y holds all five (then four, three, two), so X's hole is passed over");
        }
        assertSame(x, five.get(4).chunk, "the last needs one slot: X's hole is the fullest region that holds it");
        pool.free(singles.remove(0)); // X: 1 free, Y: 6 free
        List<Allocation> twelve = one.allocate(12 * SUB); // none holds twelve
        assertSame(x, twelve.get(0).chunk, "no region holds them all: the fullest with a free slot, X");
        for (int i = 1; i < 7; i++) {
            assertSame(y, twelve.get(i).chunk, "then Y, the fullest left, until it is full");
        }
        Chunk z = twelve.get(7).chunk;
        assertNotSame(x, z);
        assertNotSame(y, z);
        for (int i = 7; i < 12; i++) {
            assertSame(z, twelve.get(i).chunk, "then a new block for the last five");
        }
        BlockStats full = one.stats();
        assertEquals(3, full.blocks());
        assertEquals(11, full.freeSubBlocks(), "only the new block has room");

        for (List<Allocation> parts : List.of(singles, two, five, twelve)) {
            parts.forEach(pool::free);
        }
        assertEquals(Math.min(3, pool.config().maxIdleBlocks()), one.stats().idleBlocks());
        one.trim();
        assertEquals(0, one.stats().blocks());
        assertEverythingReturns();
    }

    /** A pool of 1 MiB chunks and blocks that keeps at most {@code maxIdleBlocks} idle blocks per block pool. */
    private static MemoryPool poolKeeping(int maxIdleBlocks, Duration decay) {
        return new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxIdleBlocks(maxIdleBlocks)
                .idleChunkDecay(decay).build());
    }

    private static Allocation wholeBlock(BlockPool from) {
        Allocation block = new Allocation();
        assertTrue(from.allocateBlock(block));
        assertEquals(from.blockSize(), block.requestedBytes());
        assertEquals(from.blockSize(), block.reservedBytes());
        return block;
    }

    /**
     * A block whose slots are all free becomes an idle block: the block pool
     * keeps up to {@code maxIdleBlocks} (2 here), still committed, and gives
     * every further emptied block back to the operating system at once. A
     * block that was cut into sub-blocks and mini-blocks is idle as soon as
     * its last slot is free.
     */
    @Test
    void emptiedBlocksAreKeptIdleUpToTheLimitAndTheRestGoBackAtOnce() {
        MemoryPool own = poolKeeping(2, Duration.ofHours(1));
        BlockPool under = own.blocks("block_cache", BLOCK, 1);
        List<Allocation> five = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            five.add(wholeBlock(under));
        }
        PoolStats full = own.stats();
        assertEquals(5L * BLOCK, full.committedBytes());
        assertEquals(5L * BLOCK, full.blockRegionBytes());
        assertEquals(0, full.chunksAllocated(), "blocks are regions of their own, not parts of chunks");
        assertEquals(5, under.stats().liveBlocks());

        own.free(five.get(0));
        BlockStats one = under.stats();
        assertEquals(1, one.idleBlocks(), one::toString);
        assertEquals(5, one.blocks(), "an idle block is still held");
        assertEquals(4, one.liveBlocks());
        assertEquals(BLOCK, one.freeSlotBytes());
        assertEquals(5L * BLOCK, own.committedBytes(), "kept for reuse");
        own.free(five.get(1));
        assertEquals(2, under.stats().idleBlocks());
        assertEquals(5L * BLOCK, own.committedBytes());
        own.free(five.get(2));
        BlockStats limit = under.stats();
        assertEquals(2, limit.idleBlocks(), "no more than maxIdleBlocks are kept");
        assertEquals(4, limit.blocks());
        assertEquals(4L * BLOCK, own.committedBytes(), "the third emptied block goes back at once");
        assertEquals(4L * BLOCK, own.stats().blockRegionBytes());
        own.free(five.get(3));
        own.free(five.get(4));
        assertEquals(2L * BLOCK, own.committedBytes());
        assertEquals(2, under.stats().blocks());
        assertCommittedIsChunksHugeAndBlocks(own, own.stats(), under);

        assertEquals(2, under.trim(), "trim gives back both idle blocks");
        assertEquals(0, own.committedBytes());

        // a block cut into sub-blocks and one of its sub-blocks cut into mini-blocks
        List<Allocation> cut = under.allocate(SUB + 3 * MINI + 100);
        assertEquals(5, cut.size());
        assertEquals(BLOCK, own.committedBytes(), "one block holds all the parts");
        for (int i = 0; i < cut.size() - 1; i++) {
            own.free(cut.get(i));
            BlockStats partly = under.stats();
            assertEquals(0, partly.idleBlocks(), "a slot is still in use: " + partly);
            assertEquals(1, partly.blocks());
        }
        own.free(cut.get(cut.size() - 1));
        BlockStats emptied = under.stats();
        assertEquals(0, emptied.freeSubBlocks() + emptied.freeMiniBlocks(), emptied::toString);
        assertEquals(1, emptied.idleBlocks(), "the last slot made the cut block idle");
        assertEquals(BLOCK, own.committedBytes());

        MemoryPool keepingNone = poolKeeping(0, Duration.ofHours(1));
        BlockPool none = keepingNone.blocks("block_cache", BLOCK, 1);
        keepingNone.free(wholeBlock(none));
        assertEquals(0, none.stats().blocks(), "maxIdleBlocks(0) keeps nothing");
        assertEquals(0, keepingNone.committedBytes());
        assertEquals(1, own.trim());
        assertEquals(0, own.committedBytes());
        assertThrows(IllegalArgumentException.class, () -> PoolConfig.builder().maxIdleBlocks(-1));
        assertEquals(3, PoolConfig.builder().maxIdleBlocks(3).build().maxIdleBlocks());
    }

    /**
     * A payload takes idle blocks before it commits new memory, for whole
     * blocks and for the blocks it cuts into sub-blocks and mini-blocks; only
     * what the idle blocks cannot hold is committed.
     */
    @Test
    void aNewPayloadReusesIdleBlocksBeforeCommittingNewMemory() {
        MemoryPool own = poolKeeping(2, Duration.ofHours(1));
        BlockPool under = own.blocks("block_cache", BLOCK, 1);
        List<Allocation> first = under.allocate(3 * BLOCK);
        List<Long> addresses = first.stream().map(Allocation::address).toList();
        first.forEach(own::free);
        assertEquals(2, under.stats().idleBlocks());
        assertEquals(2L * BLOCK, own.committedBytes());

        List<Allocation> again = under.allocate(BLOCK + SUB + 10);
        assertLayout(under, BLOCK + SUB + 10, again);
        assertEquals(2L * BLOCK, own.committedBytes(), "both blocks came from the idle ones");
        assertEquals(0, under.stats().idleBlocks());
        assertEquals(2, under.stats().blocks());
        assertTrue(addresses.contains(again.get(0).address()), "an idle block, reused");
        assertTrue(addresses.contains(again.get(1).chunk.region.address()), "the sub-blocks are cut from the other");
        for (int i = 0; i < again.size(); i++) {
            Patterns.write(again.get(i), i);
        }
        List<Allocation> more = under.allocate(BLOCK);
        assertEquals(3L * BLOCK, own.committedBytes(), "no idle block left: new memory");
        for (int i = 0; i < again.size(); i++) {
            Patterns.verify(again.get(i), i);
        }
        again.forEach(own::free);
        more.forEach(own::free);
        assertEquals(2L * BLOCK, own.committedBytes());
        assertEquals(0, own.stats().requestedBytes());
        assertEquals(2, own.trim(), "the pool's trim gives back the block pool's idle blocks");
        assertEquals(0, own.committedBytes());
        assertEquals(0, own.stats().blockRegionBytes());
        assertEquals(0, under.stats().blocks());
    }

    /**
     * {@code MemoryPool.trim()} reaches every block pool the pool made and
     * gives back all their idle blocks, counting them; with nothing live the
     * pool's committed bytes reach zero.
     */
    @Test
    void poolTrimGivesBackTheIdleBlocksOfEveryBlockPool() {
        List<Allocation> large = blocks.allocate(3 * BLOCK + SUB);
        List<Allocation> little = small.allocate(SMALL_BLOCK + 100);
        large.forEach(pool::free);
        little.forEach(pool::free);
        int idleLarge = Math.min(4, pool.config().maxIdleBlocks()); // three whole blocks and a cut one
        int idleSmall = Math.min(2, pool.config().maxIdleBlocks()); // a whole block and a cut one
        assertEquals(idleLarge, blocks.stats().idleBlocks(), blocks.stats()::toString);
        assertEquals(idleSmall, small.stats().idleBlocks(), small.stats()::toString);
        assertEquals((long) idleLarge * BLOCK + (long) idleSmall * SMALL_BLOCK, pool.committedBytes());
        assertEquals(idleLarge + idleSmall, pool.trim(), "every idle block counted");
        assertEquals(0, blocks.stats().blocks());
        assertEquals(0, small.stats().blocks());
        assertEquals(0, pool.committedBytes());
        assertEquals(0, pool.trim(), "nothing left to give back");
        assertEverythingReturns();
    }

    /**
     * The decay gives back blocks idle for longer than the pool's decay time
     * and keeps the others. The pool's clock and scheduler are the test's, so
     * nothing runs behind its back and nothing waits.
     */
    @Test
    void decayGivesBackBlocksIdleLongerThanTheDecayTime() {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxIdleBlocks(4)
                .idleChunkDecay(Duration.ofMinutes(1)).ticker(time).scheduler(time).build());
        BlockPool blocks = pool.blocks("block_cache", BLOCK, 1);
        blocks.allocate(2 * BLOCK).forEach(pool::free);
        time.advance(Duration.ofSeconds(59));
        time.runScheduled();
        assertEquals(2, blocks.stats().idleBlocks(), "idle for less than the decay time");
        assertEquals(2L * BLOCK, pool.committedBytes());
        time.advance(Duration.ofSeconds(1));
        time.runScheduled();
        assertEquals(0, blocks.stats().blocks(), "idle for the decay time");
        assertEquals(0, pool.committedBytes());
        assertEquals(0, pool.stats().blockRegionBytes());
    }

    /**
     * {@code MemoryPool.trim()} gives back a sequential allocator's spare
     * chunk (to its arena, which gives it back to the OS in the same trim),
     * and counts it.
     */
    @Test
    void poolTrimGivesBackASequentialAllocatorsSpareChunk() {
        SequentialAllocator log = pool.sequential("log_cache", 1, CHUNK);
        List<Allocation> first = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            Allocation slice = new Allocation();
            assertTrue(log.allocate(64 * KIB, slice)); // exactly one chunk
            first.add(slice);
        }
        Allocation open = new Allocation();
        assertTrue(log.allocate(64 * KIB, open)); // no room left: a second chunk
        first.forEach(pool::free);
        SequentialStats spare = log.stats();
        assertEquals(1, spare.spareChunks(), spare::toString);
        assertEquals(2, spare.chunks());
        assertEquals(2L * CHUNK, pool.committedBytes());

        assertEquals(1, pool.trim(), "the spare given back to its arena, and from there to the OS: one chunk");
        SequentialStats trimmed = log.stats();
        assertEquals(0, trimmed.spareChunks(), trimmed::toString);
        assertEquals(1, trimmed.chunks(), "the open chunk, still holding a slice");
        PoolStats stats = pool.stats();
        assertEquals(CHUNK, stats.committedBytes(), stats::report);
        assertEquals(0, stats.idleChunks());
        assertEquals(1, stats.chunksReleased());
        pool.free(open);
        log.trim();
        assertEverythingReturns();
    }

    /**
     * At the ceiling (4 MiB here), idle blocks of one block pool are given
     * back so that another category's allocation succeeds: in the general
     * pool (RETURN_NULL), in a sequential allocator (FAIL) and in another
     * block pool. With the blocks live the same requests are refused, which
     * shows the ceiling is really reached. A payload refused at the ceiling
     * keeps none of its parts.
     */
    @Test
    void atTheCeilingIdleBlocksAreGivenBackForOtherCategories() {
        MemoryPool capped = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxIdleBlocks(4)
                .idleChunkDecay(Duration.ofHours(1)).maxMemory(4L * BLOCK).limitPolicy(LimitPolicy.RETURN_NULL)
                .categoryPolicy("log_cache", LimitPolicy.FAIL).build());
        BlockPool cache = capped.blocks("block_cache", BLOCK, 1);
        BlockPool other = capped.blocks("other_blocks", BLOCK, 1);
        SequentialAllocator log = capped.sequential("log_cache", 1, CHUNK);
        Category network = capped.category("network");

        List<Allocation> filling = cache.allocate(4 * BLOCK);
        assertEquals(4L * BLOCK, capped.committedBytes());
        Allocation general = new Allocation();
        assertFalse(capped.allocate(network, 100 * KIB, general), "at the ceiling with every block live");
        Allocation slice = new Allocation();
        MemoryLimitException refused = assertThrows(MemoryLimitException.class, () -> log.allocate(1000, slice));
        assertEquals(MemoryLimitException.Kind.CEILING, refused.kind());
        assertNull(other.allocate(BLOCK), "another block pool is refused too");

        filling.forEach(capped::free);
        assertEquals(4, cache.stats().idleBlocks());
        assertEquals(4L * BLOCK, capped.committedBytes(), "idle blocks hold the whole ceiling");
        assertTrue(capped.allocate(network, 100 * KIB, general), "the general pool: idle blocks given back");
        assertEquals(0, cache.stats().blocks(), "every idle block went back");
        assertEquals(CHUNK, capped.committedBytes());

        cache.allocate(3 * BLOCK).forEach(capped::free); // 3 idle blocks and the chunk: at the ceiling
        assertEquals(4L * BLOCK, capped.committedBytes());
        assertTrue(log.allocate(1000, slice), "the sequential allocator under FAIL: idle blocks given back");
        assertEquals(0, cache.stats().blocks());
        assertEquals(2L * CHUNK, capped.committedBytes());

        cache.allocate(2 * BLOCK).forEach(capped::free); // 2 idle blocks, 2 chunks: at the ceiling
        assertEquals(4L * BLOCK, capped.committedBytes());
        List<Allocation> others = other.allocate(2 * BLOCK);
        assertNotNull(others, "another block pool: the first one's idle blocks given back");
        assertEquals(0, cache.stats().blocks());
        assertEquals(2, other.stats().liveBlocks());
        assertEquals(4L * BLOCK, capped.committedBytes());

        others.forEach(capped::free); // 2 idle in the other block pool
        assertNull(cache.allocate(3 * BLOCK), "two blocks fit under the ceiling, not three");
        CategoryStats nothing = capped.stats().category("block_cache");
        assertEquals(0, nothing.requested(), "no part of a refused payload is kept");
        assertEquals(0, nothing.liveBuffers());
        assertEquals(nothing.allocations(), nothing.releases());
        assertEquals(0, cache.stats().liveBlocks());
        assertTrue(capped.committedBytes() <= 4L * BLOCK);

        capped.free(general);
        capped.free(slice);
        log.trim();
        capped.trim();
        PoolStats stats = capped.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.committedBytes(), stats::report);
    }

    /**
     * A payload that gets some of its parts and then reaches the ceiling
     * gives them back without waking itself: under {@code WAIT} it retries
     * when someone else releases memory, not in a loop on its own rollbacks
     * (which made thousands of attempts in a 300 ms wait before).
     */
    @Test
    void aWaitingPayloadDoesNotRetryOnItsOwnRollBacks() {
        MemoryPool capped = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxIdleBlocks(0)
                .maxMemory(4L * BLOCK).limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofMillis(200)).build());
        BlockPool cache = capped.blocks("block_cache", BLOCK, 1);
        List<Allocation> held = cache.allocate(3 * BLOCK);
        MemoryLimitException timedOut = assertThrows(MemoryLimitException.class, () -> cache.allocate(2 * BLOCK));
        assertTrue(timedOut.getMessage().contains("after waiting"), timedOut.getMessage());
        CategoryStats stats = capped.stats().category("block_cache");
        assertTrue(stats.allocations() - 3 <= 24, "parts taken while waiting: " + (stats.allocations() - 3));
        assertEquals(3L * BLOCK, stats.reserved(), "no part of the refused payload is kept");
        held.forEach(capped::free);
        assertEquals(0, capped.committedBytes());
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
        assertThrows(IllegalArgumentException.class, () -> pool.blocks("x", PoolConfig.PAGE_SIZE / 2, 1), "smaller than a page");
        assertThrows(IllegalArgumentException.class, () -> pool.blocks("x", BLOCK, 0), "no stripes");
        assertEquals(0, pool.stats().allocations(), "nothing was counted");
        Allocation live = new Allocation();
        assertTrue(blocks.allocateBlock(live));
        assertThrows(IllegalStateException.class, () -> blocks.allocateBlock(live), "the holder is still live");
        pool.free(live);
        assertEverythingReturns();
    }

    /** Freeing a block, a sub-block or a mini-block twice throws, and leaves slots and accounting alone. */
    @Test
    void doubleFreeIsRejectedAndLeavesTheAccountingAlone() {
        List<Allocation> parts = blocks.allocate(BLOCK + SUB + MINI + 10);
        List<Allocation> other = blocks.allocate(BLOCK + SUB + 10);
        assertEquals(4, parts.size());
        for (Allocation part : parts) {
            pool.free(part);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.free(part));
            assertTrue(e.getMessage().contains("double free"), e.getMessage());
        }
        CategoryStats category = pool.stats().category("block_cache");
        assertEquals(BLOCK + SUB + 10, category.requested());
        assertEquals(3, category.liveBuffers());
        BlockStats stats = blocks.stats();
        assertEquals(1, stats.liveBlocks());
        assertEquals(1, stats.liveSubBlocks());
        assertEquals(1, stats.liveMiniBlocks());
        other.forEach(pool::free);
        assertEverythingReturns();
    }

    /**
     * The race checked: parts are taken on several threads from the stripes
     * of both block pools and released on other threads, so a slot goes back
     * to its region's stripe (under that stripe's lock) from a thread that did
     * not take it, while the stripe's own threads take slots from the same
     * regions, and emptied blocks go idle and are reused. Stamps at both ends
     * of every part prove no two live parts overlap; at the end only idle
     * blocks are held and the pool gives all its memory up.
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
        assertCommittedIsChunksHugeAndBlocks(pool, stats, blocks, small);
        assertEverythingReturns();
    }

    /**
     * The race checked: on a single stripe, threads cut blocks into
     * sub-blocks and sub-blocks into mini-blocks (the smaller size's stripe
     * lock, then the larger's) while other threads free the last slot of a
     * region, which gives that region back to the size above; no region may
     * be cut twice or lost.
     */
    @Test
    void cutRegionsComeAndGoOnOneStripeWithoutLosingABlock() throws Exception {
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
                    int size = SMALL_SUB * (1 + random.nextInt(3)) + (random.nextBoolean() ? 0 : 1 + random.nextInt(3 * SMALL_MINI));
                    Payload payload = Payload.write(contended.allocate(size), ((long) self << 32) | i);
                    if (random.nextBoolean()) {
                        next.add(payload); // freed on the neighbour's thread
                    } else {
                        kept.add(payload);
                        next.add(Payload.write(contended.allocate(random.nextBoolean() ? SMALL_SUB : 1 + random.nextInt(SMALL_MINI)),
                                ~(((long) self << 32) | i)));
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
        assertEquals(stats.idleBlocks(), stats.blocks(), stats::toString);
        assertEquals(0, stats.liveSubBlocks() + stats.freeSubBlocks(), stats::toString);
        assertEquals(0, stats.liveMiniBlocks() + stats.freeMiniBlocks(), stats::toString);
        CategoryStats category = pool.stats().category("contended");
        assertEquals(0, category.requested());
        assertEquals(category.allocations(), category.releases());
        assertEquals(stats.idleBlocks(), contended.trim());
        assertEverythingReturns();
    }

    /**
     * The race checked: idle blocks are taken for reuse, put back and given
     * back to the OS by {@code trim()} at once, on several threads, with a
     * limit of two idle blocks: a block is never handed out twice (stamps),
     * never given back while in use, and never lost (at the end the pool's
     * committed bytes are the idle blocks, and trim brings them to zero).
     */
    @Test
    void idleBlocksReusedAndTrimmedAtOnceAreNeverLostOrSharedOut() throws Exception {
        MemoryPool own = poolKeeping(2, Duration.ofHours(1));
        BlockPool under = own.blocks("block_cache", SMALL_BLOCK, 2);
        int workers = 3;
        int perWorker = 2000;
        AtomicInteger done = new AtomicInteger();
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < workers; t++) {
            int self = t;
            tasks.add(() -> {
                try {
                    Random random = new Random(300 + self);
                    List<Payload> held = new ArrayList<>();
                    for (int i = 0; i < perWorker; i++) {
                        if (held.size() >= 3 || !held.isEmpty() && random.nextBoolean()) {
                            held.remove(random.nextInt(held.size())).checkAndFree(own);
                        }
                        int size = SMALL_BLOCK * (1 + random.nextInt(2)) + (random.nextInt(4) == 0 ? 1 + random.nextInt(SMALL_SUB) : 0);
                        held.add(Payload.write(under.allocate(size), ((long) self << 32) | i));
                    }
                    held.forEach(p -> p.checkAndFree(own));
                } finally {
                    done.incrementAndGet();
                }
            });
        }
        tasks.add(() -> { // the trimmer: trims until the workers are done
            for (long trims = 0; trims < 10_000_000L && done.get() < workers; trims++) {
                under.trim();
            }
        });
        ConcurrentTasks.runConcurrently(tasks);
        BlockStats stats = under.stats();
        assertEquals(stats.idleBlocks(), stats.blocks(), stats::toString);
        assertTrue(stats.idleBlocks() <= 2, stats::toString);
        PoolStats pooled = own.stats();
        assertEquals(0, pooled.requestedBytes(), pooled::report);
        assertEquals(stats.blockBytes(), pooled.committedBytes(), pooled::report);
        assertCommittedIsChunksHugeAndBlocks(own, pooled, under);
        assertEquals(stats.idleBlocks(), own.trim());
        assertEquals(0, own.committedBytes());
    }

    /** The parts of one payload, each stamped at its first and last bytes. */
    private record Payload(List<Allocation> parts, long stamp) {

        static Payload write(List<Allocation> parts, long stamp) {
            for (int i = 0; i < parts.size(); i++) {
                Allocation p = parts.get(i);
                long mark = stamp + i;
                int n = p.requestedBytes();
                if (n >= 16) {
                    p.chunkMemory().putLong(p.offset(), mark);
                    p.chunkMemory().putLong(p.offset() + n - 8, ~mark);
                } else {
                    p.chunkMemory().put(p.offset(), (byte) mark);
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
                    assertEquals(mark, p.chunkMemory().getLong(p.offset()), "the first bytes are still this part's");
                    assertEquals(~mark, p.chunkMemory().getLong(p.offset() + n - 8), "the last bytes too");
                } else {
                    assertEquals((byte) mark, p.chunkMemory().get(p.offset()));
                }
            }
            parts.forEach(pool::free);
        }
    }

    /**
     * A payload refused part-way (its first two blocks taken, the third over
     * the quota) was never handed out: the category counts no allocation and
     * no release for it, its quota is as before, and the blocks it took are
     * idle, ready for the next payload.
     */
    @Test
    void aPayloadRefusedPartWayCountsNothing() {
        MemoryPool quotaPool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).quota("block_cache", 2L * BLOCK)
                .limitPolicy(LimitPolicy.RETURN_NULL).chunkSource(ChunkSource.direct()).build());
        BlockPool quotaBlocks = quotaPool.blocks("block_cache");
        assertNull(quotaBlocks.allocate(3 * BLOCK));
        CategoryStats refused = quotaPool.stats().category("block_cache");
        assertEquals(0, refused.reserved(), refused.toString());
        assertEquals(0, refused.allocations(), "a refused payload is no allocation: " + refused);
        assertEquals(0, refused.releases(), "nor a release: " + refused);
        assertEquals(2, quotaBlocks.stats().idleBlocks(), "the blocks it took are idle");
        List<Allocation> fits = quotaBlocks.allocate(2 * BLOCK);
        assertEquals(2, fits.size(), "the whole quota is still there");
        CategoryStats served = quotaPool.stats().category("block_cache");
        assertEquals(2, served.allocations(), served.toString());
        fits.forEach(quotaPool::free);
        assertEquals(2, quotaPool.stats().category("block_cache").releases());
        quotaPool.close();
        assertEquals(0, quotaPool.committedBytes());
    }
}
