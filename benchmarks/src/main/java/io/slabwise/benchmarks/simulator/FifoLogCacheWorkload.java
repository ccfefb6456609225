package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.ArrayDeque;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A log cache: record batches of 100 B to 1 MiB (log-uniform) are appended,
 * and the oldest are evicted to keep the cache within its byte bound. Memory
 * allocated together is freed together, in order. At the ceiling (a null
 * buffer) it evicts more, and with nothing left to evict it waits (see
 * {@link Backpressure}).
 */
final class FifoLogCacheWorkload implements Workload {

    private final Settings settings;
    private final long traffic;
    private final AtomicLong live;

    FifoLogCacheWorkload(Settings settings, long traffic, AtomicLong live) {
        this.settings = settings;
        this.traffic = traffic;
        this.live = live;
    }

    @Override
    public String name() {
        return "fifo";
    }

    @Override
    public void run(BufferSource source, Samples samples) {
        Random random = new Random(settings.seed());
        ArrayDeque<ByteBuf> cache = new ArrayDeque<>();
        long cached = 0;
        long written = 0;
        long operations = 0;
        while (written < traffic) {
            int size = Distributions.logUniform(random, 100, 1 << 20);
            while (cached + size > settings.cacheBytes() && !cache.isEmpty()) {
                cached -= evict(cache);
            }
            ByteBuf buf = source.logBuffer(size);
            while (buf == null) {
                if (cache.isEmpty()) {
                    buf = Backpressure.retry(() -> source.logBuffer(size), size); // others hold the memory: wait for them
                    break;
                }
                cached -= evict(cache);
                buf = source.logBuffer(size);
            }
            buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
            cache.addLast(buf);
            cached += size;
            live.addAndGet(size);
            written += size;
            if (++operations % settings.sampleEvery() == 0 && samples != null) {
                samples.add(operations, live.get(), source);
                if (operations % (settings.sampleEvery() * 10L) == 0) {
                    samples.noteReport(source.report());
                }
            }
        }
        while (!cache.isEmpty()) {
            evict(cache);
        }
    }

    private int evict(ArrayDeque<ByteBuf> cache) {
        ByteBuf oldest = cache.pollFirst();
        int size = oldest.capacity();
        oldest.release();
        live.addAndGet(-size);
        return size;
    }
}
