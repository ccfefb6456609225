package io.slabwise;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/** The thread cache's single slot for one released run above the cached sizes. */
class LargeSlotTest {

    /** Runs up to a chunk: no request here gets a dedicated region. */
    private final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(4 << 20).dedicatedAbove(4 << 20).arenas(1).build());

    @Test
    void aReleasedLargeRunIsReusedByTheSameThreadAndTrimmedAway() {
        Allocation a = new Allocation();
        pool.allocate(1 << 20, a);
        long address = a.address();
        pool.free(a);
        assertEquals(1 << 20, pool.stats().cachedBytes(), "kept in the slot, not in the arena");
        Allocation b = new Allocation();
        pool.allocate((1 << 20) - 100, b); // same size class
        assertEquals(address, b.address(), "served from the slot");
        pool.free(b);
        Allocation other = new Allocation();
        pool.allocate(600 * 1024, other); // another class: not from the slot
        assertNotEquals(address, other.address());
        pool.free(other); // the slot is taken: this one goes back to the arena
        assertEquals(1 << 20, pool.stats().cachedBytes());
        pool.trim();
        assertEquals(0, pool.stats().cachedBytes());
        assertEquals(0, pool.committedBytes());
    }

    @Test
    void runsAboveOneMebibyteAreNeverKept() {
        Allocation a = new Allocation();
        pool.allocate(2 << 20, a);
        pool.free(a);
        assertEquals(0, pool.stats().cachedBytes());
    }

    @Test
    void theSlotOfADeadThreadGoesBack() throws Exception {
        Thread worker = new Thread(() -> {
            Allocation a = new Allocation();
            pool.allocate(512 * 1024, a);
            pool.free(a);
        });
        worker.start();
        worker.join();
        assertEquals(0, pool.stats().cachedBytes(), "stats() reclaims the caches of dead threads");
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }
}
