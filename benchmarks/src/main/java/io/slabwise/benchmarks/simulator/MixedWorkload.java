package io.slabwise.benchmarks.simulator;

import io.netty.util.concurrent.FastThreadLocalThread;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Everything at once: the log cache, the block cache and the phase-shifting
 * mix, each on its own thread, plus a thread of short-lived network buffers,
 * all on one allocator. A sampler thread records memory every 20 ms while all
 * of them run; the run ends when the three long workloads have.
 */
final class MixedWorkload implements Workload {

    private final Settings settings;

    MixedWorkload(Settings settings) {
        this.settings = settings;
    }

    @Override
    public String name() {
        return "mix";
    }

    @Override
    public void run(BufferSource source, Samples samples) throws Exception {
        AtomicLong live = new AtomicLong();
        AtomicBoolean stopNetwork = new AtomicBoolean();
        Settings half = new Settings(settings.trafficBytes() / 2, settings.cacheBytes() / 2, settings.seed(),
                settings.sampleEvery());
        List<Workload> longRunning = List.of(
                new FifoLogCacheWorkload(half, half.trafficBytes(), live),
                new LruBlockCacheWorkload(half, half.trafficBytes(), live),
                new PhaseShiftWorkload(new Settings(0, settings.cacheBytes() / 4, settings.seed(), settings.sampleEvery()),
                        2, live));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (Workload w : longRunning) {
            threads.add(start(w, source, failure));
        }
        Thread network = start(new NetworkWorkload(settings, stopNetwork, live), source, failure);
        long ticks = 0;
        while (threads.stream().allMatch(Thread::isAlive)) { // only while everything runs at once
            Thread.sleep(20);
            samples.add(++ticks, live.get(), source);
        }
        while (threads.stream().anyMatch(Thread::isAlive)) { // the tail still counts for the peak
            Thread.sleep(20);
            samples.notePeak(source.committedBytes());
        }
        stopNetwork.set(true);
        network.join();
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a workload thread failed", failure.get());
        }
    }

    private static Thread start(Workload workload, BufferSource source, AtomicReference<Throwable> failure) {
        Thread thread = new FastThreadLocalThread(() -> {
            try {
                workload.run(source, null);
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }, "mix-" + workload.name());
        thread.start();
        return thread;
    }
}
