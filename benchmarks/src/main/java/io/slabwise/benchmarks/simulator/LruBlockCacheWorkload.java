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
 *
 * <p>In {@code mix-moving} it owns its blocks as their {@link Owner}: its
 * relocator moves payloads out of blocks sparsely cut into sub-blocks (on
 * Slabwise, category {@link BufferSource#BLOCK_CACHE}). A payload moves whole,
 * so it leaves in place those larger than {@link #MAX_MOVED}, and those in the
 * least recently used half of the cache's bytes, which it evicts next: moving
 * every payload it was asked to (as a first version did) copied more than the
 * traffic itself at no gain, the block pool being nearly unfragmented already.
 */
final class LruBlockCacheWorkload implements Workload {

    static final int MIN_BLOCK = 64 * 1024;
    static final int MAX_BLOCK = 8 * 1024 * 1024;
    /**
     * The largest payload the cache moves, the block pool's block size: a
     * payload moves whole, so a larger one would copy whole blocks to free a
     * block cut into sub-blocks.
     */
    static final int MAX_MOVED = 1024 * 1024;

    private final Settings settings;
    private final AtomicLong live;
    private final FinishLine finish;

    private final Compacting compacting;

    /** @param compacting how the cache moves its blocks as their owner; null: they never move */
    LruBlockCacheWorkload(Settings settings, AtomicLong live, FinishLine finish, Compacting compacting) {
        this.settings = settings;
        this.live = live;
        this.finish = finish;
        this.compacting = compacting;
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
        Owner owner = Owner.compacting(source, compacting, settings.cacheBytes());
        LinkedHashMap<Integer, ByteBuf> cache = new LinkedHashMap<>(keys, 0.75f, true);
        owner.register(BufferSource.BLOCK_CACHE, evacuation -> {
            long total = 0;
            for (ByteBuf buf : cache.values()) {
                total += buf.capacity();
            }
            long older = 0; // bytes of the blocks less recently used than this one: evicted before it
            for (Iterator<Map.Entry<Integer, ByteBuf>> it = cache.entrySet().iterator(); it.hasNext() && evacuation.budgetLeft(); ) {
                Map.Entry<Integer, ByteBuf> entry = it.next();
                ByteBuf buf = entry.getValue();
                if (older < total / 2 || buf.capacity() > MAX_MOVED) {
                    owner.keep(evacuation, buf); // evicted soon, or copying it costs more than a block
                } else {
                    entry.setValue(owner.moved(evacuation, buf)); // not an access: the order stays
                }
                older += buf.capacity();
            }
        });
        long cached = 0;
        long loaded = 0;
        while (loaded < settings.trafficBytes()) {
            int key = zipf.next(random);
            owner.lock();
            boolean hit = cache.get(key) != null; // an access: it moves the entry to the young end
            owner.unlock();
            if (hit) {
                continue; // a hit: no allocator operation
            }
            int size = sizes[key];
            while (cached + size > settings.cacheBytes() && cached > 0) { // its own count: the map is read under the lock
                cached -= evictEldest(cache, owner, source, samples);
            }
            ByteBuf buf = source.blockBuffer(size);
            while (buf == null) {
                if (cached == 0) {
                    buf = Backpressure.retry(() -> source.blockBuffer(size), size); // others hold the memory: wait
                    break;
                }
                cached -= evictEldest(cache, owner, source, samples);
                buf = source.blockBuffer(size);
            }
            buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
            owner.lock();
            cache.put(key, buf);
            owner.unlock();
            cached += size;
            live.addAndGet(size);
            loaded += size;
            samples.operation(source);
        }
        finish.arrive(source, samples);
        owner.releaseAllAndUnregister(cache.values(), live); // the values of a map: clearing them empties it
    }

    private int evictEldest(LinkedHashMap<Integer, ByteBuf> cache, Owner owner, BufferSource source, Samples samples) {
        owner.lock();
        Iterator<Map.Entry<Integer, ByteBuf>> eldest = cache.entrySet().iterator();
        ByteBuf buf = eldest.next().getValue();
        eldest.remove();
        owner.unlock();
        int size = buf.capacity();
        live.addAndGet(-size);
        buf.release();
        samples.operation(source);
        owner.released(size);
        return size;
    }
}
