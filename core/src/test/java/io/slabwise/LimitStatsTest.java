package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static io.slabwise.MemoryLimitException.Kind.CEILING;
import static io.slabwise.MemoryLimitException.Kind.QUOTA;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MemoryPool#limitStats()}: every refusal is counted once, per
 * category and limit, whatever the policy and however it came (at once, never
 * satisfiable, after a wait); every wait is counted with its time when it is
 * over, whatever its outcome. No test sleeps: waits end by a release, a
 * timeout on a manual clock, an interrupt or a close.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LimitStatsTest {

    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;

    private static PoolConfig.Builder config() {
        return PoolConfig.builder().chunkSize(MIB).arenas(1).maxCachedSize(0).maxMemory(2L * MIB)
                .quota("small", 256 * KIB).chunkSource(ChunkSource.direct());
    }

    @Test
    void refusalsAreCountedPerCategoryAndLimit() {
        MemoryPool pool = new MemoryPool(config().limitPolicy(LimitPolicy.FAIL)
                .categoryPolicy("small", LimitPolicy.RETURN_NULL).build());
        Category small = pool.category("small");
        Allocation held = new Allocation();
        pool.allocate(small, 200 * KIB, held);
        assertFalse(pool.allocate(small, 100 * KIB, new Allocation()), "quota, returns nothing");
        pool.limitException(small, 100 * KIB); // building the exception for a refusal is no refusal
        assertFalse(pool.tryAllocate(small, 100 * KIB, new Allocation(), true), "a try-allocate");
        Allocation second = new Allocation();
        pool.allocate(MIB, second); // two chunks: the ceiling
        assertThrows(MemoryLimitException.class, () -> pool.allocate(MIB, new Allocation()));
        assertThrows(MemoryLimitException.class, () -> pool.allocate(4 * MIB, new Allocation()),
                "never satisfiable");

        LimitStats stats = pool.limitStats();
        assertEquals(2, stats.refusals("small", QUOTA));
        assertEquals(0, stats.refusals("small", CEILING));
        assertEquals(2, stats.refusals("network", CEILING));
        assertEquals(0, stats.refusals("network", QUOTA));
        assertEquals(4, stats.refusals());
        assertEquals(0, stats.waits());
        assertEquals(0, stats.refusals("no_such_category", CEILING));
        assertEquals(List.of("network", "small"), stats.categories());
        pool.free(held);
        pool.free(second);
    }

    @Test
    void aWaitThatTimesOutIsAWaitAndARefusal() {
        ManualTime time = ManualTime.waitsRunOut();
        MemoryPool pool = new MemoryPool(config().limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofMillis(20))
                .ticker(time).scheduler(time).build());
        Category small = pool.category("small");
        Allocation held = new Allocation();
        pool.allocate(small, 200 * KIB, held);
        assertThrows(MemoryLimitException.class, () -> pool.allocate(small, 100 * KIB, new Allocation()));

        LimitStats stats = pool.limitStats();
        assertEquals(1, stats.waits("small", QUOTA));
        assertEquals(1, stats.refusals("small", QUOTA));
        assertEquals(TimeUnit.MILLISECONDS.toNanos(20), stats.waitNanos("small", QUOTA), "waited its timeout");
        assertEquals(stats.waitNanos("small", QUOTA), stats.waitNanos());
        assertEquals(0, stats.waitingAllocations());
        pool.free(held);
    }

    @Test
    void aServedWaitIsNoRefusal() throws Exception {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(config().limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(30))
                .ticker(time).scheduler(time).build());
        Allocation first = new Allocation();
        Allocation second = new Allocation();
        pool.allocate(MIB, first);
        pool.allocate(MIB, second);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation served = new Allocation();
        Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(MIB, served), failure);
        time.awaitParked(1, waiter);
        assertEquals(1, pool.limitStats().waitingAllocations());
        assertEquals(0, pool.limitStats().waits(), "counted when over");
        time.advance(Duration.ofMillis(7)); // under the 50 ms safety net: the waiter sleeps on
        pool.free(first);
        waiter.join();
        assertNull(failure.get());
        assertTrue(served.isLive());

        LimitStats stats = pool.limitStats();
        assertEquals(1, stats.waits("network", CEILING));
        assertEquals(TimeUnit.MILLISECONDS.toNanos(7), stats.waitNanos("network", CEILING), "on the pool's ticker");
        assertEquals(0, stats.refusals());
        pool.free(second);
        pool.free(served);
    }

    @Test
    void anInterruptedWaitIsAWaitAndARefusal() throws Exception {
        MemoryPool pool = new MemoryPool(config().limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(30))
                .build());
        Category small = pool.category("small");
        Allocation held = new Allocation();
        pool.allocate(small, 200 * KIB, held);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(small, 100 * KIB, new Allocation()), failure);
        ConcurrentTasks.awaitWaiting(pool, 1);
        waiter.interrupt();
        waiter.join();
        assertInstanceOf(MemoryLimitException.class, failure.get());
        assertEquals(QUOTA, ((MemoryLimitException) failure.get()).kind(), "it waited for the quota");

        LimitStats stats = pool.limitStats();
        assertEquals(1, stats.waits("small", QUOTA));
        assertEquals(1, stats.refusals("small", QUOTA));
        pool.free(held);
    }

    @Test
    void aWaitEndedByCloseIsAWaitButNoRefusal() throws Exception {
        MemoryPool pool = new MemoryPool(config().limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(30))
                .build());
        Category small = pool.category("small");
        Allocation held = new Allocation();
        pool.allocate(small, 200 * KIB, held);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(small, 100 * KIB, new Allocation()), failure);
        ConcurrentTasks.awaitWaiting(pool, 1);
        pool.close();
        waiter.join();
        assertInstanceOf(IllegalStateException.class, failure.get());

        LimitStats stats = pool.limitStats();
        assertEquals(1, stats.waits("small", QUOTA));
        assertEquals(0, stats.refusals());
        pool.free(held);
    }

    @Test
    void aThreadThatMayNotWaitIsRefusedWithoutWaiting() {
        MemoryPool pool = new MemoryPool(config().limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(30))
                .waitAllowed(() -> false).build());
        Category small = pool.category("small");
        Allocation held = new Allocation();
        pool.allocate(small, 200 * KIB, held);
        assertThrows(MemoryLimitException.class, () -> pool.allocate(small, 100 * KIB, new Allocation()));

        LimitStats stats = pool.limitStats();
        assertEquals(1, stats.refusals("small", QUOTA));
        assertEquals(0, stats.waits());
        assertTrue(stats.toString().contains("refusals=1"), stats.toString());
        pool.free(held);
    }
}
