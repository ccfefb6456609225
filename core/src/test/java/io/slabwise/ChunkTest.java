package io.slabwise;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A chunk's free-run index against a plain model (a boolean per page), and its handle layout. */
class ChunkTest {

    private static final int PAGE_SHIFT = 13;

    /** A chunk with no arena over a plain direct buffer: the free-run index needs neither. */
    static Chunk newChunk(int pages) {
        int bytes = pages << PAGE_SHIFT;
        ByteBuffer memory = ByteBuffer.allocateDirect(bytes);
        NativeRegion region = new NativeRegion(memory, BufferAddress.of(memory), bytes);
        return new Chunk(null, region, 0, PAGE_SHIFT);
    }

    /**
     * A chunk of the most pages (a 256 MiB chunk of 8 KiB pages; here of
     * 16-byte pages, to stay small) keeps a free run of all its pages, whose
     * length has a mark of its own, and every split and merge at its ends;
     * one more page is refused.
     */
    @Test
    void theLargestChunkKeepsARunOfAllItsPages() {
        int pages = Chunk.MAX_PAGES;
        ByteBuffer memory = ByteBuffer.allocateDirect(pages << 4);
        Chunk chunk = new Chunk(null, new NativeRegion(memory, BufferAddress.of(memory), pages << 4), 0, 4);
        assertEquals(pages, chunk.longestFreeRun());
        long whole = chunk.allocateRun(pages);
        assertEquals(0, chunk.freePages);
        chunk.freeRun(Chunk.runStart(whole), pages);
        assertEquals(pages, chunk.longestFreeRun());
        long first = chunk.allocateRun(1);
        long rest = chunk.allocateRun(pages - 1);
        assertEquals(1, Chunk.runStart(rest));
        chunk.freeRun(Chunk.runStart(rest), pages - 1); // a free run ending at the last page
        assertEquals(pages - 1, chunk.longestFreeRun());
        chunk.freeRun(Chunk.runStart(first), 1); // merges with it: all pages again
        assertEquals(pages, chunk.longestFreeRun());
        assertEquals(pages, chunk.freePages);
        long last = chunk.allocateRun(pages - 1);
        long one = chunk.allocateRun(1);
        assertEquals(pages - 1, Chunk.runStart(one));
        chunk.freeRun(Chunk.runStart(last), pages - 1);
        chunk.freeRun(Chunk.runStart(one), 1); // the last page merges with the run before it
        assertEquals(pages, chunk.longestFreeRun());
        ByteBuffer tooLarge = ByteBuffer.allocateDirect((pages + 1) << 4);
        IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> new Chunk(null, new NativeRegion(tooLarge, BufferAddress.of(tooLarge), (pages + 1) << 4), 0, 4));
        assertTrue(refused.getMessage().contains(String.valueOf(pages + 1)), refused.getMessage());
    }

    @Test
    void aNewChunkIsOneFreeRunOfAllItsPages() {
        Chunk chunk = newChunk(512);
        assertEquals(512, chunk.pages);
        assertEquals(512, chunk.freePages);
        assertEquals(512, chunk.longestFreeRun());
        assertTrue(chunk.isEmpty());
        assertFalse(chunk.huge);
        long whole = chunk.allocateRun(512);
        assertEquals(0, Chunk.runStart(whole));
        assertEquals(512, Chunk.runPages(whole));
        assertEquals(0, chunk.freePages);
        assertEquals(0, chunk.longestFreeRun());
        assertEquals(-1, chunk.allocateRun(1), "a full chunk refuses even one page");
        chunk.freeRun(0, 512);
        assertTrue(chunk.isEmpty());
        assertEquals(512, chunk.longestFreeRun());
    }

    /** Runs are split from the low end of the free run they come from, so a fresh chunk fills in address order. */
    @Test
    void runsComeFromTheLowEndOfTheirFreeRun() {
        Chunk chunk = newChunk(64);
        int expected = 0;
        for (int length : new int[] {1, 3, 8, 2, 17}) {
            long handle = chunk.allocateRun(length);
            assertEquals(expected, Chunk.runStart(handle));
            assertEquals((long) expected << PAGE_SHIFT, chunk.offset(handle, 0));
            expected += length;
        }
        assertEquals(64 - expected, chunk.freePages);
        assertEquals(64 - expected, chunk.longestFreeRun());
    }

    /** Freeing the run between two free runs merges all three, whichever order they were freed in. */
    @Test
    void freeingCoalescesWithBothNeighbours() {
        Chunk chunk = newChunk(16);
        long a = chunk.allocateRun(4);
        long b = chunk.allocateRun(4);
        long c = chunk.allocateRun(4);
        long d = chunk.allocateRun(4);
        chunk.freeRun(Chunk.runStart(a), 4);
        chunk.freeRun(Chunk.runStart(c), 4);
        assertEquals(4, chunk.longestFreeRun(), "a and c are not adjacent");
        assertEquals(-1, chunk.allocateRun(5));
        chunk.freeRun(Chunk.runStart(b), 4);
        assertEquals(12, chunk.longestFreeRun(), "a, b and c merged");
        long twelve = chunk.allocateRun(12);
        assertEquals(0, Chunk.runStart(twelve));
        chunk.freeRun(0, 12);
        chunk.freeRun(Chunk.runStart(d), 4);
        assertEquals(16, chunk.longestFreeRun());
        assertTrue(chunk.isEmpty());
    }

    /**
     * Seeded random runs are taken and given back on chunks whose run lengths
     * span one, two and several words of the length bitmap; after every step
     * the chunk's free pages and longest free run agree with the model, a run
     * is refused exactly when the model has no free stretch long enough, and
     * the run handed out is the low end of a shortest free stretch that fits
     * (best fit), the lowest of them when it is shorter than four pages. At
     * the end everything is freed and merges into one run.
     */
    @Test
    void freeRunIndexAgreesWithAModel() {
        checkAgainstModel(64, 21, 20_000);
        checkAgainstModel(128, 22, 20_000);
        checkAgainstModel(200, 23, 20_000);
        checkAgainstModel(512, 24, 10_000);
    }

    private static void checkAgainstModel(int pages, long seed, int steps) {
        Chunk chunk = newChunk(pages);
        boolean[] used = new boolean[pages];
        List<int[]> runs = new ArrayList<>();
        Random random = new Random(seed);
        int refusals = 0;
        for (int step = 0; step < steps; step++) {
            if (runs.isEmpty() || random.nextInt(100) < 55) {
                int length = 1 + (random.nextInt(4) == 0 ? random.nextInt(pages) : random.nextInt(8));
                int bestFit = shortestStretchAtLeast(used, length);
                long handle = chunk.allocateRun(length);
                if (bestFit < 0) {
                    assertEquals(-1, handle, "refused exactly when nothing fits: " + length + " pages, step " + step);
                    refusals++;
                    continue;
                }
                assertTrue(handle != -1, "a stretch of " + bestFit + " fits " + length + " pages, step " + step);
                int start = Chunk.runStart(handle);
                assertEquals(length, Chunk.runPages(handle));
                assertFalse(Chunk.isSubpage(handle));
                assertTrue(start == 0 || used[start - 1], "the run starts a free stretch, step " + step);
                assertEquals(bestFit, stretchLengthAt(used, start), "best fit: the shortest stretch that fits, step " + step);
                if (bestFit < 4) {
                    assertEquals(lowestStretchOf(used, bestFit), start, "of short stretches the lowest, step " + step);
                }
                for (int p = start; p < start + length; p++) {
                    assertFalse(used[p], "page " + p + " handed out twice");
                    used[p] = true;
                }
                runs.add(new int[] {start, length});
            } else {
                int[] run = runs.remove(random.nextInt(runs.size()));
                chunk.freeRun(run[0], run[1]);
                for (int p = run[0]; p < run[0] + run[1]; p++) {
                    used[p] = false;
                }
            }
            assertEquals(freePages(used), chunk.freePages, "free pages, step " + step);
            assertEquals(longestStretch(used), chunk.longestFreeRun(), "longest free run, step " + step);
            assertEquals(freePages(used) == pages, chunk.isEmpty());
        }
        assertTrue(refusals > 0, "the workload reached a full chunk at least once");
        for (int[] run : runs) {
            chunk.freeRun(run[0], run[1]);
        }
        assertTrue(chunk.isEmpty());
        assertEquals(pages, chunk.freePages);
        assertEquals(pages, chunk.longestFreeRun(), "freed runs merge back into one");
        long whole = chunk.allocateRun(pages);
        assertEquals(0, Chunk.runStart(whole), "one free run of all pages");
        assertEquals(0, chunk.freePages);
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

    /** The first page of the lowest maximal free stretch of exactly {@code length} pages, or -1. */
    private static int lowestStretchOf(boolean[] used, int length) {
        for (int p = 0; p < used.length; ) {
            int len = stretchLengthAt(used, p);
            if (len == length) {
                return p;
            }
            p += Math.max(1, len);
        }
        return -1;
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

    /** Every field of a handle decodes to what was encoded, at the largest values a 256 MiB chunk needs. */
    @Test
    void handlesRoundTrip() {
        int[][] runs = {{0, 1}, {1, 1}, {7, 300}, {32767, 1}, {0, 32768}, {65535, 65535}};
        for (int[] r : runs) {
            long handle = Chunk.runHandle(r[0], r[1]);
            assertEquals(r[0], Chunk.runStart(handle));
            assertEquals(r[1], Chunk.runPages(handle));
            assertFalse(Chunk.isSubpage(handle));
            assertTrue(handle != -1 && handle != 0, "a run handle is never the failure value or a huge handle");
        }
        for (int element : new int[] {0, 1, 63, 64, 511, 65535}) {
            long handle = Chunk.subpageHandle(32767, 15, element);
            assertTrue(Chunk.isSubpage(handle));
            assertEquals(32767, Chunk.runStart(handle));
            assertEquals(15, Chunk.runPages(handle));
            assertEquals(element, Chunk.element(handle));
        }
    }

    /** A subpage element's offset is its run's offset plus the element index times the element size. */
    @Test
    void subpageOffsetsAreInsideTheirRun() {
        Chunk chunk = newChunk(32);
        chunk.allocateRun(3);
        long run = chunk.allocateRun(9);
        int start = Chunk.runStart(run);
        Subpage subpage = new Subpage(chunk, start, 9, SizeClasses.indexOf(9216), 9216);
        chunk.setSubpage(start, subpage);
        assertEquals(subpage, chunk.subpageAt(start));
        for (int e = 0; e < subpage.elements(); e++) {
            long handle = subpage.allocate();
            assertEquals(((long) start << PAGE_SHIFT) + (long) e * 9216, chunk.offset(handle, 9216));
        }
    }
}
