package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Helpers for the concurrency tests: run tasks on threads and fail on any failure, take from a neighbour, await a latch.
 * Public for the tests of the engine's subpackages and of the Netty adapter, which take it from core's test jar.
 */
public final class ConcurrentTasks {

    private ConcurrentTasks() {
    }

    /** Runs every task on its own thread, waits for all, and rethrows the first failure of any. */
    public static void runConcurrently(List<Runnable> tasks) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (Runnable task : tasks) {
            threads.add(startCapturingFailure(task, failure));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("a worker failed", failure.get());
        }
    }

    /** Starts {@code task} on a new thread; its failure, if any, goes into {@code failure} (the first one wins). */
    public static Thread startCapturingFailure(Runnable task, AtomicReference<Throwable> failure) {
        Thread thread = new Thread(() -> {
            try {
                task.run();
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        });
        thread.start();
        return thread;
    }

    /** The next item a neighbouring thread hands over; fails if none comes within 10 s (a broken neighbour). */
    public static <T> T takeFromNeighbour(BlockingQueue<T> queue) {
        try {
            T item = queue.poll(10, TimeUnit.SECONDS); // a bound for a broken neighbour, not a pause
            assertNotNull(item, "a neighbour stopped handing over");
            return item;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * Waits at {@code barrier} for the other parties; fails with {@code stuck}
     * if they do not all arrive within 10 s (a bound for a stuck thread, not a
     * pause) or if the barrier broke because another party failed.
     */
    public static void await(CyclicBarrier barrier, String stuck) {
        try {
            barrier.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(stuck, e);
        } catch (BrokenBarrierException | TimeoutException e) {
            throw new AssertionError(stuck, e);
        }
    }

    /** Waits for {@code latch}; fails with {@code stuck} if it does not open within 10 s (a bound for a stuck thread, not a pause). */
    public static void await(CountDownLatch latch, String stuck) {
        try {
            assertTrue(latch.await(10, TimeUnit.SECONDS), stuck);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * Spins until {@code n} callers wait for memory in {@code pool}: the state
     * a limit test is about, reached without sleeping. The test class's
     * timeout bounds a caller that never queues: its interrupt ends the spin.
     */
    public static void awaitWaiting(MemoryPool pool, int n) {
        while (pool.waitingAllocations() < n) {
            stopIfInterrupted(() -> pool.waitingAllocations() + " of " + n + " callers waiting");
            Thread.onSpinWait();
        }
    }

    /**
     * Fails when the calling thread was interrupted, as the test class's
     * timeout interrupts a test: a spin that checks it ends with the test.
     */
    public static void stopIfInterrupted(java.util.function.Supplier<String> state) {
        if (Thread.interrupted()) {
            throw new AssertionError("interrupted while spinning, with " + state.get());
        }
    }
}
