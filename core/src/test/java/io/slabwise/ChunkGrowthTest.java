package io.slabwise;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chunks that grow with their arena: the first ones of {@code firstChunkSize}
 * bytes, each later one the largest power of two at most an eighth of what
 * the arena holds, up to the chunk size; a run gets a chunk it fits whatever
 * the arena holds; and every figure that adds chunks up adds their own sizes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ChunkGrowthTest {

    private static final int PAGE = PoolConfig.PAGE_SIZE;
    private static final int MIB = 1 << 20;
    private static final SizeClasses SIZES = new SizeClasses(PAGE, 4 * MIB);

    private static Arena arena(int firstChunkSize) {
        CommittedMemory memory = new CommittedMemory(ChunkSource.direct(), new MemoryLimit(Long.MAX_VALUE));
        return new Arena(memory, 0, SIZES, firstChunkSize, Integer.MAX_VALUE, 64, Ticker.system());
    }

    private static Allocation take(Arena arena, int bytes) {
        Allocation a = new Allocation();
        arena.allocate(SizeClasses.indexOf(bytes), a);
        return a;
    }

    @Test
    void chunksDoubleAsTheArenaGrowsUpToTheChunkSize() {
        Arena arena = arena(MIB);
        Map<Chunk, Integer> runsPerChunk = new LinkedHashMap<>(); // in the order the arena took them
        List<Allocation> all = new ArrayList<>();
        long held = 0;
        while (held < 48L * MIB) {
            Allocation a = take(arena, 64 * 1024);
            all.add(a);
            if (!runsPerChunk.containsKey(a.chunk)) {
                held += a.chunk.chunkSize();
            }
            runsPerChunk.merge(a.chunk, 1, Integer::sum);
        }
        List<Integer> sizes = new ArrayList<>();
        for (Map.Entry<Chunk, Integer> entry : runsPerChunk.entrySet()) {
            sizes.add(entry.getKey().chunkSize());
            if (entry.getKey() != all.get(all.size() - 1).chunk) {
                // oldest first: a chunk is full before the next one is taken
                assertEquals(entry.getKey().chunkSize() / (64 * 1024), entry.getValue(), "runs in a chunk");
            }
        }
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            expected.add(MIB); // up to 16 MiB held an eighth is under 2 MiB
        }
        for (int i = 0; i < 8; i++) {
            expected.add(2 * MIB); // up to 32 MiB
        }
        for (int i = 0; i < 4; i++) {
            expected.add(4 * MIB); // the chunk size from then on
        }
        assertEquals(expected, sizes);
        assertEquals(48L * MIB, arena.heldBytes);
        assertEquals(48L * MIB, arena.snapshot().chunkBytes(), "the snapshot adds the chunks' own sizes");

        for (Allocation a : all) {
            arena.free(a.chunk, a.handle);
        }
        assertArrayEquals(new long[] {28, 48L * MIB}, arena.trim(0, 0), "every chunk and its own size given back");
        assertEquals(0, arena.heldBytes);
    }

    @Test
    void aRunLargerThanTheNextChunkGetsAChunkItFits() {
        Arena arena = arena(MIB);
        Allocation run = take(arena, 3 * MIB / 2);
        assertEquals(2 * MIB, run.chunk.chunkSize(), "1.5 MiB: the smallest power of two that holds it");
        Allocation whole = take(arena, 4 * MIB);
        assertEquals(4 * MIB, whole.chunk.chunkSize(), "a whole chunk is a chunk of the full size");
        Allocation small = take(arena, 100);
        assertSame(run.chunk, small.chunk, "small memory goes to the oldest chunk with room, not to a new 1 MiB one");
        Allocation tooBig = take(arena, 3 * MIB / 4);
        assertTrue(tooBig.chunk != run.chunk && tooBig.chunk != whole.chunk, "no room left in either");
        assertEquals(MIB, tooBig.chunk.chunkSize(), "6 MiB held: an eighth is under the first size");
    }

    /**
     * At the ceiling a chunk of the grown size may not fit where a smaller one
     * does: the arena takes the smallest chunk that holds the run, and only
     * when that does not fit either does the allocation meet the ceiling.
     */
    @Test
    void nearTheCeilingTheSmallestChunkThatHoldsTheRunIsTaken() {
        MemoryLimit limit = new MemoryLimit(17L * MIB);
        Arena arena = new Arena(new CommittedMemory(ChunkSource.direct(), limit), 0, SIZES, MIB, Integer.MAX_VALUE, 64,
                Ticker.system());
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < 16 * 16; i++) { // 16 MiB of 64 KiB runs in sixteen 1 MiB chunks
            all.add(take(arena, 64 * 1024));
        }
        assertEquals(16L * MIB, arena.heldBytes);
        Allocation next = take(arena, 64 * 1024); // the grown size is 2 MiB; 1 MiB is left under the ceiling
        assertEquals(MIB, next.chunk.chunkSize());
        all.add(next);
        for (int i = 1; i < 16; i++) {
            all.add(take(arena, 64 * 1024));
        }
        assertEquals(17L * MIB, limit.committed());
        assertThrows(CeilingReached.class, () -> take(arena, 64 * 1024), "no room for any chunk now");
        assertEquals(17L * MIB, limit.committed(), "the refused chunk left nothing committed");
        for (Allocation a : all) {
            arena.free(a.chunk, a.handle);
        }
        arena.trim(0, 0);
        assertEquals(0, limit.committed());
    }

    @Test
    void aFirstSizeOfTheChunkSizeGivesEveryChunkOneSize() {
        Arena arena = arena(4 * MIB);
        for (int i = 0; i < 4 * 64; i++) {
            assertEquals(4 * MIB, take(arena, 64 * 1024).chunk.chunkSize());
        }
    }

    @Test
    void aPoolCommitsItsFirstMemoryByTheFirstChunkSize() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).build())) {
            Allocation a = new Allocation();
            pool.allocate(pool.category("small"), 1000, a);
            assertEquals(256 * 1024, pool.committedBytes(), "the default first chunk size");
            List<Allocation> more = new ArrayList<>();
            for (int i = 0; i < 40; i++) { // 40 runs of 64 KiB: 2.5 MiB in ten 256 KiB chunks
                Allocation run = new Allocation();
                pool.allocate(pool.category("small"), 64 * 1024, run);
                more.add(run);
            }
            PoolStats stats = pool.stats();
            assertEquals(stats.committedBytes(), stats.chunkBytes(), "chunk bytes add each chunk's own size");
            assertTrue(stats.chunkBytes() < (long) stats.chunks() * stats.chunkSize(), stats::report);
            more.forEach(pool::free);
            pool.free(a);
        }
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).firstChunkSize(4 * MIB).build())) {
            Allocation a = new Allocation();
            pool.allocate(pool.category("small"), 1000, a);
            assertEquals(4 * MIB, pool.committedBytes(), "a first size of the chunk size");
            pool.free(a);
        }
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(128 * 1024).arenas(1).build())) {
            Allocation a = new Allocation();
            pool.allocate(pool.category("small"), 1000, a);
            assertEquals(128 * 1024, pool.committedBytes(), "a chunk size under the default first size caps it");
            pool.free(a);
        }
    }

    /**
     * A compaction measures occupancy against each chunk's own size: a full
     * first chunk of 64 KiB holds less than half of a 1 MiB chunk's bytes but
     * is not sparse, so its entries stay where they are, while the sparse
     * chunks of every size around it are emptied.
     */
    @Test
    void compactionMeasuresOccupancyAgainstEachChunksOwnSize() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(64 * 1024).arenas(1)
                .maxCachedSize(0).build())) {
            Category cache = pool.category("cache");
            MovingOwner owner = new MovingOwner(pool);
            pool.setRelocator("cache", owner);
            List<Allocation> all = new ArrayList<>();
            for (int i = 0; i < 512; i++) { // 4 MiB: 16 chunks of 64 KiB, 8 of 128 KiB, 8 of 256 KiB
                Allocation a = new Allocation();
                pool.allocate(cache, PAGE, a);
                all.add(a);
            }
            List<Allocation> kept = new ArrayList<>();
            for (int i = 0; i < all.size(); i++) {
                Allocation a = all.get(i);
                if (i < 8 || i % 16 == 0) {
                    owner.add(a, i);
                    kept.add(a);
                } else {
                    pool.free(a);
                }
            }
            Chunk first = kept.get(0).chunk;
            assertEquals(64 * 1024, first.chunkSize());
            for (int i = 0; i < 8; i++) {
                assertSame(first, kept.get(i).chunk, "the first eight pages fill the first chunk");
            }
            int before = pool.stats().chunks();
            CompactionStats done = pool.compact(0.5, MIB);
            pool.trim();
            for (int i = 0; i < 8; i++) {
                assertSame(kept.get(i), owner.entries.get(i), "entry " + i + " of the full first chunk did not move");
            }
            assertTrue(done.movedEntries() > 0 && pool.stats().chunks() < before,
                    () -> done + ", chunks " + before + " -> " + pool.stats().chunks());
            owner.check();
            owner.freeAll();
            assertEquals(0, pool.requestedBytes());
        }
    }

    @Test
    void badFirstChunkSizesAreRefusedByName() {
        IllegalArgumentException notPowerOfTwo = assertThrows(IllegalArgumentException.class,
                () -> PoolConfig.builder().firstChunkSize(3 * MIB));
        assertTrue(notPowerOfTwo.getMessage().contains("firstChunkSize"), notPowerOfTwo.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PoolConfig.builder().firstChunkSize(32 * 1024));
        IllegalArgumentException aboveChunk = assertThrows(IllegalArgumentException.class,
                () -> PoolConfig.builder().firstChunkSize(8 * MIB).build());
        assertTrue(aboveChunk.getMessage().contains("firstChunkSize") && aboveChunk.getMessage().contains("chunk size"),
                aboveChunk.getMessage());
    }
}
