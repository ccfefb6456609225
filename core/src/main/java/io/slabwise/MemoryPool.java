package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The memory engine's public front: a pool of native memory carved from
 * fixed-size chunks into runs and subpages, with per-thread caches and exact
 * accounting. It has no Netty dependency; {@code io.slabwise.netty} builds
 * Netty buffers on top of it.
 *
 * <pre>
 *  allocate(n) ─▶ n &gt; chunk size? ─yes─▶ huge region straight from the chunk source
 *                      │no
 *                      ▼
 *               thread cache hit? ─yes─▶ done, no lock
 *                      │no
 *                      ▼
 *               arena (lock): subpage for small classes, run for the others
 *                      │no room
 *                      ▼
 *               new chunk from the chunk source
 * </pre>
 *
 * <p>Every thread that allocates or frees is bound to one arena (the one with
 * the fewest threads) and gets a thread cache in front of it. Caches of threads
 * that have died are flushed back to their arenas when the pool next grows, on
 * {@link #trim()}, and when statistics are taken.
 *
 * <p>Accounting is exact: {@link #requestedBytes()} and {@link #reservedBytes()}
 * sum what live allocations asked for and what the pool set aside for them, and
 * {@link #committedBytes()} is the native memory taken from the chunk source.
 *
 * <p>Thread safety: all methods may be called from any thread.
 */
public final class MemoryPool {

    private final PoolConfig config;
    private final SizeClasses sizes;
    private final Arena[] arenas;
    private final ChunkSource chunkSource;
    private final ThreadLocal<ThreadCache> caches = new ThreadLocal<>();
    /** Every live thread cache; guarded by itself. */
    private final List<ThreadCache> registry = new ArrayList<>();
    /** Counts folded in from caches of dead threads: requested, reserved, allocations, releases. */
    private final long[] retiredCounts = new long[4];
    private final AtomicLong committed = new AtomicLong();
    private final AtomicLong hugeCommitted = new AtomicLong();
    private final AtomicLong hugeCount = new AtomicLong();

    /** Builds a pool from a configuration; see {@link PoolConfig#builder()}. */
    public MemoryPool(PoolConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.chunkSource = config.chunkSource();
        this.sizes = new SizeClasses(config.pageSize(), config.chunkSize());
        this.arenas = new Arena[config.arenas()];
        for (int i = 0; i < arenas.length; i++) {
            arenas[i] = new Arena(this, i, sizes, config.maxIdleChunksPerArena(), config.remoteFreeQueueCapacity());
        }
    }

    /** The configuration this pool was built with. */
    public PoolConfig config() {
        return config;
    }

    /** The size of one chunk in bytes. */
    public int chunkSize() {
        return sizes.chunkSize();
    }

    /** The size one request of {@code requested} bytes reserves. */
    public int reservedSizeFor(int requested) {
        checkRequest(requested);
        return requested > sizes.chunkSize() ? roundToPage(requested) : sizes.size(SizeClasses.indexOf(Math.max(1, requested)));
    }

    /**
     * Allocates {@code requested} bytes into {@code out}, which must not be live.
     *
     * @param requested bytes asked for, 0 to {@link Integer#MAX_VALUE} rounded down to a page
     * @throws IllegalArgumentException for a negative or oversized request
     * @throws IllegalStateException    when {@code out} already holds live memory
     */
    public void allocate(int requested, Allocation out) {
        checkRequest(requested);
        if (out.isLive()) {
            throw new IllegalStateException("the allocation holder is still live: " + out);
        }
        ThreadCache cache = threadCache();
        if (requested > sizes.chunkSize()) {
            allocateHuge(cache, requested, out);
        } else {
            cache.allocate(requested, out);
        }
    }

    /**
     * Gives memory back. {@code allocation} is cleared and may be reused.
     *
     * @throws IllegalStateException when it holds no live memory (a double free)
     */
    public void free(Allocation allocation) {
        Chunk chunk = allocation.chunk;
        if (chunk == null) {
            throw new IllegalStateException("double free: the allocation holds no live memory");
        }
        long handle = allocation.handle;
        int sizeIndex = allocation.sizeIndex;
        ThreadCache cache = threadCache();
        cache.countRelease(allocation.requested, allocation.reserved);
        allocation.clear();
        if (chunk.huge) {
            freeHuge(chunk);
        } else {
            cache.free(chunk, handle, sizeIndex);
        }
    }

    /**
     * Records that a live allocation now stands for {@code newRequested} bytes
     * without moving; allowed only while the new size maps to the same size class.
     *
     * @return true when the allocation was resized in place, false when it must move
     */
    public boolean resizeInPlace(Allocation allocation, int newRequested) {
        if (!allocation.isLive()) {
            throw new IllegalStateException("the allocation holds no live memory");
        }
        if (newRequested < 0 || newRequested > allocation.reserved) {
            return false;
        }
        boolean sameClass = allocation.chunk.huge
                ? roundToPage(Math.max(newRequested, sizes.chunkSize() + 1)) == allocation.reserved
                : SizeClasses.indexOf(Math.max(1, newRequested)) == allocation.sizeIndex;
        if (!sameClass) {
            return false;
        }
        threadCache().countResize((long) newRequested - allocation.requested);
        allocation.requested = newRequested;
        return true;
    }

    private void allocateHuge(ThreadCache cache, int requested, Allocation out) {
        int size = roundToPage(requested);
        Chunk chunk = new Chunk(cache.arena, commit(size));
        hugeCommitted.addAndGet(size);
        hugeCount.incrementAndGet();
        cache.arena.countHuge(1);
        out.chunk = chunk;
        out.handle = 0;
        out.sizeIndex = -1;
        out.offset = 0;
        out.address = chunk.region.address();
        out.requested = requested;
        out.reserved = size;
        cache.countAllocation(requested, size);
    }

    private void freeHuge(Chunk chunk) {
        hugeCommitted.addAndGet(-chunk.chunkSize());
        hugeCount.decrementAndGet();
        chunk.arena.countHuge(-1);
        decommit(chunk.region);
    }

    private int roundToPage(int size) {
        long rounded = ((long) size + config.pageSize() - 1) & -config.pageSize();
        return (int) Math.min(rounded, Integer.MAX_VALUE & -config.pageSize());
    }

    private void checkRequest(int requested) {
        if (requested < 0) {
            throw new IllegalArgumentException("requested size must not be negative: " + requested);
        }
        if (requested > maxRequest()) {
            throw new IllegalArgumentException("requested size " + requested + " exceeds the largest allocation, " + maxRequest());
        }
    }

    /** The largest request the pool serves. */
    public int maxRequest() {
        return Integer.MAX_VALUE & -config.pageSize();
    }

    NativeRegion commit(int size) {
        NativeRegion region = chunkSource.allocate(size);
        if (region.size() != size) {
            chunkSource.release(region);
            throw new IllegalStateException("chunk source returned " + region.size() + " bytes for " + size);
        }
        committed.addAndGet(size);
        return region;
    }

    void decommit(NativeRegion region) {
        committed.addAndGet(-region.size());
        chunkSource.release(region);
    }

    private ThreadCache threadCache() {
        ThreadCache cache = caches.get();
        return cache != null ? cache : newThreadCache();
    }

    private ThreadCache newThreadCache() {
        Arena arena = arenas[0];
        for (Arena candidate : arenas) {
            if (candidate.boundThreads.get() < arena.boundThreads.get()) {
                arena = candidate;
            }
        }
        arena.boundThreads.incrementAndGet();
        ThreadCache cache = new ThreadCache(this, arena, Thread.currentThread(), config.maxCachedSize(),
                config.maxCachedBytesPerClass(), config.maxCachedEntriesPerClass());
        caches.set(cache);
        synchronized (registry) {
            registry.add(cache);
        }
        return cache;
    }

    /**
     * Flushes the caches of threads that have died back into their arenas and
     * folds their accounting into the pool's. Returns how many were reclaimed.
     */
    int reclaimDeadThreadCaches() {
        List<ThreadCache> dead = new ArrayList<>();
        synchronized (registry) {
            for (int i = registry.size() - 1; i >= 0; i--) {
                ThreadCache cache = registry.get(i);
                if (cache.isOwnerDead()) {
                    registry.remove(i);
                    cache.addCountsTo(retiredCounts);
                    dead.add(cache);
                }
            }
        }
        for (ThreadCache cache : dead) {
            cache.flush();
            cache.arena.boundThreads.decrementAndGet();
        }
        return dead.size();
    }

    /**
     * Gives back what is idle now: caches of dead threads are flushed, live
     * threads are asked to flush their caches at their next operation, this
     * thread's cache is flushed at once, and every idle chunk goes back to the
     * chunk source.
     *
     * @return the number of chunks given back
     */
    public int trim() {
        reclaimDeadThreadCaches();
        synchronized (registry) {
            for (ThreadCache cache : registry) {
                cache.requestFlush();
            }
        }
        ThreadCache own = caches.get();
        if (own != null) {
            own.flush();
        }
        int released = 0;
        for (Arena arena : arenas) {
            released += arena.trim(0);
        }
        return released;
    }

    /** Bytes live allocations asked for. */
    public long requestedBytes() {
        return counts()[0];
    }

    /** Bytes set aside for live allocations (their size classes). */
    public long reservedBytes() {
        return counts()[1];
    }

    /** Native memory currently taken from the chunk source. */
    public long committedBytes() {
        return committed.get();
    }

    private long[] counts() {
        long[] totals = new long[4];
        synchronized (registry) {
            for (int i = 0; i < totals.length; i++) {
                totals[i] = retiredCounts[i];
            }
            for (ThreadCache cache : registry) {
                cache.addCountsTo(totals);
            }
        }
        return totals;
    }

    /** A snapshot of the pool's accounting and its chunks. */
    public PoolStats stats() {
        reclaimDeadThreadCaches();
        ArenaSnapshot[] arenaSnapshots = new ArenaSnapshot[arenas.length];
        for (int i = 0; i < arenas.length; i++) {
            arenaSnapshots[i] = arenas[i].snapshot();
        }
        long[] totals = counts();
        return new PoolStats(totals[0], totals[1], committed.get(), hugeCommitted.get(), hugeCount.get(),
                totals[2], totals[3], sizes.chunkSize(), arenaSnapshots);
    }

    @Override
    public String toString() {
        return stats().summary();
    }
}
