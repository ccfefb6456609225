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

    /**
     * The slot holds one run, in either form: a holder kept filled there (a
     * stashed allocation released on its thread) leaves no room for a plain
     * allocation's run released after it, which goes back to the arena.
     */
    @Test
    void aHolderKeptFilledInTheSlotLeavesNoRoomForAnotherRun() {
        Allocation stashed = pool.general.allocateStashed(pool.defaultCategory(), 600 * 1024, false);
        Allocation plain = new Allocation();
        pool.allocate(600 * 1024, plain);
        pool.free(stashed); // kept filled in the slot
        pool.free(plain);
        assertEquals(stashed.reservedBytes(), pool.stats().cachedBytes(), "one run in the slot");
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The same for the dedicated slot: a holder of a dedicated region kept
     * filled there leaves no room for a plain allocation's region, which goes
     * to the pool's idle regions; no region parked in a slot is taken for a
     * live allocation.
     */
    @Test
    void aHolderKeptFilledInTheDedicatedSlotLeavesNoRoomForAnotherRegion() {
        MemoryPool dedicated = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).build()); // dedicated above 128 KiB
        Allocation stashed = dedicated.general.allocateStashed(dedicated.defaultCategory(), 200_000, false);
        Allocation plain = new Allocation();
        dedicated.allocate(200_000, plain);
        assertEquals(2, dedicated.stats().hugeAllocations());
        dedicated.free(stashed); // kept filled in the slot
        dedicated.free(plain);
        PoolStats stats = dedicated.stats();
        assertEquals(0, stats.hugeAllocations(), stats::report);
        assertEquals(0, stats.hugeCommittedBytes(), stats::report);
        assertEquals(2L * stashed.reservedBytes(), stats.hugeIdleBytes(), "one in the slot, one idle: " + stats.report());
        dedicated.close();
        assertEquals(0, dedicated.committedBytes());
    }
}
