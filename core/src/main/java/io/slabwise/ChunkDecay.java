package io.slabwise;

import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The default {@link Scheduler}: one daemon thread per JVM
 * ({@code slabwise-chunk-decay}) that runs every registered task once per its
 * period, like jemalloc's background decay thread. It starts with the first
 * task. Pools register a task that holds them weakly, so a pool nobody uses
 * any more can be collected; such a task cancels itself.
 */
final class ChunkDecay implements Scheduler {

    static final ChunkDecay INSTANCE = new ChunkDecay();

    private final ConcurrentLinkedQueue<Task> tasks = new ConcurrentLinkedQueue<>();
    private volatile Thread thread;

    private ChunkDecay() {
    }

    /** A task and when it runs next; its fields belong to the decay thread, but for the cancel flag. */
    private static final class Task implements Cancellable {
        final Runnable work;
        final long periodNanos;
        long nextRunNanos;
        volatile boolean cancelled;

        Task(Runnable work, long periodNanos) {
            this.work = work;
            this.periodNanos = periodNanos;
            this.nextRunNanos = System.nanoTime() + periodNanos;
        }

        @Override
        public void cancel() {
            cancelled = true;
        }
    }

    @Override
    public Cancellable repeat(Runnable work, Duration period) {
        if (period.isNegative() || period.isZero()) {
            throw new IllegalArgumentException("period must be positive: " + period);
        }
        Task task = new Task(work, period.toNanos());
        tasks.add(task);
        if (thread == null) {
            synchronized (this) {
                if (thread == null) {
                    Thread t = new Thread(this::run, "slabwise-chunk-decay");
                    t.setDaemon(true);
                    t.start();
                    thread = t;
                }
            }
        }
        return task;
    }

    private void run() {
        long tick = Duration.ofMillis(100).toNanos();
        while (true) {
            try {
                Thread.sleep(tick / 1_000_000);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            tasks.removeIf(task -> task.cancelled);
            for (Task task : tasks) {
                if (now - task.nextRunNanos >= 0 && !task.cancelled) {
                    task.nextRunNanos = now + task.periodNanos;
                    try {
                        task.work.run();
                    } catch (RuntimeException | Error e) {
                        // a failing task (a broken chunk source) must not stop the others
                        System.getLogger("io.slabwise").log(System.Logger.Level.WARNING, "background task failed", e);
                    }
                }
            }
        }
    }
}
