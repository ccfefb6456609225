package io.slabwise;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MemoryPool#tryAllocate} at the ceiling under {@link LimitPolicy#WAIT}:
 * a try-allocate ({@code returnFalseAtLimit}) returns false at once; without
 * the flag the policy applies and the caller waits, as its javadoc now says
 * (it said "never waits" for both). The waits run on {@link ManualTime}: a
 * wait ends when the test moves the pool's ticker past its deadline, and not
 * a nanosecond before.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TryAllocateWaitTest {

    private static final Duration WAIT = Duration.ofMillis(200);

    private final ManualTime time = new ManualTime();

    private MemoryPool fullPool(Allocation full) {
        PoolConfig config = MemoryPoolTest.config(1 << 16).arenas(1).maxMemory(1 << 16)
                .limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT).ticker(time).scheduler(time).build();
        MemoryPool pool = new MemoryPool(config);
        pool.allocate(1 << 16, full);
        return pool;
    }

    @Test
    void onlyATryAllocateNeverWaits() throws Exception {
        Allocation full = new Allocation();
        try (MemoryPool pool = fullPool(full)) {
            assertFalse(pool.tryAllocate(pool.defaultCategory(), 1000, new Allocation(), true));
            assertEquals(0, pool.limitStats().waits(), "a try-allocate waited");
            assertEquals(0, time.parked());

            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread waiter = ConcurrentTasks.startCapturingFailure(
                    () -> pool.tryAllocate(pool.defaultCategory(), 1000, new Allocation(), false), failure);
            time.awaitParked(1, waiter); // without the flag, the WAIT policy applies
            assertEquals(1, pool.waitingAllocations());
            time.advance(WAIT);
            waiter.join();
            assertInstanceOf(MemoryLimitException.class, failure.get());
            assertEquals(1, pool.limitStats().waits());
            assertEquals(WAIT.toNanos(), pool.limitStats().waitNanos(), "waited its timeout on the pool's ticker");
            pool.free(full);
        }
    }

    /**
     * A waiter is still waiting a nanosecond before its deadline, however
     * often the clock moves before it (each move past its 50 ms safety net
     * wakes it to retry), and times out exactly at it.
     */
    @Test
    void aWaitEndsExactlyAtItsDeadlineOnThePoolsTicker() throws Exception {
        Allocation full = new Allocation();
        try (MemoryPool pool = fullPool(full)) {
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(1000, new Allocation()), failure);
            for (int step = 0; step < 4; step++) {
                time.awaitParked(1, waiter);
                time.advance(WAIT.dividedBy(4).minusNanos(step == 3 ? 1 : 0));
            }
            time.awaitParked(1, waiter); // parked again: the deadline has not come
            assertNull(failure.get());
            assertEquals(1, pool.waitingAllocations());
            time.advance(Duration.ofNanos(1));
            waiter.join();
            MemoryLimitException e = assertInstanceOf(MemoryLimitException.class, failure.get());
            assertTrue(e.getMessage().contains("after waiting 200 ms"), e.getMessage());
            assertEquals(WAIT.toNanos(), pool.limitStats().waitNanos());
            assertEquals(0, pool.waitingAllocations());
            pool.free(full);
        }
    }

    /**
     * Two callers lined up at different times each time out at their own
     * deadline: the first, at the head of the line, when the clock passes
     * its deadline; the one behind it, parked for its turn, only when the
     * clock passes its own.
     */
    @Test
    void callersLinedUpAtDifferentTimesTimeOutInTurn() throws Exception {
        Allocation full = new Allocation();
        try (MemoryPool pool = fullPool(full)) {
            AtomicReference<Throwable> firstFailure = new AtomicReference<>();
            AtomicReference<Throwable> secondFailure = new AtomicReference<>();
            Thread first = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(1000, new Allocation()), firstFailure);
            time.awaitParked(1, first);
            time.advance(WAIT.dividedBy(2));
            Thread second = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(1000, new Allocation()),
                    secondFailure);
            time.awaitParked(2, first, second);

            time.advance(WAIT.dividedBy(2));
            first.join();
            assertInstanceOf(MemoryLimitException.class, firstFailure.get());
            time.awaitParked(1, second); // now the head, with half of its wait left
            assertNull(secondFailure.get());
            assertEquals(1, pool.waitingAllocations());

            time.advance(WAIT.dividedBy(2));
            second.join();
            assertInstanceOf(MemoryLimitException.class, secondFailure.get());
            assertEquals(2 * WAIT.toNanos(), pool.limitStats().waitNanos(), "each waited its whole timeout");
            pool.free(full);
        }
    }
}
