package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

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

    /** How many tasks are scheduled. */
    synchronized int scheduled() {
        return tasks.size();
    }
}
