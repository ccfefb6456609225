package io.slabwise;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MemoryPool#tryAllocate} at the ceiling under {@link LimitPolicy#WAIT}:
 * a try-allocate ({@code returnFalseAtLimit}) returns false at once; without
 * the flag the policy applies and the caller waits, as its javadoc now says
 * (it said "never waits" for both).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TryAllocateWaitTest {

    @Test
    void onlyATryAllocateNeverWaits() {
        Duration wait = Duration.ofMillis(200);
        PoolConfig config = MemoryPoolTest.config(1 << 16).arenas(1).maxMemory(1 << 16)
                .limitPolicy(LimitPolicy.WAIT).waitTimeout(wait).build();
        try (MemoryPool pool = new MemoryPool(config)) {
            Allocation full = new Allocation();
            pool.allocate(1 << 16, full);
            Allocation a = new Allocation();
            long started = System.nanoTime();
            assertFalse(pool.tryAllocate(pool.defaultCategory(), 1000, a, true));
            assertTrue(System.nanoTime() - started < wait.toNanos(), "a try-allocate waited");
            started = System.nanoTime();
            assertThrows(MemoryLimitException.class, () -> pool.tryAllocate(pool.defaultCategory(), 1000, a, false));
            assertTrue(System.nanoTime() - started >= wait.toNanos(), "without the flag, the WAIT policy applies");
            pool.free(full);
        }
    }
}
