package io.slabwise;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The default {@link Scheduler}: a {@link ScheduledThreadPoolExecutor} with
 * one daemon thread per JVM ({@code slabwise-chunk-decay}) that runs every
 * registered task once per its period, like jemalloc's background decay
 * thread. The thread starts with the first task and sleeps in the executor
 * until the next task is due. Pools register a task that holds them weakly,
 * so a pool nobody uses any more can be collected; such a task cancels
 * itself, and a cancelled task leaves the executor's queue at once.
 *
 * <p>A task that throws is logged and runs again at its next period: a
 * failing task (a broken chunk source) must not stop the others, nor itself.
 */
final class ChunkDecay implements Scheduler {

    static final ChunkDecay INSTANCE = new ChunkDecay();

    private final ScheduledThreadPoolExecutor executor;

    private ChunkDecay() {
        executor = new ScheduledThreadPoolExecutor(1, work -> {
            Thread thread = new Thread(work, "slabwise-chunk-decay");
            thread.setDaemon(true);
            return thread;
        });
        executor.setRemoveOnCancelPolicy(true);
    }

    @Override
    public Cancellable repeat(Runnable work, Duration period) {
        if (period.isNegative() || period.isZero()) {
            throw new IllegalArgumentException("period must be positive: " + period);
        }
        long nanos = period.toNanos();
        ScheduledFuture<?> scheduled = executor.scheduleWithFixedDelay(() -> runLogged(work), nanos, nanos,
                TimeUnit.NANOSECONDS);
        return () -> scheduled.cancel(false);
    }

    private static void runLogged(Runnable work) {
        try {
            work.run();
        } catch (RuntimeException | Error e) {
            System.getLogger("io.slabwise").log(System.Logger.Level.WARNING, "background task failed", e);
        }
    }
}
