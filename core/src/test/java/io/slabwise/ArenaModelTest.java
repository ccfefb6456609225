package io.slabwise;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The arena's runs against a reference that knows only which pages of which
 * chunk are taken: a random, seeded sequence of allocations and frees of runs
 * of 1 to 16 pages, after each of which the arena must agree with the model.
 * Every run lands on pages the model has free, in the oldest chunk that has
 * enough contiguous free pages, and a new chunk is taken exactly when none
 * has, of the size the arena's growth rule gives; idle chunks, used bytes
 * and chunk bytes match. Once with chunks of one size, once with first
 * chunks of half the chunk size that grow with the arena.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ArenaModelTest {

    private static final int PAGE = PoolConfig.PAGE_SIZE;
    private static final int CHUNK = 128 * 1024;

    /** The longest run of clear bits in the first {@code pages} bits. */
    private static int longestFree(BitSet taken, int pages) {
        int longest = 0;
        int from = taken.nextClearBit(0);
        while (from < pages) {
            int to = Math.min(pages, taken.nextSetBit(from) < 0 ? pages : taken.nextSetBit(from));
            longest = Math.max(longest, to - from);
            from = taken.nextClearBit(to);
        }
        return longest;
    }

    /**
     * The model's size of a new chunk for a run of {@code pages}: the largest
     * power of two at most 1/{@link Arena#GROWTH} of {@code held}, at least
     * {@code first}, doubled until the run fits, at most the chunk size.
     */
    private static int newChunkSize(long held, int first, int pages) {
        int size = first;
        while ((long) size * 2 * Arena.GROWTH <= held && size < CHUNK) {
            size *= 2;
        }
        while (size < pages * PAGE) {
            size *= 2;
        }
        return Math.min(size, CHUNK);
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 14, 2026})
    void runsMatchAReferenceOfTakenPages(long seed) {
        check(seed, CHUNK);
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 14, 2026})
    void runsMatchAReferenceWhenChunksGrowWithTheArena(long seed) {
        check(seed, CHUNK / 2);
    }

    private static void check(long seed, int firstChunkSize) {
        SizeClasses sizes = new SizeClasses(PAGE, CHUNK);
        CommittedMemory memory = new CommittedMemory(ChunkSource.direct(), new MemoryLimit(Long.MAX_VALUE));
        Arena arena = new Arena(memory, 0, sizes, firstChunkSize, Integer.MAX_VALUE, 64, Ticker.system());
        SplittableRandom random = new SplittableRandom(seed);
        List<Chunk> order = new ArrayList<>(); // the model's chunks, oldest first
        Map<Chunk, BitSet> taken = new IdentityHashMap<>();
        List<Allocation> live = new ArrayList<>();
        long usedBytes = 0;
        long held = 0;
        int grown = 0;
        for (int step = 0; step < 20_000; step++) {
            boolean allocate = live.isEmpty() || random.nextInt(100) < (step % 4000 < 2000 ? 60 : 40);
            if (allocate) {
                int pages = 1 + random.nextInt(16);
                Chunk expected = null;
                for (Chunk chunk : order) {
                    if (longestFree(taken.get(chunk), chunk.pages) >= pages) {
                        expected = chunk;
                        break;
                    }
                }
                Allocation a = new Allocation();
                arena.allocate(SizeClasses.indexOf(pages * PAGE), a);
                if (expected == null) {
                    assertFalse(taken.containsKey(a.chunk), "step " + step + ": an old chunk had no room, a new one must be taken");
                    assertEquals(newChunkSize(held, firstChunkSize, pages), a.chunk.chunkSize(), "step " + step + ": its size");
                    grown += a.chunk.chunkSize() > firstChunkSize ? 1 : 0;
                    held += a.chunk.chunkSize();
                    order.add(a.chunk);
                    taken.put(a.chunk, new BitSet(a.chunk.pages));
                } else {
                    assertSame(expected, a.chunk, "step " + step + ": the oldest chunk with " + pages + " free pages in a row");
                }
                int start = Chunk.runStart(a.handle);
                assertEquals(pages, Chunk.runPages(a.handle));
                BitSet pagesTaken = taken.get(a.chunk);
                assertTrue(pagesTaken.get(start, start + pages).isEmpty(), "step " + step + ": the run's pages were free");
                pagesTaken.set(start, start + pages);
                live.add(a);
                usedBytes += (long) pages * PAGE;
            } else {
                int i = random.nextInt(live.size());
                Allocation a = live.get(i);
                live.set(i, live.get(live.size() - 1));
                live.remove(live.size() - 1);
                arena.free(a.chunk, a.handle);
                int start = Chunk.runStart(a.handle);
                taken.get(a.chunk).clear(start, start + Chunk.runPages(a.handle));
                usedBytes -= (long) Chunk.runPages(a.handle) * PAGE;
            }
            if (step % 97 == 0) {
                ArenaSnapshot snapshot = arena.snapshot();
                long idle = taken.values().stream().filter(BitSet::isEmpty).count();
                assertEquals(order.size(), snapshot.chunks(), "step " + step + ": chunks");
                assertEquals(idle, snapshot.idleChunks(), "step " + step + ": idle chunks");
                assertEquals(usedBytes, snapshot.usedBytes(), "step " + step + ": used bytes");
                assertEquals(held, snapshot.chunkBytes(), "step " + step + ": chunk bytes");
                // the arena's bands of occupancy and free pages, kept as chunks change, against the model
                int[] bands = new int[6];
                long freePages = 0;
                for (Map.Entry<Chunk, BitSet> chunk : taken.entrySet()) {
                    int pages = chunk.getKey().pages;
                    int used = chunk.getValue().cardinality();
                    bands[used == 0 ? 0 : used == pages ? 5 : 1 + Math.min(3, used * 4 / pages)]++;
                    freePages += pages - used;
                }
                assertArrayEquals(bands, snapshot.chunksByOccupancy(), "step " + step + ": chunks by occupancy");
                for (double occupancy : new double[] {0.1, 0.25, 0.5, 0.9, 1.0}) {
                    List<Chunk> sparse = new ArrayList<>();
                    long room = arena.sparseChunks(occupancy, true, sparse);
                    assertEquals(freePages * PAGE, room, "step " + step + ": free pages");
                    long expected = taken.entrySet().stream()
                            .filter(e -> e.getValue().cardinality() <= occupancy * e.getKey().pages).count();
                    assertEquals(expected, sparse.size(), "step " + step + ": chunks at most " + occupancy + " used");
                }
            }
        }
        if (firstChunkSize < CHUNK) {
            assertTrue(grown > 0 && grown < order.size(), grown + " of " + order.size() + " chunks larger than the first size");
        }
        live.forEach(a -> arena.free(a.chunk, a.handle));
        assertEquals(order.size(), arena.idleChunkCount(), "all idle at the end");
        long[] given = arena.trim(0, 0);
        assertEquals(order.size(), given[0], "and all given back");
        assertEquals(held, given[1], "with their own sizes");
    }
}
