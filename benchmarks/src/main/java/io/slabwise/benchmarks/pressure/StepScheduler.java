package io.slabwise.benchmarks.pressure;

import io.slabwise.Scheduler;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Scheduler} driven by the workload's own logical clock: every step
 * of the workload is one millisecond of scheduler time, and
 * {@link #advance()} runs, on the calling thread, every task whose period has
 * come round. The pool's background work (idle-memory decay, the pressure
 * check above the high watermark) then runs at the same steps in every run
 * and on every machine, between two steps of the workload, instead of on a
 * daemon thread whose pace depends on the machine's load.
 */
final class StepScheduler implements Scheduler {

    /** One repeated task: its period and the next step at which it runs. */
    private static final class Task {
        final Runnable runnable;
        final long periodSteps;
        long next;
        boolean cancelled;

        Task(Runnable runnable, long periodSteps, long next) {
            this.runnable = runnable;
            this.periodSteps = periodSteps;
            this.next = next;
        }
    }

    private final List<Task> tasks = new ArrayList<>();
    private long now;

    @Override
    public Cancellable repeat(Runnable task, Duration period) {
        long steps = Math.max(1, period.toMillis());
        Task t = new Task(task, steps, now + steps);
        synchronized (tasks) {
            tasks.add(t);
        }
        return () -> t.cancelled = true;
    }

    /** One step (one scheduler millisecond) later: runs the tasks that are due, in the order they were scheduled. */
    void advance() {
        now++;
        List<Task> due = new ArrayList<>();
        synchronized (tasks) {
            tasks.removeIf(t -> t.cancelled);
            for (Task t : tasks) {
                if (t.next <= now) {
                    t.next += t.periodSteps;
                    due.add(t);
                }
            }
        }
        for (Task t : due) {
            t.runnable.run();
        }
    }

    /** The steps so far. */
    long now() {
        return now;
    }
}
