package io.slabwise;

/**
 * A source of nanosecond time for the pool's idle-memory decay: how long a
 * chunk or a block has been idle. The default reads {@link System#nanoTime()};
 * tests inject one they advance by hand, so decay is tested without sleeping.
 */
@FunctionalInterface
public interface Ticker {

    /** The current time in nanoseconds, from an arbitrary origin; only differences matter. */
    long read();

    /** The system ticker, {@link System#nanoTime()}. */
    static Ticker system() {
        return System::nanoTime;
    }
}
