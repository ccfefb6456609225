package io.slabwise;

import java.time.Duration;

/**
 * Runs the pool's periodic background work: the decay that gives idle chunks
 * and blocks back to the operating system. The default is one daemon thread
 * shared by every pool in the JVM ({@link #shared()}); tests inject a
 * scheduler they run by hand, and applications may run the work on an
 * executor of their own.
 */
public interface Scheduler {

    /**
     * Runs {@code task} every {@code period} until the returned handle is
     * cancelled. The task must not block; it may be run on any thread.
     */
    Cancellable repeat(Runnable task, Duration period);

    /** A scheduled task that can be stopped. */
    @FunctionalInterface
    interface Cancellable {

        /** Stops the task; idempotent. A run already under way completes. */
        void cancel();
    }

    /**
     * The JVM-wide scheduler: a scheduled executor with one daemon thread,
     * {@code slabwise-chunk-decay}, started with the first task and shared by
     * every pool.
     */
    static Scheduler shared() {
        return ChunkDecay.INSTANCE;
    }
}
