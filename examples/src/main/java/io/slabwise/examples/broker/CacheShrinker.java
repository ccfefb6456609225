package io.slabwise.examples.broker;

import io.slabwise.Shrinker;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The shrinker of one category whose buffers belong to one or more caches,
 * the sibling of {@link CacheRelocator}: the partitions of a broker share one
 * {@code log_cache} category, and the allocator takes one {@link Shrinker}
 * per category. A cache made with a {@code CacheShrinker} joins it and leaves
 * it when closed; the shrinker is registered on the allocator while at least
 * one cache has joined. When the pool asks it for memory (above the high
 * watermark, or for an allocation at the ceiling or the category's quota), it
 * has its caches drop their coldest entries: a {@link LogCache} its oldest
 * batches, a {@link BlockCache} its least recently used blocks.
 *
 * <pre>
 *  pool at the ceiling / above the high watermark
 *     └─ shrink(bytes) ─▶ CacheShrinker "log_cache" ─▶ partition 0: tryLock, drop oldest, release ─▶ partition 1 ...
 *                         (each asked for its share of bytes by its size; then, if short, the rest in turn)
 * </pre>
 *
 * <h2>The rules it keeps for every cache</h2>
 * <ul>
 *   <li>It never waits: a cache's lock is taken with {@code tryLock}; a cache
 *       whose lock is held by another thread, or by the calling thread (an
 *       append or a load that allocates at the ceiling shrinks from inside
 *       the cache), is skipped. When every cache with entries was skipped and
 *       nothing was dropped, the answer is {@link Shrinker#BUSY}.</li>
 *   <li>It drops whole entries, coldest first, until what they held reaches
 *       the bytes asked (the last one may take it past), and the cache
 *       releases each during the call. A reader holding a duplicate of a
 *       dropped entry keeps reading it; its memory goes back when the reader
 *       releases it, as after any eviction.</li>
 *   <li>{@link Shrinker#reclaimable()} reads one counter, the bytes the
 *       joined caches hold, which they keep up to date as they change.</li>
 * </ul>
 *
 * <p>Make one per category of an allocator: a second one for the same
 * category would replace the first's registration. Thread-safe: the caches
 * joined are a copy-on-write list, walked without a lock.
 */
public final class CacheShrinker {

    /** A cache's side; implemented privately by each cache, so that only its shrinker can drop its entries. */
    interface Owner {

        /** The lock that guards the cache's entries; the shrinker only ever tries it. */
        ReentrantLock lock();

        /** Bytes the cache holds; any thread, without the lock. */
        long bytes();

        /**
         * Under the lock: drops the coldest entry, releases the cache's
         * reference to it, counts a shrink eviction, and returns the bytes
         * it held; 0 when the cache is empty.
         */
        long dropColdest();
    }

    private final SlabwiseAllocator allocator;
    private final String category;
    private final List<Owner> owners = new CopyOnWriteArrayList<>();
    /** The bytes the joined caches hold: what {@link Shrinker#reclaimable()} answers. */
    private final AtomicLong bytes = new AtomicLong();
    /** Where the next pass for the rest begins, so that no cache is always the last one asked. */
    private final AtomicInteger next = new AtomicInteger();
    private final Shrinker shrinker = new Shrinker() {
        @Override
        public long reclaimable() {
            return bytes.get();
        }

        @Override
        public long shrink(long asked) {
            return CacheShrinker.this.shrink(asked);
        }
    };

    /** The shrinker of {@code category} on {@code allocator}; registered once a cache joins it. */
    public CacheShrinker(SlabwiseAllocator allocator, String category) {
        this.allocator = allocator;
        this.category = category;
    }

    /** The category whose caches it shrinks. */
    public String category() {
        return category;
    }

    /** How many open caches have joined it. */
    public int caches() {
        return owners.size();
    }

    /** What it registers on the allocator; for tests that call it as the pool would. */
    Shrinker shrinker() {
        return shrinker;
    }

    /** The bytes the joined caches hold, as the pool reads them ({@link Shrinker#reclaimable()}). */
    public long reclaimable() {
        return bytes.get();
    }

    /**
     * Adds a cache of {@code cacheCategory}; the first one registers the shrinker.
     *
     * @throws IllegalArgumentException when the cache's buffers are of another category
     */
    synchronized void join(Owner owner, String cacheCategory) {
        if (!category.equals(cacheCategory)) {
            throw new IllegalArgumentException("a cache of '" + cacheCategory + "' cannot join the shrinker of '"
                    + category + "'");
        }
        if (owners.isEmpty()) {
            allocator.setShrinker(category, shrinker);
        }
        owners.add(owner);
    }

    /** Removes a cache (emptied first: its bytes are 0); the last one to leave unregisters the shrinker. */
    synchronized void leave(Owner owner) {
        if (owners.remove(owner) && owners.isEmpty()) {
            allocator.setShrinker(category, null);
        }
    }

    /** A joined cache's bytes changed by {@code delta}; called by the cache under its lock. */
    void changed(long delta) {
        bytes.addAndGet(delta);
    }

    /**
     * Asks each cache for its share of {@code asked}, in proportion to the
     * bytes it holds, then, while short, the caches in turn for the rest.
     */
    private long shrink(long asked) {
        Owner[] all = owners.toArray(new Owner[0]);
        long total = 0;
        for (Owner owner : all) {
            total += owner.bytes();
        }
        if (all.length == 0 || total <= 0) {
            return 0;
        }
        long freed = 0;
        boolean anyBusy = false;
        boolean[] busy = new boolean[all.length];
        for (int i = 0; i < all.length && freed < asked; i++) {
            long share = Math.min(asked - freed, (long) Math.ceil((double) asked * all[i].bytes() / total));
            long dropped = drop(all[i], share);
            busy[i] = dropped == Shrinker.BUSY;
            anyBusy |= busy[i];
            freed += Math.max(0, dropped);
        }
        int start = Math.floorMod(next.getAndIncrement(), all.length);
        for (int k = 0; k < all.length && freed < asked; k++) {
            int i = (start + k) % all.length;
            if (!busy[i]) {
                long dropped = drop(all[i], asked - freed);
                anyBusy |= dropped == Shrinker.BUSY;
                freed += Math.max(0, dropped);
            }
        }
        return freed == 0 && anyBusy ? Shrinker.BUSY : freed;
    }

    /**
     * Has one cache drop its coldest entries until they held {@code bytes};
     * {@link Shrinker#BUSY} when its lock is held (by this thread too).
     */
    private static long drop(Owner owner, long bytes) {
        if (bytes <= 0 || owner.bytes() <= 0) {
            return 0;
        }
        ReentrantLock lock = owner.lock();
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            return Shrinker.BUSY;
        }
        try {
            long dropped = 0;
            while (dropped < bytes) {
                long one = owner.dropColdest();
                if (one == 0) {
                    break;
                }
                dropped += one;
            }
            return dropped;
        } finally {
            lock.unlock();
        }
    }
}
