package io.slabwise;

import java.lang.ref.Reference;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The pool's background work and its end: the decay (with the background
 * compaction) once a second and the pressure check on the pool's
 * {@link Scheduler}, the reclaim before a refusal at the ceiling, and the
 * giving back when the pool closes. It decides when; {@link IdleMemory},
 * {@link Compaction} and {@link Pressure} do the work.
 *
 * <p>The periodic tasks hold the pool only weakly: a pool nobody uses any
 * more is collected (its memory then goes back through its cleaner), and
 * its tasks cancel themselves at their next run.
 *
 * <p>Built before the parts that need it at the ceiling, it is
 * {@linkplain #start started} once the compaction it drives exists, before
 * the pool is published. Any thread.
 */
final class Upkeep implements Admission.CeilingReclaim {

    /** How often idle memory is checked for decay. */
    static final Duration DECAY_PERIOD = Duration.ofSeconds(1);
    /** The shortest time between two compactions made by allocations refused at the ceiling. */
    private static final long CEILING_COMPACTION_GAP = Duration.ofMillis(100).toNanos();

    private final PoolConfig config;
    private final MemoryLimit limit;
    private final CommittedMemory committed;
    private final DedicatedRegions dedicated;
    private final ThreadCaches threadCaches;
    private final IdleMemory idle;
    private final Pressure pressure;
    /** When the last compaction at the ceiling started, in ticker nanoseconds; at most one per {@link #CEILING_COMPACTION_GAP}. */
    private final AtomicLong lastCeilingCompaction = new AtomicLong(Long.MIN_VALUE);
    /** Set by {@link #start}, before the pool is published (so every thread that reaches the pool sees them). */
    private Compaction compaction;
    private WeakReference<Object> owner;
    private Scheduler.Cancellable decayTask;
    /** The background pressure check, scheduled with the first shrinker; null before. */
    private volatile Scheduler.Cancellable pressureTask;

    Upkeep(PoolConfig config, MemoryLimit limit, CommittedMemory committed, DedicatedRegions dedicated,
           ThreadCaches threadCaches, IdleMemory idle, Pressure pressure) {
        this.config = config;
        this.limit = limit;
        this.committed = committed;
        this.dedicated = dedicated;
        this.threadCaches = threadCaches;
        this.idle = idle;
        this.pressure = pressure;
    }

    /**
     * Starts the decay once every part exists; the tasks run while
     * {@code pool} (the façade, only ever held weakly here) is reachable.
     */
    void start(Object pool, Compaction compactionPart) {
        this.compaction = compactionPart;
        this.owner = new WeakReference<>(pool);
        this.decayTask = repeat(DECAY_PERIOD, Upkeep::decay);
    }

    /** Runs {@code work} on this every {@code period} on the pool's scheduler while the pool is reachable. */
    private Scheduler.Cancellable repeat(Duration period, Consumer<Upkeep> work) {
        PoolTask task = new PoolTask(owner, new WeakReference<>(this), work);
        Scheduler.Cancellable scheduled = config.scheduler().repeat(task, period);
        task.handle = scheduled;
        return scheduled;
    }

    /**
     * A periodic task of a pool: runs while the pool is reachable, then
     * cancels itself. It holds the pool and its upkeep weakly, and its work
     * captures nothing: the scheduler's threads must not keep a pool alive
     * (every part reaches the pool through its categories).
     */
    private static final class PoolTask implements Runnable {
        private final WeakReference<Object> pool;
        private final WeakReference<Upkeep> upkeep;
        private final Consumer<Upkeep> work;
        private volatile Scheduler.Cancellable handle;

        PoolTask(WeakReference<Object> pool, WeakReference<Upkeep> upkeep, Consumer<Upkeep> work) {
            this.pool = pool;
            this.upkeep = upkeep;
            this.work = work;
        }

        @Override
        public void run() {
            Object live = pool.get();
            Upkeep parts = upkeep.get();
            if (live != null && parts != null) {
                work.accept(parts);
                Reference.reachabilityFence(live); // the pool's cleaner must not give its memory back under the work
            } else if (handle != null) {
                handle.cancel();
            }
        }
    }

    /**
     * Gives back chunks and blocks idle for longer than the decay time,
     * keeping {@code minIdleChunks}, then compacts within the configured
     * budget. In a closed pool everything idle goes back instead, until
     * nothing is committed.
     *
     * @return the number of chunks and blocks given back
     */
    int decay() {
        if (limit.isClosed()) {
            // closed: nothing stays idle, so what the caches of threads that ended after close() held (flushed into
            // their arenas by the reclaim of dead threads) goes back too; the task stops once nothing is committed
            idle.reclaimAll(true);
            if (committed.committed() == 0) {
                decayTask.cancel();
            }
            return 0;
        }
        int given = idle.decay();
        long budget = config.compactionBytesPerSecond();
        if (budget > 0) {
            compaction.compact(Compaction.DEFAULT_MAX_OCCUPANCY, budget * DECAY_PERIOD.toSeconds(), false, "background");
        }
        return given;
    }

    /**
     * Before an allocation is refused at the ceiling: idle memory goes back,
     * and (at most once every 100 ms, never waiting for a compaction under
     * way) relocatable entries move out of sparse chunks so that those go
     * back too.
     */
    @Override
    public void reclaimForCeiling() {
        idle.reclaimAll(false);
        if (compaction.hasRelocators()) {
            long now = config.ticker().read();
            long last = lastCeilingCompaction.get();
            if ((last == Long.MIN_VALUE || now - last >= CEILING_COMPACTION_GAP) && lastCeilingCompaction.compareAndSet(last, now)) {
                compaction.compact(Compaction.DEFAULT_MAX_OCCUPANCY, Long.MAX_VALUE, false, "ceiling");
            }
        }
    }

    /**
     * Starts the background pressure check, once, when the first shrinker
     * comes in a pool where pressure is on and runs in the background.
     */
    void shrinkerAdded() {
        if (pressureTask == null && pressure.active() && config.pressure().background()) {
            synchronized (this) {
                if (pressureTask == null) {
                    pressureTask = repeat(config.pressure().checkPeriod(), Upkeep::pressureTick);
                }
            }
        }
    }

    /** One background pressure check; none once the pool is closed. */
    private void pressureTick() {
        if (!limit.isClosed()) {
            pressure.background(compaction);
        }
    }

    /**
     * After the pool closed: stops the pressure check, gives back at once
     * what is idle (chunks, blocks, spare chunks, the closing thread's cache
     * and dead threads' caches), and stops the decay when nothing is left
     * committed; otherwise the decay runs on, giving back what live buffers
     * and live threads' caches return.
     */
    void closed() {
        Scheduler.Cancellable pressureCheck = pressureTask;
        if (pressureCheck != null) {
            pressureCheck.cancel();
        }
        committed.close(); // before committed() is read below: nothing is committed after that read
        dedicated.close();
        idle.reclaimAll(true);
        threadCaches.forgetOwn();
        if (committed.committed() == 0) {
            decayTask.cancel(); // else it runs on, giving back what threads alive at close held once they end (see decay)
        }
    }
}
