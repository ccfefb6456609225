package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.BlockByteBufAllocator;
import io.slabwise.netty.BufferEvacuation;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;

/**
 * A broker's block cache: blocks of segments read from object storage
 * (typically 64 KiB to 8 MiB), bounded by bytes, evicting the least recently
 * used (LRU). Blocks live in composites of fixed-size blocks from a
 * {@link BlockByteBufAllocator}, so the mix of sizes and lifetimes does not
 * fragment the memory behind it.
 *
 * <pre>
 *  access order  [ least recently used ........................ most recently used ]
 *                  ^ evicted first                               ^ get / getOrLoad put it here
 * </pre>
 *
 * <p>Every cached block is held by exactly one reference of the cache; an
 * eviction or an {@linkplain #invalidate invalidation} releases it, so its
 * memory is freed as soon as no reader holds a duplicate of it. The cache's
 * {@link #bytes()} therefore equal the requested bytes of its allocator's
 * category while no reader holds a block that left the cache.
 *
 * <h2>Relocation</h2>
 * A payload's tail lies in sub-blocks and mini-blocks shared with other
 * payloads; once most of those are gone (evicted, or invalidated when
 * retention deletes their segments), a few tails keep whole blocks. Made with
 * a {@link CacheRelocator}, the cache lets a compaction move the payloads
 * that lie in such blocks: under its lock, taken without waiting, it copies
 * each one whole to new memory, puts the copy in the map in place of the old
 * one without changing its place in the LRU order, and releases the old one.
 * A reader holding a duplicate keeps reading the old bytes; that memory goes
 * back when the reader releases it.
 *
 * <p>Thread-safe: one lock guards it; a loader runs under it, so two readers
 * never load the same block twice (and a slow loader holds up the others:
 * fine for an example, not for a broker). A compaction that finds the lock
 * held (during a load, say) leaves the blocks where they are and counts a
 * {@linkplain #relocationsSkipped() skip}.
 *
 * <h2>Shrinking</h2>
 * Made with a {@link CacheShrinker}, the cache gives memory back when the pool
 * is under pressure: before a network burst is refused at the ceiling, or in
 * the background above the high watermark, the shrinker takes the lock
 * without waiting (so never during a load) and the cache drops its least
 * recently used blocks, releasing each, until they held what the pool asked
 * for. A reader holding a duplicate of a dropped block keeps reading it
 * until it releases it; the next lookup of its key misses and loads it again.
 * Such drops count in {@link #evictions()} and, apart, in
 * {@link #shrinkEvictions()}.
 */
public final class BlockCache implements AutoCloseable {

    private final BlockByteBufAllocator allocator;
    private final long maxBytes;
    private final CacheRelocator relocator;
    /** This cache's side of the relocator; private, so that only the relocator can move its blocks. */
    private final CacheRelocator.Owner owner = this::relocate;
    private final CacheShrinker shrinker;
    /** This cache's side of the shrinker; private, so that only the shrinker can drop its blocks. */
    private final CacheShrinker.Owner shrinkOwner = new CacheShrinker.Owner() {
        @Override
        public ReentrantLock lock() {
            return lock;
        }

        @Override
        public long bytes() {
            return bytes;
        }

        @Override
        public long dropColdest() {
            if (entries.isEmpty()) {
                return 0;
            }
            shrinkEvictions++;
            return evictEldest();
        }
    };
    private final ReentrantLock lock = new ReentrantLock();
    private final LinkedHashMap<String, ByteBuf> entries = new LinkedHashMap<>(64, 0.75f, true);
    /** Written under the lock; volatile so that the shrinker reads it without the lock. */
    private volatile long bytes;
    private long hits;
    private long misses;
    private long evictions;
    private long shrinkEvictions;
    private long relocations;
    /** Counted without the lock: the compaction that counts it could not take it. */
    private final AtomicLong relocationsSkipped = new AtomicLong();
    private boolean closed;

