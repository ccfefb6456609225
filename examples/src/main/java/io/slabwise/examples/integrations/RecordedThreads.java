package io.slabwise.examples.integrations;

import io.netty.util.concurrent.DefaultThreadFactory;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadFactory;

/**
 * Makes the threads of a framework's event loops and executors and keeps
 * them, so that a shutdown can wait until each one has ended: a pool gives a
 * thread's cache back at once when it closes only if that thread has ended.
 * The threads are Netty's (fast thread-local, daemon), named after their role.
 */
public final class RecordedThreads {

    private final List<Thread> threads = new CopyOnWriteArrayList<>();

    /** A factory of daemon threads named {@code role-N-M}, each kept here. */
    public ThreadFactory factory(String role) {
        ThreadFactory netty = new DefaultThreadFactory(role, true);
        return task -> {
            Thread thread = netty.newThread(task);
            threads.add(thread);
            return thread;
        };
    }

    /** How many threads were made. */
    public int count() {
        return threads.size();
    }

    /**
     * Waits until every thread made so far has ended, up to {@code timeout} in
     * all; returns whether they have.
     *
     * @throws InterruptedException when interrupted while waiting
     */
    public boolean awaitEnd(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Thread thread : threads) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return threads.stream().noneMatch(Thread::isAlive);
            }
            thread.join(Math.max(1, left / 1_000_000));
        }
        return threads.stream().noneMatch(Thread::isAlive);
    }

    /** The names of the threads still alive, for a message. */
    public List<String> alive() {
        return threads.stream().filter(Thread::isAlive).map(Thread::getName).toList();
    }
}
