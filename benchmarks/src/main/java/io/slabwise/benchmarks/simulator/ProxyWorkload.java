package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.FastThreadLocalThread;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A small footprint: a web-socket proxy's buffers (sizes drawn from
 * {@link ProxySizes}, 9 B to 18 KiB, mean about 2.5 KiB) on {@value #THREADS}
 * threads, each holding about {@code liveBuffers} direct buffers from the
 * general allocator:
 *
 * <pre>
 *  thread 0..3, each on its own seeded sequence, for {@code steps} steps:
 *    holding n buffers, release a random one with probability n / (2 * liveBuffers),
 *    else allocate one ─▶ n wanders around liveBuffers (about ± sqrt(liveBuffers / 2))
 *  all four arrive at the finish line holding their buffers (final sample),
 *  release them, and end
 * </pre>
 *
 * So the four threads hold about {@code 4 * liveBuffers} buffers, about
 * {@code 4 * liveBuffers * 2.5 KiB} in all: 1.2 MiB at 128 live buffers per
 * thread, 9.9 MiB at 1,024. Every buffer is released on the thread that
 * allocated it. What matters here is the allocator's floor (chunks, arenas,
 * thread caches) rather than fragmentation: what it holds while the threads
 * run, and what it still holds once they have ended (see
 * {@link FragmentationSimulator}'s proxy table). Runs on
 * {@code FastThreadLocalThread}s, as the simulator's other workloads.
 */
final class ProxyWorkload implements Workload {

    static final int THREADS = 4;

    private final int liveBuffers;
    private final long steps;
    private final long seed;
    private final AtomicLong live;

    /**
     * @param liveBuffers the mean number of buffers each thread holds
     * @param steps       allocations and releases each thread makes
     */
    ProxyWorkload(int liveBuffers, long steps, long seed, AtomicLong live) {
        if (liveBuffers < 1 || steps < 1) {
            throw new IllegalArgumentException("live buffers and steps must be positive: " + liveBuffers + ", " + steps);
        }
        this.liveBuffers = liveBuffers;
        this.steps = steps;
        this.seed = seed;
        this.live = live;
    }

    @Override
    public String name() {
        return "proxy-" + liveBuffers;
    }

    @Override
    public long expectedOperations() {
        return THREADS * steps;
    }

    @Override
    public void run(BufferSource source, Samples samples) throws Exception {
        FinishLine finish = new FinishLine(THREADS);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            Random random = new Random(seed * 1_000_003L + 31L * liveBuffers + t);
            Thread thread = new FastThreadLocalThread(() -> {
                try {
                    proxy(random, source, samples, finish);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                    finish.abandon();
                }
            }, name() + "-" + t);
            threads.add(thread);
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a thread of " + name() + " failed", failure.get());
        }
    }

    /** One thread's part: the random walk around {@code liveBuffers}, then the finish line, then release all. */
    private void proxy(Random random, BufferSource source, Samples samples, FinishLine finish)
            throws InterruptedException {
        List<ByteBuf> held = new ArrayList<>(4 * liveBuffers);
        for (long step = 0; step < steps; step++) {
            if (random.nextInt(2 * liveBuffers) < held.size()) {
                int victim = random.nextInt(held.size());
                ByteBuf buf = held.get(victim);
                held.set(victim, held.get(held.size() - 1));
                held.remove(held.size() - 1);
                live.addAndGet(-buf.capacity());
                buf.release();
            } else {
                int size = ProxySizes.next(random);
                ByteBuf buf = source.generalBuffer(size);
                if (buf == null) {
                    throw new IllegalStateException("the allocator refused a " + size + "-byte buffer");
                }
                buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
                held.add(buf);
                live.addAndGet(size);
            }
            samples.operation(source);
        }
        finish.arrive(source, samples);
        for (ByteBuf buf : held) {
            live.addAndGet(-buf.capacity());
            buf.release();
        }
        held.clear();
    }
}
