package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A block cache: blocks of 64 KiB to 8 MiB (log-uniform, fixed per key) read
 * with Zipf-skewed keys from a key space about four times the cache; a miss
 * loads the block and evicts least-recently-used blocks to stay within the
 * byte bound. Sizes and lifetimes are all mixed. At the ceiling (a null
 * buffer) it evicts more, and with nothing left to evict it waits (see
 * {@link Backpressure}).
 */
final class LruBlockCacheWorkload implements Workload {

    private static final int MIN = 64 * 1024;
    private static final int MAX = 8 * 1024 * 1024;

    private final Settings settings;
    private final long traffic;
    private final AtomicLong live;

    LruBlockCacheWorkload(Settings settings, long traffic, AtomicLong live) {
        this.settings = settings;
        this.traffic = traffic;
        this.live = live;
    }

    @Override
    public String name() {
        return "lru";
    }

    @Override
    public void run(BufferSource source, Samples samples) {
        Random random = new Random(settings.seed() + 1);
        double meanEntry = (MAX - MIN) / Math.log((double) MAX / MIN);
        int keys = (int) Math.max(64, 4 * settings.cacheBytes() / meanEntry);
        Distributions.Zipf zipf = new Distributions.Zipf(keys, 0.9);
        int[] sizes = new int[keys];
        Random sizing = new Random(settings.seed() + 2);
        for (int k = 0; k < keys; k++) {
            sizes[k] = Distributions.logUniform(sizing, MIN, MAX);
        }
        LinkedHashMap<Integer, ByteBuf> cache = new LinkedHashMap<>(keys, 0.75f, true);
        long cached = 0;
        long loaded = 0;
        long operations = 0;
        while (loaded < traffic) {
            int key = zipf.next(random);
            ByteBuf hit = cache.get(key);
            if (hit == null) {
                int size = sizes[key];
                while (cached + size > settings.cacheBytes() && !cache.isEmpty()) {
                    cached -= evictEldest(cache);
                }
                ByteBuf buf = source.blockBuffer(size);
                while (buf == null) {
                    if (cache.isEmpty()) {
                        buf = Backpressure.retry(() -> source.blockBuffer(size), size); // others hold the memory
                        break;
                    }
                    cached -= evictEldest(cache);
                    buf = source.blockBuffer(size);
                }
                buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
                cache.put(key, buf);
                cached += size;
                live.addAndGet(size);
                loaded += size;
            }
            if (++operations % settings.sampleEvery() == 0 && samples != null) {
                samples.add(operations, live.get(), source);
                if (operations % (settings.sampleEvery() * 10L) == 0) {
                    samples.noteReport(source.report());
                }
            }
        }
        for (ByteBuf buf : cache.values()) {
            live.addAndGet(-buf.capacity());
            buf.release();
        }
        cache.clear();
    }

    private int evictEldest(LinkedHashMap<Integer, ByteBuf> cache) {
        Iterator<Map.Entry<Integer, ByteBuf>> eldest = cache.entrySet().iterator();
        ByteBuf buf = eldest.next().getValue();
        eldest.remove();
        int size = buf.capacity();
        buf.release();
        live.addAndGet(-size);
        return size;
    }
}
