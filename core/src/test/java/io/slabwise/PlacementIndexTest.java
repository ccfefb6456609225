package io.slabwise;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * The placement index against the walk it replaced: after every step of a
 * seeded random sequence of chunks taken, runs carved and freed, evacuations
 * begun and ended and chunks given back, the index names exactly the chunk
 * that a walk over the chunks, oldest first, would pick for runs of every
 * length. The sequences grow to thousands of chunks, so the index lays its
 * slots out again many times, with chunks given back in between.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PlacementIndexTest {

    /** A tiny page, so thousands of chunks take little memory: the index reads only the chunks' free runs. */
    private static final int PAGE_SHIFT = 4;

    private static Chunk chunk(int id, int pages) {
        int size = pages << PAGE_SHIFT;
        ByteBuffer buffer = ByteBuffer.allocateDirect(size);
        return new Chunk(null, new NativeRegion(buffer, 1L << 20, size), id, PAGE_SHIFT);
    }

    /** What the arena's walk picked: the first chunk, in the order they were taken, fit for a run of {@code pages}. */
    private static Chunk walk(List<Chunk> oldestFirst, int pages) {
        for (Chunk chunk : oldestFirst) {
            if (!chunk.evacuating && chunk.longestFreeRun() >= pages) {
                return chunk;
            }
        }
        return null;
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 35})
    void theIndexPicksTheChunkTheOldestFirstWalkWould(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        PlacementIndex index = new PlacementIndex();
        List<Chunk> model = new ArrayList<>();
        List<List<Long>> runs = new ArrayList<>(); // runs carved in model.get(i), by position
        int[] sizes = {8, 16, 32, 64};
        int nextId = 0;
        for (int step = 0; step < 40_000; step++) {
            // more chunks taken than given back for the first half, then fewer, so slots are laid out again both ways
            int adds = step < 20_000 ? 14 : 6;
            int op = random.nextInt(100);
            if (model.isEmpty() || op < adds) {
                Chunk chunk = chunk(nextId++, sizes[random.nextInt(sizes.length)]);
                index.add(chunk);
                model.add(chunk);
                runs.add(new ArrayList<>());
            } else if (op < 20 && model.size() > 1) {
                int i = random.nextInt(model.size());
                index.remove(model.get(i));
                model.remove(i);
                runs.remove(i);
            } else if (op < 25) {
                Chunk chunk = model.get(random.nextInt(model.size()));
                chunk.evacuating = !chunk.evacuating;
                index.update(chunk);
            } else if (op < 65) {
                int i = random.nextInt(model.size());
                Chunk chunk = model.get(i);
                long handle = chunk.allocateRun(1 + random.nextInt(Math.min(chunk.pages, 12)));
                if (handle >= 0) {
                    runs.get(i).add(handle);
                    index.update(chunk);
                }
            } else {
                int i = random.nextInt(model.size());
                List<Long> carved = runs.get(i);
                if (!carved.isEmpty()) {
                    long handle = carved.remove(random.nextInt(carved.size()));
                    model.get(i).freeRun(Chunk.runStart(handle), Chunk.runPages(handle));
                    index.update(model.get(i));
                }
            }
            assertEquals(model.size(), index.size());
            int pages = 1 + random.nextInt(64);
            assertSame(walk(model, pages), index.oldestWithRun(pages), "step " + step + ", a run of " + pages);
        }
        List<Chunk> inOrder = new ArrayList<>();
        index.forEach(inOrder::add);
        assertEquals(model, inOrder, "oldest first");
    }

    @Test
    void anEmptyIndexOrAnIndexOfEvacuatingChunksPicksNothing() {
        PlacementIndex index = new PlacementIndex();
        assertNull(index.oldestWithRun(1));
        Chunk chunk = chunk(0, 8);
        index.add(chunk);
        assertSame(chunk, index.oldestWithRun(8));
        assertNull(index.oldestWithRun(9), "no chunk has nine free pages");
        chunk.evacuating = true;
        index.update(chunk);
        assertNull(index.oldestWithRun(1), "nothing new goes into a chunk being evacuated");
        chunk.evacuating = false;
        index.update(chunk);
        index.remove(chunk);
        assertNull(index.oldestWithRun(1));
        assertEquals(-1, chunk.placementSlot);
    }
}
