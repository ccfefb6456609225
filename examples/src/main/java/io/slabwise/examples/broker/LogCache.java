package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.BufferEvacuation;
import io.slabwise.netty.SequentialByteBufAllocator;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * A broker's log cache: the most recent record batches of one partition, kept
 * for tail readers, bounded by bytes, evicting the oldest first (FIFO).
 * Batches are copied into buffers of a {@link SequentialByteBufAllocator}, so
 * memory written together is freed together and whole chunks go back as the
 * cache moves on.
 *
 * <pre>
 *  offsets   [ oldest ........................................ newest ]
 *  append:                                      evict from here &lt;-- | --&gt; copy in here
 * </pre>
 *
 * <p>Every cached batch is held by exactly one reference of the cache; an
 * eviction releases it, so its memory is freed as soon as no reader holds a
 * duplicate of it. The cache's {@link #bytes()} therefore equal the requested
 * bytes of its allocator's category while no reader holds an evicted batch.
 *
 * <h2>Relocation</h2>
 * Partitions share the sequential allocator, so when one appends far more
 * than another, the quiet partition's few batches pin chunks that the busy one
 * has long emptied. Made with a {@link CacheRelocator}, the cache lets a
 * compaction move those batches: under its lock, taken without waiting, it
 * copies each batch the compaction names to new memory, points the entry
 * (shared by the offset order and the offset map) at the copy and releases the
 * old buffer. A reader holding a duplicate of it keeps reading the old bytes;
 * that memory goes back when the reader releases it. Offsets, order and
 * {@link #bytes()} do not change.
 *
 * <p>Thread-safe: one lock guards it. Appends and reads are short; the copy
 * happens under the lock, which keeps offsets and buffers in the same order.
 * A compaction that finds the lock held (by another thread, or by its own
 * thread compacting inside an append at the pool's ceiling) leaves the
 * entries where they are and counts a {@linkplain #relocationsSkipped() skip}.
 *
 * <h2>Shrinking</h2>
 * Made with a {@link CacheShrinker}, the cache gives memory back when the pool
 * is under pressure: before a network burst is refused at the ceiling, or in
 * the background above the high watermark, the shrinker takes the lock
 * without waiting and the cache drops its oldest batches, releasing each, until
 * they held what the pool asked for. A tail reader that had already read a
 * dropped batch keeps its duplicate, readable until it releases it; later
 * reads of that offset miss, as after any eviction. Such drops count in
 * {@link #evictions()} and, apart, in {@link #shrinkEvictions()}.
 */
public final class LogCache implements AutoCloseable {

    private final SequentialByteBufAllocator allocator;
    private final long maxBytes;
    private final CacheRelocator relocator;
    /** This cache's side of the relocator; private, so that only the relocator can move its entries. */
    private final CacheRelocator.Owner owner = this::relocate;
    private final CacheShrinker shrinker;
    /** This cache's side of the shrinker; private, so that only the shrinker can drop its entries. */
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
            return evictOldest();
        }
    };
    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Entry> entries = new ArrayDeque<>();
    private final Map<Long, Entry> byOffset = new HashMap<>();
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

    /** A cached batch; its buffer changes when a compaction moves it. Guarded by the lock. */
    private static final class Entry {
        final long offset;
        ByteBuf buffer;

        Entry(long offset, ByteBuf buffer) {
            this.offset = offset;
            this.buffer = buffer;
        }
    }

    /**
     * A cache of at most {@code maxBytes} bytes of batches, whose batches never move.
     *
     * @throws IllegalArgumentException when {@code maxBytes} is not positive
     */
    public LogCache(SequentialByteBufAllocator allocator, long maxBytes) {
        this(allocator, maxBytes, null);
    }

    /**
     * A cache of at most {@code maxBytes} bytes of batches that joins
     * {@code relocator} (the relocator of its allocator's category, on the
     * allocator that made {@code allocator}), so that compactions can move its
     * batches, until it is closed; with a null relocator its batches never move.
     *
     * @throws IllegalArgumentException when {@code maxBytes} is not positive, or the relocator is of another category
     */
    public LogCache(SequentialByteBufAllocator allocator, long maxBytes, CacheRelocator relocator) {
        this(allocator, maxBytes, relocator, null);
    }

    /**
     * A cache of at most {@code maxBytes} bytes of batches that joins
     * {@code relocator} and {@code shrinker} (both of its allocator's
     * category, on the allocator that made {@code allocator}) until it is
     * closed: compactions can move its batches, and memory pressure makes it
     * drop its oldest ones. Either may be null: its batches then never move,
     * or leave only by its own bound and limits.
     *
     * @throws IllegalArgumentException when {@code maxBytes} is not positive, or the relocator or the shrinker
     *                                  is of another category
     */
    public LogCache(SequentialByteBufAllocator allocator, long maxBytes, CacheRelocator relocator,
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
     * Appends a copy of {@code batch}'s readable bytes at {@code offset},
     * evicting the oldest batches until it fits; {@code batch} itself is not
     * changed. Offsets must increase. At the pool's ceiling or the category's
     * quota it evicts more and tries again, never waiting, whatever the
     * category's policy.
     *
     * @return false when the batch is empty or alone larger than the cache, or memory was refused with
     *         nothing left to evict (it is not cached)
     * @throws IllegalArgumentException when {@code offset} is not after the newest cached offset
     * @throws IllegalStateException    when the cache is closed
     */
    public boolean append(long offset, ByteBuf batch) {
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("the log cache is closed");
            }
            int size = batch.readableBytes();
            if (size > maxBytes || size == 0) {
                return false;
            }
            if (!entries.isEmpty() && offset <= entries.peekLast().offset) {
                throw new IllegalArgumentException("offset " + offset + " is not after " + entries.peekLast().offset);
            }
            while (bytes + size > maxBytes) {
                evictOldest();
            }
            // never waits at a limit, whatever the category's policy: the memory to wait for is this cache's own,
            // which only eviction (under this lock) gives back; refused, it makes room and tries again
            ByteBuf copy = allocator.tryAllocate(size);
            while (copy == null && !entries.isEmpty()) {
                evictOldest();
                copy = allocator.tryAllocate(size);
            }
            if (copy == null) {
                return false;
            }
            try {
                copy.writeBytes(batch, batch.readerIndex(), size);
            } catch (RuntimeException | Error e) { // a batch released by its owner, say: nothing is cached
                copy.release();
                throw e;
            }
            Entry entry = new Entry(offset, copy);
            entries.addLast(entry);
            byOffset.put(offset, entry);
            account(size);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The batch at {@code offset} as a retained duplicate the caller must
     * release, or null when it is not cached (counted as a miss).
     */
    public ByteBuf read(long offset) {
        lock.lock();
        try {
            Entry entry = byOffset.get(offset);
            if (entry == null) {
                misses++;
                return null;
            }
            hits++;
            return entry.buffer.retainedDuplicate();
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: evicts the oldest batch and returns its bytes. */
    private long evictOldest() {
        Entry oldest = entries.pollFirst();
        byOffset.remove(oldest.offset);
        int size = oldest.buffer.readableBytes();
        account(-size);
        evictions++;
        oldest.buffer.release();
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
     * Moves the batches {@code evacuation} contains, oldest first, while its
     * budget lasts; returns at once when the lock is held.
     */
    private void relocate(BufferEvacuation evacuation) {
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            relocationsSkipped.incrementAndGet();
            evacuation.refused(); // tells the pool its entries may still move later
            return;
        }
        try {
            for (Entry entry : entries) { // none once closed
                if (!evacuation.budgetLeft()) {
                    return;
                }
                if (!evacuation.contains(entry.buffer)) {
                    continue;
                }
                ByteBuf moved = evacuation.move(entry.buffer);
                if (moved != null) { // else the budget is spent or a limit refused: it stays, counted by the pool
                    ByteBuf old = entry.buffer;
                    entry.buffer = moved; // the deque and the offset map share the entry
                    old.release();
                    relocations++;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Bytes of batches cached. */
    public long bytes() {
        return underLock(() -> bytes);
    }

    /** The bound on {@link #bytes()}. */
    public long maxBytes() {
        return maxBytes;
    }

    /** Batches cached. */
    public int size() {
        return (int) underLock(() -> entries.size());
    }

    /** Reads that found their batch. */
    public long hits() {
        return underLock(() -> hits);
    }

    /** Reads that did not. */
    public long misses() {
        return underLock(() -> misses);
    }

    /** Batches evicted so far (by appends, by shrinking and by {@link #close()}). */
    public long evictions() {
        return underLock(() -> evictions);
    }

    /** Of the {@linkplain #evictions() evictions}, the batches dropped because the pool asked the shrinker. */
    public long shrinkEvictions() {
        return underLock(() -> shrinkEvictions);
    }

    /** Batches moved to new memory by compactions so far. */
    public long relocations() {
        return underLock(() -> relocations);
    }

    /** Compactions that found the cache's lock held and left its batches where they were. */
    public long relocationsSkipped() {
        return relocationsSkipped.get();
    }

    /** The oldest cached offset, or -1 when empty. */
    public long oldestOffset() {
        return underLock(() -> entries.isEmpty() ? -1 : entries.peekFirst().offset);
    }

    /** The newest cached offset, or -1 when empty. */
    public long newestOffset() {
        return underLock(() -> entries.isEmpty() ? -1 : entries.peekLast().offset);
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
     * Releases every cached batch and leaves the relocator and the shrinker;
     * later appends fail, reads miss. Closing twice does nothing.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            while (!entries.isEmpty()) {
                evictOldest();
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