    /**
     * A cache of at most {@code maxBytes} bytes of blocks, whose blocks never move.
     *
     * @throws IllegalArgumentException when {@code maxBytes} is not positive
     */
    public BlockCache(BlockByteBufAllocator allocator, long maxBytes) {
        this(allocator, maxBytes, null);
    }

    /**
     * A cache of at most {@code maxBytes} bytes of blocks that joins
     * {@code relocator} (the relocator of its allocator's category, on the
     * allocator that made {@code allocator}), so that compactions can move its
     * blocks, until it is closed; with a null relocator its blocks never move.
     *
     * @throws IllegalArgumentException when {@code maxBytes} is not positive, or the relocator is of another category
     */
    public BlockCache(BlockByteBufAllocator allocator, long maxBytes, CacheRelocator relocator) {
        this(allocator, maxBytes, relocator, null);
    }

    /**
     * A cache of at most {@code maxBytes} bytes of blocks that joins
     * {@code relocator} and {@code shrinker} (both of its allocator's
     * category, on the allocator that made {@code allocator}) until it is
     * closed: compactions can move its blocks, and memory pressure makes it
     * drop its least recently used ones. Either may be null: its blocks then
     * never move, or leave only by its own bound and limits.
     *
     * @throws IllegalArgumentException when {@code maxBytes} is not positive, or the relocator or the shrinker
     *                                  is of another category
     */
    public BlockCache(BlockByteBufAllocator allocator, long maxBytes, CacheRelocator relocator,
                      CacheShrinker shrinker) {
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be positive: " + maxBytes);
        }
        this.allocator = allocator;
        this.maxBytes = maxBytes;
        this.relocator = relocator;
        this.shrinker = shrinker;
        if (shrinker != null) {
            shrinker.join(shrinkOwner, allocator.category()); // first: it checks the category, and holds nothing yet
        }
        if (relocator != null) {
            try {
                relocator.join(owner, allocator.category());
            } catch (RuntimeException e) {
                if (shrinker != null) {
                    shrinker.leave(shrinkOwner);
                }
                throw e;
            }
        }
    }

    /**
     * The block under {@code key} as a retained duplicate the caller must
     * release, or null on a miss; a hit makes it the most recently used.
     */
    public ByteBuf get(String key) {
        lock.lock();
        try {
            ByteBuf buf = entries.get(key);
            if (buf == null) {
                misses++;
                return null;
            }
            hits++;
            return buf.retainedDuplicate();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The block under {@code key}; on a miss, a buffer of {@code size} bytes is
     * allocated, filled by {@code loader} (key, buffer to write into, writer
     * index 0), and cached, evicting least-recently-used blocks until it fits;
     * at the pool's ceiling or the category's quota it evicts more and tries
     * again, never waiting, whatever the category's policy.
     *
     * @return a retained duplicate the caller must release, or null when the
     *         block is larger than the cache or memory was refused with nothing left to evict
     * @throws IllegalArgumentException when {@code size} is not positive
     * @throws IllegalStateException    when the cache is closed
     */
    public ByteBuf getOrLoad(String key, int size, BiConsumer<String, ByteBuf> loader) {
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("the block cache is closed");
            }
            if (size <= 0) {
                throw new IllegalArgumentException("block '" + key + "' must have a positive size: " + size);
            }
            ByteBuf cached = get(key);
            if (cached != null || size > maxBytes) {
                return cached;
            }
            while (bytes + size > maxBytes) {
                evictEldest();
            }
            // never waits at a limit, whatever the category's policy: the memory to wait for is this cache's own,
            // which only eviction (under this lock) gives back; refused, it makes room and tries again
            ByteBuf buf = allocator.tryAllocate(size);
            while (buf == null && !entries.isEmpty()) {
                evictEldest();
                buf = allocator.tryAllocate(size);
            }
            if (buf == null) {
                return null;
            }
            try {
                loader.accept(key, buf);
            } catch (RuntimeException | Error e) {
                buf.release();
                throw e;
            }
            entries.put(key, buf);
            account(buf.capacity()); // what eviction takes off: more than size if the loader wrote past it
            return buf.retainedDuplicate();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Removes the block under {@code key} and releases the cache's reference
     * to it (its segment was deleted, say); not counted as an eviction nor as a
     * lookup.
     *
     * @return whether it was cached
     */
    public boolean invalidate(String key) {
        lock.lock();
        try {
            ByteBuf buf = entries.remove(key);
            if (buf == null) {
                return false;
            }
            account(-buf.capacity());
            buf.release();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: evicts the least recently used block and returns its bytes. */
    private long evictEldest() {
        Iterator<Map.Entry<String, ByteBuf>> eldest = entries.entrySet().iterator();
        ByteBuf buf = eldest.next().getValue();
        eldest.remove();
        int size = buf.capacity();
        account(-size);
        evictions++;
        buf.release();
        return size;
    }

    /** Under the lock: the cache's bytes changed by {@code delta}; so did the shrinker's count. */
    private void account(long delta) {
        bytes += delta; // one writer at a time: the lock's holder
        if (shrinker != null) {
            shrinker.changed(delta);
        }
    }

    /**
     * Moves the blocks {@code evacuation} contains, least recently used
     * first, while its budget lasts; returns at once when the lock is held.
     */
    private void relocate(BufferEvacuation evacuation) {
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            relocationsSkipped.incrementAndGet();
            evacuation.refused(); // tells the pool its entries may still move later
            return;
        }
        try {
            // walking the entries and setting a value in place leaves the access order as it is (put would not)
            for (Map.Entry<String, ByteBuf> entry : entries.entrySet()) { // none once closed
                if (!evacuation.budgetLeft()) {
                    return;
                }
                ByteBuf old = entry.getValue();
                if (!evacuation.contains(old)) {
                    continue;
                }
                ByteBuf moved = evacuation.move(old);
                if (moved != null) { // else the budget is spent or a limit refused: it stays, counted by the pool
                    entry.setValue(moved);
                    old.release();
                    relocations++;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Bytes of blocks cached. */
    public long bytes() {
        return underLock(() -> bytes);
    }

    /** The bound on {@link #bytes()}. */
    public long maxBytes() {
        return maxBytes;
    }

    /** Blocks cached. */
    public int size() {
        return (int) underLock(() -> entries.size());
    }

    /** Lookups that found their block. */
    public long hits() {
        return underLock(() -> hits);
    }

    /** Lookups that did not. */
    public long misses() {
        return underLock(() -> misses);
    }

    /** Blocks evicted so far (by loads, by shrinking and by {@link #close()}). */
    public long evictions() {
        return underLock(() -> evictions);
    }

    /** Of the {@linkplain #evictions() evictions}, the blocks dropped because the pool asked the shrinker. */
    public long shrinkEvictions() {
        return underLock(() -> shrinkEvictions);
    }

    /** Blocks moved to new memory by compactions so far. */
    public long relocations() {
        return underLock(() -> relocations);
    }

    /** Compactions that found the cache's lock held and left its blocks where they were. */
    public long relocationsSkipped() {
        return relocationsSkipped.get();
    }

    /** Whether {@code key} is cached, without touching its recency. */
    public boolean contains(String key) {
        lock.lock();
        try {
            return entries.containsKey(key);
        } finally {
            lock.unlock();
        }
    }

    /** Reads a field under the lock. */
    private long underLock(LongSupplier field) {
        lock.lock();
        try {
            return field.getAsLong();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Releases every cached block and leaves the relocator and the shrinker;
     * later loads fail, lookups miss. Closing twice does nothing.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            while (!entries.isEmpty()) {
                evictEldest();
            }
        } finally {
            lock.unlock();
        }
        if (relocator != null) {
            relocator.leave(owner);
        }
        if (shrinker != null) {
            shrinker.leave(shrinkOwner);
        }
    }
}
