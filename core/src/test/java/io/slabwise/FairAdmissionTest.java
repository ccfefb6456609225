package io.slabwise;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Under {@link LimitPolicy#WAIT} a caller waits only behind callers that
 * compete for the same resource (the ceiling, or its category's quota), and a
 * request no release could ever satisfy fails at once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FairAdmissionTest {

    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    /** Long enough that a test which waited it out would show; every test here ends long before. */
    private static final Duration WAIT = Duration.ofSeconds(30);

    private static MemoryPool pool() {
        return new MemoryPool(PoolConfig.builder().chunkSize(MIB).arenas(1).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(WAIT).maxMemory(16L * MIB).quota("small", MIB).chunkSource(ChunkSource.direct()).build());
    }

    @Test
    void aRequestLargerThanItsQuotaOrTheCeilingFailsAtOnce() {
        MemoryPool pool = pool();
        long start = System.nanoTime();
        MemoryLimitException quota = assertThrows(MemoryLimitException.class,
                () -> pool.allocate(pool.category("small"), 2 * MIB, new Allocation()));
        assertEquals(MemoryLimitException.Kind.QUOTA, quota.kind());
        assertTrue(quota.getMessage().contains("can never be satisfied"), quota.getMessage());
        assertTrue(quota.getMessage().contains("small") && quota.getMessage().contains(String.valueOf(2 * MIB)));
        MemoryLimitException ceiling = assertThrows(MemoryLimitException.class,
                () -> pool.allocate(32 * MIB, new Allocation()));
        assertEquals(MemoryLimitException.Kind.CEILING, ceiling.kind());
        assertTrue(ceiling.getMessage().contains("can never be satisfied"), ceiling.getMessage());
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "neither waited for its timeout");
        assertEquals(0, pool.committedBytes());
    }

    /**
     * One category waits for its quota; a request in another category, with
     * memory free under the ceiling, is served at once and does not line up;
     * a second request of the waiting category does line up, and both are
     * served in order once the quota has room.
     */
    @Test
    void aQuotaWaiterHoldsBackOnlyItsOwnCategory() throws Exception {
        MemoryPool pool = pool();
        Category small = pool.category("small");
        Allocation held = new Allocation();
        pool.allocate(small, 900 * KIB, held); // reserves 896 KiB + rounding, leaving ~100 KiB of the quota
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation first = new Allocation();
        Thread large = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(small, 200 * KIB, first), failure);
        ConcurrentTasks.awaitWaiting(pool, 1);

        Allocation other = new Allocation();
        assertTrue(pool.allocate(1 * KIB, other), "another category is served at once");
        assertEquals(1, pool.waitingAllocations(), "and did not line up");
        pool.free(other);

        Allocation second = new Allocation();
        Thread tiny = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(small, 1 * KIB, second), failure);
        ConcurrentTasks.awaitWaiting(pool, 2); // fits the quota now, but waits behind the 200 KiB request of its category
        assertTrue(!second.isLive());

        pool.free(held);
        large.join();
        tiny.join();
        assertNull(failure.get());
        assertTrue(first.isLive() && second.isLive());
        pool.free(first);
        pool.free(second);
        assertEquals(0, pool.requestedBytes());
    }
}
