package io.slabwise;

/**
 * The pool's source of nanosecond time: how long a chunk or a block has been
 * idle, when a wait at a limit runs out, how long a compaction took. The
 * default reads the JVM's monotonic clock; tests inject one they advance by
 * hand, so decay and waits are tested without sleeping. A wait at a limit
 * re-reads the ticker each time it wakes, and without a signal sleeps for
 * what is left until its deadline as read on the ticker.
 */
@FunctionalInterface
public interface Ticker {

    /** The current time in nanoseconds, from an arbitrary origin; only differences matter. */
    long read();

    /** The system ticker: the JVM's monotonic clock ({@code nanoTime} of {@link System}), the pool's only one. */
    static Ticker system() {
        return () -> System.nanoTime();
    }
}
