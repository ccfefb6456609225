package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Resizing in place up to the reserved bytes, whatever the dedicated threshold. */
@Timeout(60)
class UnalignedThresholdResizeTest {

    private static final int PAGE = PoolConfig.PAGE_SIZE;

    /**
     * A dedicated threshold between two pages: a run fitted to the pages of a
     * request just below it reserves bytes past it, and must be able to stand
     * for all of them without moving, as {@link MemoryPool#reservedSizeFor} says it reserves them.
     */
    @Test
    void aRunWhoseLastPageCrossesAnUnalignedDedicatedThresholdResizesUpToItsPages() {
        int threshold = 12 * PAGE + 100;
        MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(1).dedicatedAbove(threshold).build());
        Allocation run = new Allocation();
        assertTrue(pool.allocate(threshold - 1, run));
        assertEquals(13 * PAGE, run.reservedBytes());
        assertEquals(13 * PAGE, pool.reservedSizeFor(13 * PAGE));
        Chunk chunk = run.chunk;
        long address = run.address();
        assertTrue(pool.resizeInPlace(run, 13 * PAGE), "its own pages");
        assertSame(chunk, run.chunk);
        assertEquals(address, run.address());
        assertEquals(13 * PAGE, pool.stats().requestedBytes());
        assertEquals(13 * PAGE, pool.stats().reservedBytes());
        assertTrue(pool.resizeInPlace(run, threshold - 1), "back below the threshold");
        assertFalse(pool.resizeInPlace(run, 13 * PAGE + 1), "past its pages");
        assertFalse(pool.resizeInPlace(run, 12 * PAGE), "fewer pages");
        assertEquals(threshold - 1, pool.stats().requestedBytes());
        pool.free(run);
        assertEquals(0, pool.stats().requestedBytes());
        assertEquals(0, pool.stats().reservedBytes());
        pool.close();
        assertEquals(0, pool.committedBytes());
    }
}
