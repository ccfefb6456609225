package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A block cache: blocks of 64 KiB to 8 MiB (log-uniform, fixed per key) read
 * with Zipf-skewed keys (exponent 0.9) over a key space whose blocks add up to
 * about four times the cache; a miss loads the block and evicts the least
 * recently used blocks to stay within the byte bound, until the traffic has
 * been loaded. Sizes and lifetimes are all mixed, so a general allocator's
 * free space is cut into holes of every size.
 *
 * <p>Slabwise serves it from its block pool (a payload is a composite of 1 MiB
 * blocks and smaller sub-blocks); Netty's allocators from {@code directBuffer}.
 * Under a ceiling (a null buffer) it evicts more, and with nothing left to
 * evict it waits (see {@link Backpressure}).
 */
final class LruBlockCacheWorkload implements Workload {

    static final int MIN_BLOCK = 64 * 1024;
    static final int MAX_BLOCK = 8 * 1024 * 1024;

    private final Settings settings;
    private final AtomicLong live;
    private final FinishLine finish;

    LruBlockCacheWorkload(Settings settings, AtomicLong live, FinishLine finish) {
        this.settings = settings;
        this.live = live;
        this.finish = finish;
    }

    @Override
    public String name() {
        return "lru";
    }

    @Override
    public long expectedOperations() {
        return (long) (2 * settings.trafficBytes() / Distributions.logUniformMean(MIN_BLOCK, MAX_BLOCK));
    }

    @Override
    public void run(BufferSource source, Samples samples) throws InterruptedException {
        Random random = new Random(settings.seed() + 1);
        int keys = (int) Math.max(64, 4 * settings.cacheBytes() / Distributions.logUniformMean(MIN_BLOCK, MAX_BLOCK));
        Distributions.Zipf zipf = new Distributions.Zipf(keys, 0.9);
        int[] sizes = new int[keys];
        Random sizing = new Random(settings.seed() + 2);
        for (int k = 0; k < keys; k++) {
            sizes[k] = Distributions.logUniform(sizing, MIN_BLOCK, MAX_BLOCK);
        }
        LinkedHashMap<Integer, ByteBuf> cache = new LinkedHashMap<>(keys, 0.75f, true);
        long cached = 0;
        long loaded = 0;
        while (loaded < settings.trafficBytes()) {
            int key = zipf.next(random);
            if (cache.get(key) != null) {
                continue; // a hit: no allocator operation
            }
            int size = sizes[key];
            while (cached + size > settings.cacheBytes() && !cache.isEmpty()) {
                cached -= evictEldest(cache, source, samples);
            }
            ByteBuf buf = source.blockBuffer(size);
            while (buf == null) {
                if (cache.isEmpty()) {
                    buf = Backpressure.retry(() -> source.blockBuffer(size), size); // others hold the memory: wait
                    break;
                }
                cached -= evictEldest(cache, source, samples);
                buf = source.blockBuffer(size);
            }
            buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
            cache.put(key, buf);
            cached += size;
            live.addAndGet(size);
            loaded += size;
            samples.operation(source);
        }
        finish.arrive(source, samples);
        for (ByteBuf buf : cache.values()) {
            live.addAndGet(-buf.capacity());
            buf.release();
        }
        cache.clear();
    }

    private int evictEldest(LinkedHashMap<Integer, ByteBuf> cache, BufferSource source, Samples samples) {
        Iterator<Map.Entry<Integer, ByteBuf>> eldest = cache.entrySet().iterator();
        ByteBuf buf = eldest.next().getValue();
        eldest.remove();
        int size = buf.capacity();
        live.addAndGet(-size);
        buf.release();
        samples.operation(source);
        return size;
    }
}
