package io.slabwise.benchmarks.simulator;

import io.netty.util.concurrent.FastThreadLocalThread;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Everything at once on one allocator, one thread each:
 *
 * <pre>
 *  fifo     log cache,   half the bound, half the traffic   ─┐ counted and sampled,
 *  lru      block cache, half the bound, half the traffic   ─┘ meet at the finish line
 *  phase    phase-shifting mix, target a quarter of the bound, passes until the finish line
 *  network  bursts of short-lived buffers, until the finish line
 * </pre>
 *
 * The {@code broker} variant leaves out the phase thread: the two caches on
 * their dedicated allocators and network buffers on the general one, which is
 * what a broker holds when it keeps no other long-lived data in direct memory.
 * The {@code mix-moving} variant is the mix whose three owners of long-lived
 * buffers (the log cache, the block cache, the phase thread) move them when a
 * compaction asks (see {@link Owner}); the network buffers never move.
 *
 * The operations counted (and the samples' x axis) are the two caches'
 * allocations and releases, whose sequence is fixed by the seed; requested
 * bytes are what all its threads hold. A cache that is done first keeps its
 * contents until the other is done too, so every sample sees all four at
 * work. The phase and network threads stop when both caches are done.
 */
final class MixedWorkload implements Workload {

    private final Settings settings;
    private final AtomicLong live;
    private final boolean withPhase;
    private final Compacting compacting;

    /**
     * @param withPhase  whether a phase-shifting thread runs beside the caches and the network ({@code mix}) or not
     *                   ({@code broker})
     * @param compacting how the owners of long-lived buffers (the two caches, the phase thread) move them; null: they
     *                   never move
     */
    MixedWorkload(Settings settings, AtomicLong live, boolean withPhase, Compacting compacting) {
        this.settings = settings;
        this.live = live;
        this.withPhase = withPhase;
        this.compacting = compacting;
    }

    @Override
    public String name() {
        return (withPhase ? "mix" : "broker") + (compacting == null ? "" : "-moving");
    }

    @Override
    public long expectedOperations() {
        return caches(new FinishLine(2)).stream().mapToLong(Workload::expectedOperations).sum();
    }

    private List<Workload> caches(FinishLine finish) {
        Settings half = settings.scaled(settings.trafficBytes() / 2, settings.cacheBytes() / 2);
        return List.of(new FifoLogCacheWorkload(half, live, finish, compacting),
                new LruBlockCacheWorkload(half, live, finish, compacting));
    }

    @Override
    public void run(BufferSource source, Samples samples) throws Exception {
        FinishLine finish = new FinishLine(2);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (Workload cache : caches(finish)) {
            threads.add(start(cache, source, samples, finish, failure));
        }
        if (withPhase) {
            Settings quarter = settings.scaled(0, settings.cacheBytes() / 4);
            Workload phase = new PhaseShiftWorkload(quarter, Integer.MAX_VALUE, finish::passed, live, null, compacting);
            threads.add(start(phase, source, Samples.uncounted("phase", live), finish, failure));
        }
        threads.add(start(new NetworkWorkload(settings, finish::passed, live), source,
                Samples.uncounted("network", live), finish, failure));
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a workload thread of the mix failed", failure.get());
        }
    }

    /** Starts a workload thread; if it fails, the finish line is abandoned so the others do not wait for it. */
    private static Thread start(Workload workload, BufferSource source, Samples samples, FinishLine finish,
                                AtomicReference<Throwable> failure) {
        Thread thread = new FastThreadLocalThread(() -> {
            try {
                workload.run(source, samples);
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
                finish.abandon();
            }
        }, "mix-" + workload.name());
        thread.start();
        return thread;
    }
}
