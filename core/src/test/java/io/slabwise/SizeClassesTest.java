package io.slabwise;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The size-class table: the smallest class that fits, the rounding bound, small versus run classes. */
class SizeClassesTest {

    private static final int PAGE = 8192;
    private static final int CHUNK = 4 << 20;
    /** Every chunk size a pool accepts: the powers of two from 64 KiB to 256 MiB. */
    private static final int[] CHUNK_SIZES = chunkSizes();

    private final SizeClasses sizes = new SizeClasses(PAGE, CHUNK);

    private static int[] chunkSizes() {
        int n = Integer.numberOfTrailingZeros(PoolConfig.MAX_CHUNK_SIZE) - Integer.numberOfTrailingZeros(PoolConfig.MIN_CHUNK_SIZE) + 1;
        int[] all = new int[n];
        for (int i = 0; i < n; i++) {
            all[i] = PoolConfig.MIN_CHUNK_SIZE << i;
        }
        return all;
    }

    @Test
    void classesIncreaseAreMultiplesOf16AndEndAtTheChunkSize() {
        for (int chunk : CHUNK_SIZES) {
            SizeClasses table = new SizeClasses(PAGE, chunk);
            assertEquals(16, table.size(0));
            for (int i = 1; i < table.count(); i++) {
                assertTrue(table.size(i) > table.size(i - 1), "class " + i + " of chunk " + chunk);
                assertEquals(0, table.size(i) % 16, "class " + table.size(i) + " is a multiple of 16");
            }
            assertEquals(chunk, table.size(table.count() - 1), "the last class is the chunk");
            assertEquals(table.count() - 1, SizeClasses.indexOf(chunk));
            assertEquals(PAGE, table.pageSize());
            assertEquals(chunk, table.chunkSize());
        }
    }

