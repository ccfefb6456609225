package io.slabwise.netty;

import java.util.concurrent.atomic.AtomicReference;

/** Threads for the concurrency tests whose failures the test thread reports after joining them. */
final class FailureCapturingThreads {

    private FailureCapturingThreads() {
    }

    /** Starts {@code task} on a thread of its own; its failure, if any and if the first, goes into {@code failure}. */
    static Thread start(AtomicReference<Throwable> failure, Runnable task) {
        Thread thread = new Thread(() -> {
            try {
                task.run();
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        });
        thread.start();
        return thread;
    }
}
