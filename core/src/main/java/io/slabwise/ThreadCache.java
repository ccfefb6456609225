package io.slabwise;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;

/**
 * The per-thread front of an arena: recently freed memory of each cached size
 * class, kept in a small stack so that the common allocate/release path takes
 * no lock, plus this thread's share of the pool's accounting.
 *
 * <h2>Ownership</h2>
 * Only the owning thread touches the stacks, except that once the owner has
 * died (observed through {@link Thread#isAlive()}, which orders everything the
 * owner did before it), {@link MemoryPool} may flush them from another thread.
 * Any other thread asks for a flush through {@link #requestFlush()}; the owner
 * honours it at its next allocation or release.
 *
 * <h2>Which memory is cached</h2>
 * Only memory of this cache's own arena: memory of another arena goes back to
 * that arena through its remote-free queue, so no thread's cache fills up with
 * memory its own allocations can never reach.
 *
 * <h2>Trimming</h2>
 * Every {@link #SWEEP_INTERVAL} operations the cache frees, per size class, as
 * many entries as were never used since the previous sweep (the low-water mark
 * of the stack), oldest first.
 *
 * <h2>Accounting</h2>
 * Live requested and reserved bytes of allocations made or released by this
 * thread are single-writer fields. The owner brackets each update with a
 * version counter (odd while updating), so a reader on another thread retries
 * until it reads a pair that belongs together.
 */
final class ThreadCache {

    /** Operations between two sweeps of unused entries. */
    static final int SWEEP_INTERVAL = 8192;

