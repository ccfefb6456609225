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
 *
 * <p>In {@code mix-moving} it owns its records as their {@link Owner}: its
 * relocator moves records out of the sequential allocator's pinned chunks
 * (on Slabwise, category {@link BufferSource#LOG_CACHE}), except the older
 * half of the cache's bytes, which it evicts next: it leaves those in place.
 * In a log cache that evicts strictly oldest first, a chunk thins out only as
 * its oldest records go, so this keeps nearly every record in place; moving
 * them (as a first version did) copied records only to evict them soon after.
 */
final class FifoLogCacheWorkload implements Workload {

    static final int MIN_RECORD = 100;
    static final int MAX_RECORD = 1 << 20;

    private final Settings settings;
    private final AtomicLong live;
    private final FinishLine finish;

    private final Compacting compacting;

    /** @param compacting how the cache moves its records as their owner; null: they never move */
    FifoLogCacheWorkload(Settings settings, AtomicLong live, FinishLine finish, Compacting compacting) {
        this.settings = settings;
        this.live = live;
        this.finish = finish;
        this.compacting = compacting;
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
        Owner owner = Owner.compacting(source, compacting, settings.cacheBytes());
        ArrayDeque<ByteBuf> cache = new ArrayDeque<>();
        owner.register(BufferSource.LOG_CACHE, evacuation -> {
            long total = 0;
            for (ByteBuf buf : cache) {
                total += buf.capacity();
            }
            long older = 0; // bytes of the records before this one: the ones evicted before it
            for (int i = 0, n = cache.size(); i < n; i++) { // one turn round the deque keeps its order
                ByteBuf buf = cache.pollFirst();
                if (older < total / 2) {
                    owner.keep(evacuation, buf); // among the next to be evicted: copying it would be wasted
                    cache.addLast(buf);
                } else {
                    cache.addLast(evacuation.budgetLeft() ? owner.moved(evacuation, buf) : buf);
                }
                older += buf.capacity();
            }
        });
        long cached = 0;
        long written = 0;
        while (written < settings.trafficBytes()) {
            int size = Distributions.logUniform(random, MIN_RECORD, MAX_RECORD);
            while (cached + size > settings.cacheBytes() && cached > 0) { // its own count: the deque is read under the lock
                cached -= evict(cache, owner, source, samples);
            }
            ByteBuf buf = source.logBuffer(size);
            while (buf == null) {
                if (cached == 0) {
                    buf = Backpressure.retry(() -> source.logBuffer(size), size); // others hold the memory: wait
                    break;
                }
                cached -= evict(cache, owner, source, samples);
                buf = source.logBuffer(size);
            }
            buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
            owner.lock();
            cache.addLast(buf);
            owner.unlock();
            cached += size;
            live.addAndGet(size);
            written += size;
            samples.operation(source);
        }
        finish.arrive(source, samples);
        owner.releaseAllAndUnregister(cache, live);
    }

    private int evict(ArrayDeque<ByteBuf> cache, Owner owner, BufferSource source, Samples samples) {
        owner.lock();
        ByteBuf oldest = cache.pollFirst();
        owner.unlock();
        int size = oldest.capacity();
        live.addAndGet(-size);
        oldest.release();
        samples.operation(source);
        owner.released(size);
        return size;
    }
}
