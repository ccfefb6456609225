package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A chunk source whose {@code release} throws an {@link Error} while the
 * pool gives back several idle dedicated regions in one go (a trim, or the
 * oldest listed regions pushed out by a larger one): the Error reaches the
 * caller, as {@link ChunkSource#release} says, and the other regions of the
 * batch go back all the same: they have left the idle list, so one not
 * given back there would stay committed for good, even after close.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DedicatedRegionsReleaseErrorTest {

    private static final int CHUNK = MemoryPoolTest.CHUNK;
    /** 37 pages: above the default dedicated threshold of an eighth of a 1 MiB chunk. */
    private static final int PAGES_37 = 37 * PoolConfig.PAGE_SIZE;

    /** Direct memory whose next {@link #failures} releases free the region and then throw an {@link OutOfMemoryError}. */
    private static final class ErrorOnRelease implements ChunkSource {
        final AtomicInteger failures = new AtomicInteger();
        final Set<NativeRegion> outstanding = ConcurrentHashMap.newKeySet();

        @Override
        public NativeRegion allocate(int size) {
            NativeRegion region = ChunkSource.direct().allocate(size);
            outstanding.add(region);
            return region;
        }

        @Override
        public void release(NativeRegion region) {
            if (!outstanding.remove(region)) {
                throw new AssertionError("released twice, or never taken");
            }
            ChunkSource.direct().release(region);
            if (failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new OutOfMemoryError("release failed (test)");
            }
        }
    }

    private static MemoryPool pool(ErrorOnRelease source) {
        return new MemoryPool(MemoryPoolTest.config().arenas(1).chunkSource(source).build());
    }

    private static List<Allocation> allocate(MemoryPool pool, int count, int size) {
        List<Allocation> held = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Allocation a = new Allocation();
            assertTrue(pool.allocate(size, a));
            held.add(a);
        }
        return held;
    }

    /** A trim gives back the recent cell's region and three listed ones; the first release throws. */
    @Test
    void aTrimGivesBackTheRestOfItsIdleRegionsPastAnError() {
        ErrorOnRelease source = new ErrorOnRelease();
        MemoryPool pool = pool(source);
        allocate(pool, 4, PAGES_37).forEach(pool::free); // the thread's slot, the recent cell, two listed
        assertEquals(4, source.outstanding.size());
        source.failures.set(1);
        assertThrows(OutOfMemoryError.class, pool::trim); // the slot's region is listed, then the batch goes back
        assertEquals(0, source.outstanding.size(), "every idle region went back to the source");
        assertEquals(0, pool.committedBytes());
        pool.close();
        assertEquals(0, pool.committedBytes());
    }

    /** A chunk-sized region pushes the three listed ones out of the idle list; the first release throws. */
    @Test
    void regionsPushedOutOfTheIdleListGoBackPastAnError() {
        ErrorOnRelease source = new ErrorOnRelease();
        MemoryPool pool = pool(source);
        List<Allocation> held = allocate(pool, 5, PAGES_37);
        Allocation whole = allocate(pool, 1, CHUNK).get(0); // a dedicated region of a chunk's bytes: it may stay idle
        held.forEach(pool::free); // the thread's slot, the recent cell, three listed (111 of the list's 128 pages)
        source.failures.set(1);
        assertThrows(OutOfMemoryError.class, () -> pool.free(whole)); // listed, it pushes the three out
        assertEquals(3, source.outstanding.size(), "the slot's, the cell's and the chunk-sized region stay idle");
        assertEquals(2L * PAGES_37 + CHUNK, pool.committedBytes());
        pool.close();
        assertEquals(0, pool.committedBytes());
        assertTrue(source.outstanding.isEmpty());
    }
}
