package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A {@link Ticker} that moves only when a test advances it, and a
 * {@link Scheduler} whose tasks run only when the test says so: decay is
 * tested without sleeping and without a background thread racing the test.
 */
final class ManualTime implements Ticker, Scheduler {

    private long nanos;
    private final List<Runnable> tasks = new ArrayList<>();

    @Override
    public synchronized long read() {
        return nanos;
    }

    /** Moves the clock forward. */
    synchronized void advance(Duration by) {
        nanos += by.toNanos();
    }

    @Override
    public synchronized Cancellable repeat(Runnable task, Duration period) {
        tasks.add(task);
        return () -> {
            synchronized (this) {
                tasks.remove(task);
            }
        };
    }

    /** Runs every scheduled task once, on the calling thread. */
    void runScheduled() {
        List<Runnable> now;
        synchronized (this) {
            now = new ArrayList<>(tasks);
        }
        now.forEach(Runnable::run);
    }

    /**
     * Checks the edge of a decay of {@code decay} (whole seconds) from now:
     * one second before it, after the scheduled tasks ran, {@code committed}
     * still reads {@code before}; at it, {@code after}.
     */
    void assertDecayEdge(Duration decay, LongSupplier committed, long before, long after, String what) {
        advance(decay.minusSeconds(1));
        runScheduled();
        assertEquals(before, committed.getAsLong(), what + ": not idle long enough");
        advance(Duration.ofSeconds(1));
        runScheduled();
        assertEquals(after, committed.getAsLong(), what + ": idle for the decay time");
    }

    /** How many tasks are scheduled. */
    synchronized int scheduled() {
        return tasks.size();
    }
}
