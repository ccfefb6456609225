package io.slabwise;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A chunk's free-run index against a plain model: a boolean per page. */
class ChunkTest {

    private static final int PAGES = 128;

    private static Chunk newChunk() {
        NativeRegion region = new NativeRegion(ByteBuffer.allocateDirect(PAGES * 8192), 0, PAGES * 8192);
        return new Chunk(null, region, 0, 13);
    }

    /**
     * Seeded random runs are taken and given back; after every step the
     * chunk's free pages and longest free run agree with the model, a run is
     * refused exactly when the model has no free stretch long enough, and the
     * run handed out is the shortest free stretch that fits (best fit).
     */
    @Test
    void freeRunIndexAgreesWithAModel() {
        Chunk chunk = newChunk();
        boolean[] used = new boolean[PAGES];
        List<long[]> runs = new ArrayList<>();
        Random random = new Random(21);
        for (int step = 0; step < 20_000; step++) {
            if (runs.isEmpty() || random.nextInt(100) < 55) {
                int length = 1 + (random.nextInt(4) == 0 ? random.nextInt(PAGES) : random.nextInt(8));
                int bestFit = shortestStretchAtLeast(used, length);
                long handle = chunk.allocateRun(length);
                if (bestFit < 0) {
                    assertEquals(-1, handle, "refused exactly when nothing fits");
                    continue;
                }
                int start = Chunk.runStart(handle);
                assertEquals(length, Chunk.runPages(handle));
                assertEquals(bestFit, stretchLengthAt(used, start), "best fit: the shortest stretch that fits");
                for (int p = start; p < start + length; p++) {
                    assertTrue(!used[p], "page " + p + " handed out twice");
                    used[p] = true;
                }
                runs.add(new long[] {start, length});
            } else {
                long[] run = runs.remove(random.nextInt(runs.size()));
                chunk.freeRun((int) run[0], (int) run[1]);
                for (int p = (int) run[0]; p < run[0] + run[1]; p++) {
                    used[p] = false;
                }
            }
            assertEquals(freePages(used), chunk.freePages);
            assertEquals(longestStretch(used), chunk.longestFreeRun());
        }
        for (long[] run : runs) {
            chunk.freeRun((int) run[0], (int) run[1]);
        }
        assertTrue(chunk.isEmpty());
        assertEquals(PAGES, chunk.longestFreeRun(), "freed runs merge back into one");
    }

    private static int freePages(boolean[] used) {
        int n = 0;
        for (boolean u : used) {
            n += u ? 0 : 1;
        }
        return n;
    }

    private static int longestStretch(boolean[] used) {
        int best = 0;
        for (int p = 0; p < used.length; ) {
            int len = stretchLengthAt(used, p);
            best = Math.max(best, len);
            p += Math.max(1, len);
        }
        return best;
    }

    /** The length of the free stretch starting at {@code start} (0 when that page is used). */
    private static int stretchLengthAt(boolean[] used, int start) {
        int len = 0;
        while (start + len < used.length && !used[start + len]) {
            len++;
        }
        return len;
    }

    /** The length of the shortest maximal free stretch of at least {@code length} pages, or -1. */
    private static int shortestStretchAtLeast(boolean[] used, int length) {
        int best = -1;
        for (int p = 0; p < used.length; ) {
            if (used[p]) {
                p++;
                continue;
            }
            int len = stretchLengthAt(used, p);
            if (len >= length && (best < 0 || len < best)) {
                best = len;
            }
            p += len;
        }
        return best;
    }

    @Test
    void subpageElementsAreDistinctAndDoubleFreeIsCaught() {
        Chunk chunk = newChunk();
        long run = chunk.allocateRun(1);
        Subpage subpage = new Subpage(chunk, Chunk.runStart(run), 1, 0, 16);
        chunk.setSubpage(subpage.runStart, subpage);
        List<Long> offsets = new ArrayList<>();
        while (subpage.hasFree()) {
            long handle = subpage.allocate();
            assertTrue(Chunk.isSubpage(handle));
            offsets.add(chunk.offset(handle));
        }
        assertEquals(512, offsets.size());
        assertEquals(512, offsets.stream().distinct().count());
        subpage.free(7);
        assertEquals(1, subpage.freeElements());
        org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, () -> subpage.free(7));
        long again = subpage.allocate();
        assertEquals(7, Chunk.element(again), "the freed element is found again");
    }
}
