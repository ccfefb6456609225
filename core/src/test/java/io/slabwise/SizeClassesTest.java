package io.slabwise;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The size-class table: the smallest class that fits, the rounding bound, small versus run classes. */
class SizeClassesTest {

    private static final int CHUNK = 4 << 20;
    private final SizeClasses sizes = new SizeClasses(8192, CHUNK);

    @Test
    void classesIncreaseAndEndAtTheChunkSize() {
        for (int i = 1; i < sizes.count(); i++) {
            assertTrue(sizes.size(i) > sizes.size(i - 1));
            assertEquals(0, sizes.size(i) % 16, "multiples of 16");
        }
        assertEquals(16, sizes.size(0));
        assertEquals(CHUNK, sizes.size(sizes.count() - 1));
    }

    /** Every size up to 64 KiB, and a sample above, maps to the smallest class that holds it. */
    @Test
    void everySizeMapsToTheSmallestClassThatFits() {
        for (int size = 1; size <= CHUNK; size = size < 65536 ? size + 1 : size + 4099) {
            int index = SizeClasses.indexOf(size);
            assertTrue(sizes.size(index) >= size, size + " -> " + sizes.size(index));
            if (index > 0) {
                assertTrue(sizes.size(index - 1) < size, size + " could use the class below");
            }
        }
        assertEquals(sizes.count() - 1, SizeClasses.indexOf(CHUNK));
    }

    @Test
    void roundingIsAtMostOneEighthAbove128Bytes() {
        for (int size = 129; size <= CHUNK; size = size < 65536 ? size + 1 : size + 997) {
            int reserved = sizes.size(SizeClasses.indexOf(size));
            assertTrue((long) (reserved - size) * 8 <= size, size + " -> " + reserved);
        }
    }

    @Test
    void pageMultiplesAreRunsAndTheRestAreSmall() {
        for (int i = 0; i < sizes.count(); i++) {
            int size = sizes.size(i);
            boolean run = size >= 8192 && size % 8192 == 0;
            assertEquals(!run, sizes.isSmall(i), "class " + size);
        }
    }

    /** A subpage holds at most 512 elements and wastes at most 1/64 of its run (or is capped at 512). */
    @Test
    void subpageRunsAreTight() {
        for (int i = 0; i < sizes.count(); i++) {
            if (!sizes.isSmall(i)) {
                continue;
            }
            int runBytes = sizes.subpageRunPages(i) * 8192;
            int elements = Math.min(Subpage.MAX_ELEMENTS, runBytes / sizes.size(i));
            assertTrue(elements >= 1 && elements <= Subpage.MAX_ELEMENTS);
            long tail = runBytes - (long) elements * sizes.size(i);
            assertTrue(tail * 64 <= runBytes || elements == Subpage.MAX_ELEMENTS,
                    "class " + sizes.size(i) + " wastes " + tail + " of " + runBytes);
        }
    }

    @Test
    void aChunkSizeThatIsNotAClassIsRejected() {
        assertThrows(IllegalStateException.class, () -> new SizeClasses(8192, 3 * 1024 * 1024 + 16384));
    }
}
