package io.slabwise.benchmarks;

import io.netty.util.concurrent.FastThreadLocalThread;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The executor JMH runs benchmark threads on, so that they are Netty
 * {@link FastThreadLocalThread}s, as a server's event loops are.
 *
 * <p>Netty's allocators treat those threads differently from plain ones: the
 * adaptive allocator gives a thread its own magazines only when it is a
 * {@code FastThreadLocalThread} that cleans up its thread locals, and the
 * pooled allocator looks its thread cache up through an indexed slot instead
 * of a {@code ThreadLocal}. Every benchmark's fork selects this executor
 * ({@code -Djmh.executor=CUSTOM -Djmh.executor.class=...}); JMH makes it with
 * the constructor below.
 */
public final class FastThreadLocalExecutor extends ThreadPoolExecutor {

    /** With {@link #EXECUTOR_CLASS}, the JVM option that makes a JMH fork run its benchmark threads on this executor. */
    public static final String EXECUTOR = "-Djmh.executor=CUSTOM";
    /** See {@link #EXECUTOR}. */
    public static final String EXECUTOR_CLASS = "-Djmh.executor.class=io.slabwise.benchmarks.FastThreadLocalExecutor";

    /**
     * Called by JMH.
     *
     * @param maxThreads the benchmark threads JMH will run at once
     * @param prefix     the prefix of the threads' names
     */
    public FastThreadLocalExecutor(int maxThreads, String prefix) {
        super(maxThreads, maxThreads, 1, TimeUnit.MINUTES, new LinkedBlockingQueue<>(), threads(prefix));
    }

    private static ThreadFactory threads(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return task -> {
            // constructed with its task, the thread cleans up its FastThreadLocals when the task ends
            Thread thread = new FastThreadLocalThread(task, prefix + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }
}
