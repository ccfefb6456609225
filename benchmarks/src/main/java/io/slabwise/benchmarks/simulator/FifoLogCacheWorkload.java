package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.ArrayDeque;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A log cache: record batches of 100 B to 1 MiB (log-uniform, so most are
 * small and most bytes are in large ones) are appended, and the oldest are
 * evicted to keep the cache within its byte bound, until the traffic has been
 * appended. Memory allocated together is freed together, in order: the
 * pattern a sequential allocator is made for.
 *
 * <p>Slabwise serves it from its sequential allocator; Netty's allocators from
 * {@code directBuffer}. Under a ceiling (a null buffer) it evicts more, and
 * with nothing left to evict it waits (see {@link Backpressure}).
 */
final class FifoLogCacheWorkload implements Workload {

    static final int MIN_RECORD = 100;
    static final int MAX_RECORD = 1 << 20;

    private final Settings settings;
    private final AtomicLong live;
    private final FinishLine finish;

    FifoLogCacheWorkload(Settings settings, AtomicLong live, FinishLine finish) {
        this.settings = settings;
        this.live = live;
        this.finish = finish;
    }

    @Override
    public String name() {
        return "fifo";
    }

    @Override
    public long expectedOperations() {
        return (long) (2 * settings.trafficBytes() / Distributions.logUniformMean(MIN_RECORD, MAX_RECORD));
    }

    @Override
    public void run(BufferSource source, Samples samples) throws InterruptedException {
        Random random = new Random(settings.seed());
        ArrayDeque<ByteBuf> cache = new ArrayDeque<>();
        long cached = 0;
        long written = 0;
        while (written < settings.trafficBytes()) {
            int size = Distributions.logUniform(random, MIN_RECORD, MAX_RECORD);
            while (cached + size > settings.cacheBytes() && !cache.isEmpty()) {
                cached -= evict(cache, source, samples);
            }
            ByteBuf buf = source.logBuffer(size);
            while (buf == null) {
                if (cache.isEmpty()) {
                    buf = Backpressure.retry(() -> source.logBuffer(size), size); // others hold the memory: wait
                    break;
                }
                cached -= evict(cache, source, samples);
                buf = source.logBuffer(size);
            }
            buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
            cache.addLast(buf);
            cached += size;
            live.addAndGet(size);
            written += size;
            samples.operation(source);
        }
        finish.arrive(source, samples);
        for (ByteBuf buf : cache) {
            live.addAndGet(-buf.capacity());
            buf.release();
        }
        cache.clear();
    }

    private int evict(ArrayDeque<ByteBuf> cache, BufferSource source, Samples samples) {
        ByteBuf oldest = cache.pollFirst();
        int size = oldest.capacity();
        live.addAndGet(-size);
        oldest.release();
        samples.operation(source);
        return size;
    }
}
