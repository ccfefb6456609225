package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.LongSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A {@link Ticker} that moves only when a test advances it, and a
 * {@link Scheduler} whose tasks run only when the test says so: decay is
 * tested without sleeping and without a background thread racing the test.
 *
 * <p>Callers waiting at a limit park through its {@link Parking}: they wake
 * when signalled, or when {@link #advance} reaches their deadline, never on
 * their own. A test lines waiters up ({@link #awaitParked}), advances the
 * clock by the wait timeout, and sees them time out, without sleeping.
 *
 * <p>Public, in core's test jar, for the Netty adapter's tests too: a pool
 * built with it as its ticker parks its waiters here, since the pool looks
 * for {@link Parking} on its ticker.
 */
public final class ManualTime implements Ticker, Scheduler, Parking {

    private final boolean waitsRunOut;
    private long nanos;
    private final List<Runnable> tasks = new ArrayList<>();
    /** The threads parked until a deadline on this clock; guarded by this. */
    private final List<Parked> parked = new ArrayList<>();

    /** A clock that moves only when the test advances it. */
    public ManualTime() {
        this(false);
    }

    private ManualTime(boolean waitsRunOut) {
        this.waitsRunOut = waitsRunOut;
    }

    /**
     * A clock on which every park runs out at once: it moves the clock to the
     * parked thread's deadline, as if nothing had woken it until then. For
     * fuzzing, where waits must end without a test thread to advance time.
     */
    public static ManualTime waitsRunOut() {
        return new ManualTime(true);
    }

    /** A parked thread: the lock and condition to signal, and its deadline. */
    private static final class Parked {
        final Lock lock;
        final Condition condition;
        final long deadline;

        Parked(Lock lock, Condition condition, long deadline) {
            this.lock = lock;
            this.condition = condition;
            this.deadline = deadline;
        }
    }

    @Override
    public synchronized long read() {
        return nanos;
    }

    /** Moves the clock forward, and wakes the threads parked until a deadline it reaches. */
    public void advance(Duration by) {
        List<Parked> due = new ArrayList<>();
        synchronized (this) {
            nanos += by.toNanos();
            for (Iterator<Parked> i = parked.iterator(); i.hasNext(); ) {
                Parked p = i.next();
                if (nanos - p.deadline >= 0) {
                    due.add(p);
                    i.remove(); // woken: no longer counted as parked
                }
            }
        }
        // a thread registers while it holds its lock and releases it only in await: this signal cannot miss it
        for (Parked p : due) {
            p.lock.lock();
            try {
                p.condition.signalAll();
            } finally {
                p.lock.unlock();
            }
        }
    }

    @Override
    public void parkUntil(Lock lock, Condition condition, long deadline) throws InterruptedException {
        Parked p = new Parked(lock, condition, deadline);
        synchronized (this) {
            if (nanos - deadline >= 0) {
                return;
            }
            if (waitsRunOut) {
                nanos = deadline; // nobody parks on such a clock: nobody else to wake
                return;
            }
            parked.add(p);
        }
        try {
            condition.await();
        } finally {
            synchronized (this) {
                parked.remove(p);
            }
        }
    }

    /** How many threads are parked until a deadline on this clock now. */
    public synchronized int parked() {
        return parked.size();
    }

    /**
     * Spins until {@code n} threads are parked on this clock: waiters lined
     * up and asleep, the state a timeout test advances the clock from. Fails
     * when one of {@code waiters} ends instead; the test class's timeout
     * bounds a waiter that never parks (its interrupt ends the spin).
     */
    public void awaitParked(int n, Thread... waiters) {
        while (parked() < n) {
            for (Thread waiter : waiters) {
                assertTrue(waiter.isAlive(), waiter.getName() + " ended instead of parking");
            }
            ConcurrentTasks.stopIfInterrupted(() -> parked() + " of " + n + " threads parked");
            Thread.onSpinWait();
        }
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
    public void runScheduled() {
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
    public void assertDecayEdge(Duration decay, LongSupplier committed, long before, long after, String what) {
        advance(decay.minusSeconds(1));
        runScheduled();
        assertEquals(before, committed.getAsLong(), what + ": not idle long enough");
        advance(Duration.ofSeconds(1));
        runScheduled();
        assertEquals(after, committed.getAsLong(), what + ": idle for the decay time");
    }

    /** How many tasks are scheduled. */
    public synchronized int scheduled() {
        return tasks.size();
    }
}