    @Test
    void theFirstClassesAreTheDocumentedOnes() {
        int[] expected = {16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320};
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], sizes.size(i), "class " + i);
        }
    }

    /** Every size up to 64 KiB, and a sample above up to the chunk, maps to the smallest class that holds it. */
    @Test
    void everySizeMapsToTheSmallestClassThatFits() {
        for (int size = 1; size <= 65536; size++) {
            assertSmallestFit(size);
        }
        java.util.Random random = new java.util.Random(5);
        for (int i = 0; i < 200_000; i++) {
            assertSmallestFit(65537 + random.nextInt(CHUNK - 65536));
        }
        for (int i = 0; i < sizes.count(); i++) { // each class and its neighbours
            int size = sizes.size(i);
            assertSmallestFit(size);
            assertSmallestFit(size - 1);
            if (size < CHUNK) {
                assertSmallestFit(size + 1);
            }
        }
    }

    private void assertSmallestFit(int size) {
        int index = SizeClasses.indexOf(size);
        assertTrue(index >= 0 && index < sizes.count(), size + " -> index " + index);
        assertTrue(sizes.size(index) >= size, size + " -> " + sizes.size(index));
        if (index > 0) {
            assertTrue(sizes.size(index - 1) < size, size + " could use the class below, " + sizes.size(index - 1));
        }
    }

    /** Reserved minus requested is at most 1/8 of requested for every request of 128 bytes or more. */
    @Test
    void roundingWastesAtMostOneEighthFrom128Bytes() {
        for (int size = 128; size <= CHUNK; size = size < 65536 ? size + 1 : size + 997) {
            int reserved = sizes.size(SizeClasses.indexOf(size));
            assertTrue((long) (reserved - size) * 8 <= size, size + " -> " + reserved);
        }
        for (int i = 0; i < sizes.count(); i++) { // the worst case of each class: one byte over the class below
            if (sizes.size(i) > 128) {
                int size = sizes.size(i - 1) + 1;
                int reserved = sizes.size(SizeClasses.indexOf(size));
                assertTrue((long) (reserved - size) * 8 <= size, size + " -> " + reserved);
            }
        }
    }

    @Test
    void aClassIsARunExactlyWhenItIsAWholeNumberOfPages() {
        for (int chunk : CHUNK_SIZES) {
            SizeClasses table = new SizeClasses(PAGE, chunk);
            for (int i = 0; i < table.count(); i++) {
                int size = table.size(i);
                boolean run = size % PAGE == 0;
                assertEquals(!run, table.isSmall(i), "class " + size);
                assertEquals(run, table.subpageRunPages(i) == 0, "only small classes have subpage runs: " + size);
            }
        }
        assertTrue(sizes.isSmall(SizeClasses.indexOf(7000)), "7168 is under a page");
        assertFalse(sizes.isSmall(SizeClasses.indexOf(8191)), "8191 rounds up to the one-page run");
        assertFalse(sizes.isSmall(SizeClasses.indexOf(8192)));
        assertTrue(sizes.isSmall(SizeClasses.indexOf(8193)), "9216 is not a whole number of pages");
        assertFalse(sizes.isSmall(SizeClasses.indexOf(65537)), "73728 is nine pages");
    }

    /**
     * With the default 4 MiB chunk, a subpage holds at most 512 elements and
     * its tail (the part too short for one more element) is at most 1/64 of
     * its run.
     */
    @Test
    void subpageRunsHoldAtMost512ElementsAndWasteAtMostOne64th() {
        for (int i = 0; i < sizes.count(); i++) {
            if (!sizes.isSmall(i)) {
                continue;
            }
            int runBytes = sizes.subpageRunPages(i) * PAGE;
            int elements = Math.min(Subpage.MAX_ELEMENTS, runBytes / sizes.size(i));
            assertTrue(elements >= 1 && elements <= Subpage.MAX_ELEMENTS, "class " + sizes.size(i) + ": " + elements);
            long tail = runBytes - (long) elements * sizes.size(i);
            assertTrue(tail * 64 <= runBytes, "class " + sizes.size(i) + " wastes " + tail + " of " + runBytes);
            // and the run is the shortest that does so
            for (int pages = Math.max(1, (sizes.size(i) + PAGE - 1) / PAGE); pages < sizes.subpageRunPages(i); pages++) {
                long shorter = (long) pages * PAGE;
                assertTrue(shorter / sizes.size(i) < Subpage.MAX_ELEMENTS && (shorter % sizes.size(i)) * 64 > shorter,
                        "class " + sizes.size(i) + " could use " + pages + " pages");
            }
        }
    }

    /**
     * A subpage's run is carved from one chunk, so it can never be longer than
     * the chunk, whatever the chunk size. With the smallest chunk (8 pages) no
     * run of at most 8 pages reaches the 1/64 bound for some classes; those
     * take the run that wastes least, which still wastes under 1/8.
     */
    @Test
    void subpageRunsFitInTheChunkForEveryChunkSize() {
        for (int chunk : CHUNK_SIZES) {
            SizeClasses table = new SizeClasses(PAGE, chunk);
            for (int i = 0; i < table.count(); i++) {
                if (!table.isSmall(i)) {
                    continue;
                }
                int runPages = table.subpageRunPages(i);
                assertTrue(runPages >= 1 && runPages * (long) PAGE <= chunk,
                        "chunk " + chunk + ", class " + table.size(i) + ": a run of " + runPages + " pages");
                long runBytes = (long) runPages * PAGE;
                long elements = Math.min(Subpage.MAX_ELEMENTS, runBytes / table.size(i));
                assertTrue(elements >= 1);
                long tail = runBytes - elements * table.size(i);
                if (chunk >= 128 * 1024) {
                    assertTrue(tail * 64 <= runBytes, "chunk " + chunk + ", class " + table.size(i));
                } else {
                    assertTrue(tail * 8 < runBytes, "chunk " + chunk + ", class " + table.size(i) + " wastes " + tail);
                }
            }
        }
    }

    @Test
    void aChunkSizeThatIsNotAClassIsRejected() {
        assertThrows(IllegalStateException.class, () -> new SizeClasses(PAGE, 3 * 1024 * 1024 + 16384));
    }
}
