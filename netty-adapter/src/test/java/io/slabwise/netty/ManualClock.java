package io.slabwise.netty;

import io.slabwise.Scheduler;
import io.slabwise.Ticker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Ticker} that moves only when a test advances it, and a
 * {@link Scheduler} whose tasks run only when the test says so, built on the
 * public interfaces alone. A caller waiting at a limit of a pool on this
 * clock times out only once the test has moved the clock past its deadline
 * (it re-reads the clock each time it wakes: a release, its turn, or its
 * 50 ms safety net), so a test sees a timeout without timing one.
 */
final class ManualClock implements Ticker, Scheduler {

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
     * Spins until {@code thread} sleeps in a timed wait, the only one a
     * caller waiting at a limit makes: it has read the clock for its deadline
     * and the start of its wait. Fails if the thread ends first; the test
     * class's timeout bounds one that never waits (its interrupt ends the
     * spin).
     */
    static void awaitTimedWait(Thread thread) {
        while (thread.getState() != Thread.State.TIMED_WAITING) {
            if (!thread.isAlive()) {
                throw new AssertionError(thread.getName() + " ended instead of waiting");
            }
            if (Thread.interrupted()) {
                throw new AssertionError("interrupted while " + thread.getName() + " was " + thread.getState());
            }
            Thread.onSpinWait();
        }
    }
}