    private static final VarHandle VERSION;
    private static final VarHandle REQUESTED;
    private static final VarHandle RESERVED;
    private static final VarHandle ALLOCATIONS;
    private static final VarHandle RELEASES;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            VERSION = lookup.findVarHandle(ThreadCache.class, "version", long.class);
            REQUESTED = lookup.findVarHandle(ThreadCache.class, "requested", long.class);
            RESERVED = lookup.findVarHandle(ThreadCache.class, "reserved", long.class);
            ALLOCATIONS = lookup.findVarHandle(ThreadCache.class, "allocations", long.class);
            RELEASES = lookup.findVarHandle(ThreadCache.class, "releases", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final MemoryPool pool;
    final Arena arena;
    final WeakReference<Thread> owner;
    private final SizeClasses sizes;
    private final int cachedClasses;
    private final Chunk[][] chunks;
    private final long[][] handles;
    private final int[] counts;
    private final int[] lowWater;
    private int operationsSinceSweep;
    private volatile boolean flushRequested;

    private long version;
    private long requested;
    private long reserved;
    private long allocations;
    private long releases;

    ThreadCache(MemoryPool pool, Arena arena, Thread owner, int maxCachedSize, int maxCachedBytesPerClass, int maxEntriesPerClass) {
        this.pool = pool;
        this.arena = arena;
        this.owner = new WeakReference<>(owner);
        this.sizes = arena.sizes;
        this.cachedClasses = maxCachedSize <= 0 ? 0 : Math.min(sizes.count(), SizeClasses.indexOf(Math.min(maxCachedSize, sizes.chunkSize())) + 1);
        chunks = new Chunk[cachedClasses][];
        handles = new long[cachedClasses][];
        counts = new int[cachedClasses];
        lowWater = new int[cachedClasses];
        for (int i = 0; i < cachedClasses; i++) {
            int capacity = Math.max(1, Math.min(maxEntriesPerClass, maxCachedBytesPerClass / sizes.size(i)));
            chunks[i] = new Chunk[capacity];
            handles[i] = new long[capacity];
        }
    }

    /** Allocates {@code requested} bytes (at most a chunk) into {@code out}. */
    void allocate(int requested, Allocation out) {
        if (flushRequested) {
            flush();
        }
        int sizeIndex = SizeClasses.indexOf(Math.max(1, requested));
        int n = sizeIndex < cachedClasses ? counts[sizeIndex] : 0;
        if (n > 0) {
            n--;
            counts[sizeIndex] = n;
            if (n < lowWater[sizeIndex]) {
                lowWater[sizeIndex] = n;
            }
            Chunk[] stack = chunks[sizeIndex];
            out.chunk = stack[n];
            stack[n] = null;
            out.handle = handles[sizeIndex][n];
        } else {
            arena.allocate(sizeIndex, out);
            if (arena.grew) {
                arena.grew = false;
                pool.reclaimDeadThreadCaches();
            }
        }
        Chunk chunk = out.chunk;
        int offset = (int) chunk.offset(out.handle);
        out.sizeIndex = sizeIndex;
        out.offset = offset;
        out.address = chunk.region.address() + offset;
        out.requested = requested;
        out.reserved = sizes.size(sizeIndex);
        countAllocation(requested, out.reserved);
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
    }

    /** Releases a pooled (non-huge) allocation made by any thread. */
    void free(Chunk chunk, long handle, int sizeIndex) {
        if (flushRequested) {
            flush();
        }
        if (chunk.arena != arena) {
            chunk.arena.freeFromOtherArena(chunk, handle);
        } else if (sizeIndex < cachedClasses && counts[sizeIndex] < handles[sizeIndex].length) {
            int n = counts[sizeIndex];
            chunks[sizeIndex][n] = chunk;
            handles[sizeIndex][n] = handle;
            counts[sizeIndex] = n + 1;
        } else {
            arena.free(chunk, handle);
        }
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
    }

    void countAllocation(long requestedBytes, long reservedBytes) {
        VERSION.setRelease(this, version + 1);
        RESERVED.setRelease(this, reserved + reservedBytes);
        REQUESTED.setRelease(this, requested + requestedBytes);
        ALLOCATIONS.setRelease(this, allocations + 1);
        VERSION.setRelease(this, version + 1);
    }

    void countRelease(long requestedBytes, long reservedBytes) {
        VERSION.setRelease(this, version + 1);
        REQUESTED.setRelease(this, requested - requestedBytes);
        RESERVED.setRelease(this, reserved - reservedBytes);
        RELEASES.setRelease(this, releases + 1);
        VERSION.setRelease(this, version + 1);
    }

    /** Changes the requested size of a live allocation that keeps its size class. */
    void countResize(long requestedDelta) {
        VERSION.setRelease(this, version + 1);
        REQUESTED.setRelease(this, requested + requestedDelta);
        VERSION.setRelease(this, version + 1);
    }

    /**
     * Adds this cache's accounting to {@code into}: {requested, reserved,
     * allocations, releases}. Any thread; retries while the owner is mid-update.
     */
    void addCountsTo(long[] into) {
        while (true) {
            long before = (long) VERSION.getAcquire(this);
            long req = (long) REQUESTED.getAcquire(this);
            long res = (long) RESERVED.getAcquire(this);
            long allocs = (long) ALLOCATIONS.getAcquire(this);
            long rels = (long) RELEASES.getAcquire(this);
            VarHandle.loadLoadFence();
            if ((before & 1) == 0 && (long) VERSION.getAcquire(this) == before) {
                into[0] += req;
                into[1] += res;
                into[2] += allocs;
                into[3] += rels;
                return;
            }
            Thread.onSpinWait();
        }
    }

    /** Asks the owner to give back everything cached, at its next operation. Any thread. */
    void requestFlush() {
        flushRequested = true;
    }

    /** Bytes held in the stacks; exact only from the owner or after the owner died. */
    long cachedBytes() {
        long bytes = 0;
        for (int i = 0; i < cachedClasses; i++) {
            bytes += (long) counts[i] * sizes.size(i);
        }
        return bytes;
    }

    /** Gives every cached entry back to the arena. Owner thread, or any thread once the owner is dead. */
    void flush() {
        flushRequested = false;
        for (int i = 0; i < cachedClasses; i++) {
            int n = counts[i];
            if (n > 0) {
                arena.freeBatch(chunks[i], handles[i], 0, n);
                counts[i] = 0;
                lowWater[i] = 0;
            }
        }
    }

    private void sweep() {
        operationsSinceSweep = 0;
        for (int i = 0; i < cachedClasses; i++) {
            int unused = lowWater[i];
            int n = counts[i];
            if (unused > 0) {
                arena.freeBatch(chunks[i], handles[i], 0, unused);
                System.arraycopy(chunks[i], unused, chunks[i], 0, n - unused);
                System.arraycopy(handles[i], unused, handles[i], 0, n - unused);
                java.util.Arrays.fill(chunks[i], n - unused, n, null);
                n -= unused;
                counts[i] = n;
            }
            lowWater[i] = n;
        }
    }

    boolean isOwnerDead() {
        Thread thread = owner.get();
        return thread == null || !thread.isAlive();
    }
}
