package io.slabwise;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * How a thread waiting for memory parks: on a condition of the limit's lock,
 * until it is signalled or until the pool's {@link Ticker} reads its deadline.
 *
 * <pre>
 *  waiter, holding the lock ──parkUntil(lock, condition, deadline)──▶ parked
 *        ▲                                                              │
 *        └── a signal (a release, a turn, close), or the ticker at the deadline
 * </pre>
 *
 * Every deadline of a wait at a limit is read on the pool's ticker, and every
 * such wait parks here, so the ticker alone decides when a wait runs out. A
 * ticker that tests advance by hand implements this interface and wakes the
 * threads whose deadline it passes; any other ticker parks with
 * {@link Condition#awaitNanos} for what is left until the deadline on that
 * ticker, which for {@link Ticker#system()} is the wait itself. A parked
 * thread may wake early; the waits check their state and the ticker again.
 */
interface Parking {

    /**
     * Parks the calling thread, which holds {@code lock}, on {@code condition}
     * (one of {@code lock}'s) until it is signalled or interrupted, or until
     * the ticker reads {@code deadline} or later; returns at once when it
     * already does. It may return sooner for no reason.
     */
    void parkUntil(Lock lock, Condition condition, long deadline) throws InterruptedException;

    /** How threads park until deadlines on {@code ticker}: its own way, when it has one. */
    static Parking on(Ticker ticker) {
        if (ticker instanceof Parking parking) {
            return parking;
        }
        return (lock, condition, deadline) -> {
            long left = deadline - ticker.read();
            if (left > 0) {
                condition.awaitNanos(left);
            }
        };
    }
}
