package io.slabwise;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.Arrays;

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
 * <h2>The large slot</h2>
 * Above the cached sizes, one released run of up to {@link #LARGE_SLOT_LIMIT}
 * (1 MiB) is kept in a single slot for the next request of the same class, so
 * a thread that allocates and releases a large buffer over and over takes no
 * lock. It goes back at a sweep that finds it unused, and at every flush: a
 * thread holds at most 1 MiB there.
 *
 * <h2>Refills</h2>
 * When the stack of a cached size class is empty, the cache takes up to
 * {@link #REFILL_BATCH} allocations from the arena under one lock: first
 * memory of that class that other threads released into the arena's
 * remote-free queue, then, for a small class, elements of subpages with room;
 * a page class takes one new run only when the queue gave none. While callers
 * wait at a limit, a refill takes a single allocation, so that released memory
 * is not parked in one thread's cache. A thread whose
 * buffers are released by other threads (a producer) then takes the arena
 * lock once per batch instead of once per buffer, and gets its own memory
 * back without the arena taking it apart and carving it again.
 *
 * <h2>Trimming</h2>
 * Every {@link #SWEEP_INTERVAL} operations the cache frees, per size class, as
 * many entries as were never used since the previous sweep (the low-water mark
 * of the stack), oldest first.
 *
 * <h2>What an idle cache costs</h2>
 * A cache is cheap until it caches: the stack of a size class is made at its
 * first use, the counters grow with the categories the thread allocates in,
 * and the counters other threads write are made at the first release from
 * another thread. A new cache is a few hundred bytes of heap; when its thread
 * dies its stacks are given back and dropped ({@link #retire()}).
 *
 * <h2>The shared cache</h2>
 * Virtual threads get no cache of their own: there may be millions of them,
 * each short-lived. They share one cache per arena made with
 * {@link #shared(MemoryPool, Arena)}, which keeps no stacks, takes every
 * allocation from its arena, gives every release back through the arena's
 * lock-free remote-free queue, and counts with atomic adds only.
 *
 * <h2>Accounting</h2>
 * A cache counts the allocations its thread makes, per category: requested
 * and reserved bytes, allocations and releases, and the reserved bytes of
 * those carved by specialised allocators from whole chunks. Changes the owner makes are
 * single-writer fields that it brackets with a version counter (odd while
 * updating); releases and resizes by other threads go to a separate array with
 * atomic adds. Readers see every allocation of a cache either live or
 * released (see {@link #addCountsTo}), so a snapshot never shows a release
 * without its allocation.
 */
final class ThreadCache {

    /** Operations between two sweeps of unused entries. */
    static final int SWEEP_INTERVAL = 8192;
    /** The largest run the single large slot keeps: a thread holds at most this much there. */
    static final int LARGE_SLOT_LIMIT = 1 << 20;
    /** Allocations of a cached size class taken from the arena at once when the stack is empty. */
    static final int REFILL_BATCH = 16;

    private static final VarHandle VERSION;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);

    static {
        try {
            VERSION = MethodHandles.lookup().findVarHandle(ThreadCache.class, "version", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Counters per category, at {@code category.id * FIELDS + field}. */
    static final int FIELDS = 5;
    static final int REQUESTED = 0;
    static final int RESERVED = 1;
    static final int ALLOCATIONS = 2;
    static final int RELEASES = 3;
    /** The part of {@link #RESERVED} carved from whole chunks by sequential allocators and block pools. */
    static final int CARVED = 4;
    static final int COUNTERS = Category.MAX_CATEGORIES * FIELDS;

    private static final VarHandle COUNTERS_ARRAY;
    private static final VarHandle REMOTE_ARRAY;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            COUNTERS_ARRAY = lookup.findVarHandle(ThreadCache.class, "counters", long[].class);
            REMOTE_ARRAY = lookup.findVarHandle(ThreadCache.class, "remote", long[].class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final MemoryPool pool;
    final Arena arena;
    /** The owning thread; null for a shared cache. */
    private final WeakReference<Thread> owner;
    /** A cache shared by virtual threads: no stacks, atomic counters only. */
    private final boolean shared;
    private final SizeClasses sizes;
    private final int cachedClasses;
    private final int maxCachedBytesPerClass;
    private final int maxEntriesPerClass;
    /** The stack of each cached size class, made at the class's first use; emptied of stacks by {@link #retire()}. */
    private final Stack[] stacks;
    private int operationsSinceSweep;
    /** Classes above the cached ones, up to this index, may take the single large slot. */
    private final int largestCachedLargeClass;
    /** One released run above the cached sizes (up to {@link #LARGE_SLOT_LIMIT}), kept for the next request of its class. */
    private Chunk largeChunk;
    private long largeHandle;
    private int largeSizeIndex = -1;
    private boolean largeUsed;
    private volatile boolean flushRequested;

    private long version;
    /**
     * Counters of allocations made by this thread, as changed by this thread;
     * single writer. Long enough for the categories the thread has allocated
     * in; the owner replaces it with a longer copy inside the version bracket.
     */
    private long[] counters;
    /**
     * Changes other threads made to allocations of this thread (releases,
     * resizes), with atomic adds; null until the first such change. A shared
     * cache counts everything here.
     */
    private long[] remote;

    /**
     * Recently freed entries of one size class: the chunk of each by its id in
     * the arena (ints rather than references, so that pushing an entry is a
     * plain store, not a store of a reference into a long-lived array, which
     * costs a GC write barrier) and its handle.
     */
    private static final class Stack {
        final int[] chunkIds;
        final long[] handles;
        int count;
        /** The fewest entries the stack held since the last sweep: that many were not needed. */
        int lowWater;

        Stack(int capacity) {
            chunkIds = new int[capacity];
            handles = new long[capacity];
        }
    }

    ThreadCache(MemoryPool pool, Arena arena, Thread owner, int maxCachedSize, int maxCachedBytesPerClass, int maxEntriesPerClass) {
        this(pool, arena, owner, false, maxCachedSize, maxCachedBytesPerClass, maxEntriesPerClass);
    }

    private ThreadCache(MemoryPool pool, Arena arena, Thread owner, boolean shared, int maxCachedSize,
                        int maxCachedBytesPerClass, int maxEntriesPerClass) {
        this.pool = pool;
        this.arena = arena;
        this.owner = owner == null ? null : new WeakReference<>(owner);
        this.shared = shared;
        this.sizes = arena.sizes;
        this.cachedClasses = maxCachedSize <= 0 ? 0 : Math.min(sizes.count(), SizeClasses.indexOf(Math.min(maxCachedSize, sizes.chunkSize())) + 1);
        this.largestCachedLargeClass = cachedClasses == 0 ? -1
                : SizeClasses.indexOf(Math.min(LARGE_SLOT_LIMIT, sizes.chunkSize()));
        this.maxCachedBytesPerClass = maxCachedBytesPerClass;
        this.maxEntriesPerClass = maxEntriesPerClass;
        this.stacks = new Stack[cachedClasses];
        this.counters = shared ? new long[0] : new long[FIELDS];
        this.remote = shared ? new long[COUNTERS] : null;
    }

    /** The cache that virtual threads bound to {@code arena} share: no stacks, atomic counters. */
    static ThreadCache shared(MemoryPool pool, Arena arena) {
        return new ThreadCache(pool, arena, null, true, 0, 0, 0);
    }

    /** The stack of cached class {@code sizeIndex}, made on first use. Owner thread only. */
    private Stack stack(int sizeIndex) {
        Stack stack = stacks[sizeIndex];
        if (stack == null) {
            int capacity = Math.max(1, Math.min(maxEntriesPerClass, maxCachedBytesPerClass / sizes.size(sizeIndex)));
            stack = new Stack(capacity);
            stacks[sizeIndex] = stack;
        }
        return stack;
    }

    /** Allocates {@code requested} bytes (at most a chunk) of size class {@code sizeIndex} into {@code out}. */
    void allocate(Category category, int requested, int sizeIndex, Allocation out) {
        if (flushRequested) {
            flush();
        }
        Stack stack = sizeIndex < cachedClasses ? stack(sizeIndex) : null;
        int n = stack != null ? stack.count : 0;
        if (sizeIndex == largeSizeIndex) {
            out.chunk = largeChunk;
            out.handle = largeHandle;
            largeChunk = null;
            largeSizeIndex = -1;
            largeUsed = true;
        } else if (n > 0) {
            n--;
            stack.count = n;
            if (n < stack.lowWater) {
                stack.lowWater = n;
            }
            out.chunk = arena.chunk(stack.chunkIds[n]);
            out.handle = stack.handles[n];
        } else if (stack != null) {
            // refill the stack with a batch under one lock, then take from it
            int batch = pool.hasLimitWaiters() ? 1 : Math.min(REFILL_BATCH, stack.chunkIds.length);
            n = arena.allocateBatch(sizeIndex, stack.chunkIds, stack.handles, batch) - 1;
            stack.count = n;
            out.chunk = arena.chunk(stack.chunkIds[n]);
            out.handle = stack.handles[n];
            afterArenaAllocation();
        } else {
            arena.allocate(sizeIndex, out);
            afterArenaAllocation();
        }
        Chunk chunk = out.chunk;
        int offset = (int) chunk.offset(out.handle);
        out.sizeIndex = sizeIndex;
        out.offset = offset;
        out.address = chunk.region.address() + offset;
        out.category = category;
        out.requested = requested;
        out.reserved = sizes.size(sizeIndex);
        countAllocation(category, requested, out.reserved, false, out);
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
    }

    private void afterArenaAllocation() {
        if (arena.grew) {
            arena.grew = false;
            pool.reclaimDeadThreadCaches();
        }
    }

    /** Releases a pooled (non-huge) allocation made by any thread. */
    void free(Chunk chunk, long handle, int sizeIndex) {
        if (flushRequested) {
            flush();
        }
        Stack stack;
        if (chunk.arena != arena || shared) {
            chunk.arena.freeFromOtherArena(chunk, handle); // lock-free, unless the queue is full
        } else if (sizeIndex >= 0 && sizeIndex < cachedClasses
                && (stack = stack(sizeIndex)).count < stack.handles.length) {
            int n = stack.count;
            stack.chunkIds[n] = chunk.id;
            stack.handles[n] = handle;
            stack.count = n + 1;
        } else if (largeChunk == null && sizeIndex >= cachedClasses && sizeIndex <= largestCachedLargeClass) {
            largeChunk = chunk;
            largeHandle = handle;
            largeSizeIndex = sizeIndex;
        } else {
            arena.free(chunk, handle);
        }
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
    }

    /**
     * Counts a new allocation of this thread and makes this cache its owner;
     * {@code carved} when a specialised allocator carved it from a whole chunk.
     * Owner thread only.
     */
    void countAllocation(Category category, long requestedBytes, long reservedBytes, boolean carved, Allocation out) {
        int base = category.id * FIELDS;
        out.owner = this;
        if (shared) {
            long[] r = remote;
            SLOT.getAndAdd(r, base + RESERVED, reservedBytes);
            if (carved) {
                SLOT.getAndAdd(r, base + CARVED, reservedBytes);
            }
            SLOT.getAndAdd(r, base + REQUESTED, requestedBytes);
            SLOT.getAndAdd(r, base + ALLOCATIONS, 1L);
            return;
        }
        VERSION.setRelease(this, version + 1);
        long[] c = counters;
        if (base + FIELDS > c.length) {
            c = Arrays.copyOf(c, Math.min(COUNTERS, Math.max(base + FIELDS, 2 * c.length)));
            COUNTERS_ARRAY.setRelease(this, c);
        }
        SLOT.setRelease(c, base + RESERVED, c[base + RESERVED] + reservedBytes);
        if (carved) {
            SLOT.setRelease(c, base + CARVED, c[base + CARVED] + reservedBytes);
        }
        SLOT.setRelease(c, base + REQUESTED, c[base + REQUESTED] + requestedBytes);
        SLOT.setRelease(c, base + ALLOCATIONS, c[base + ALLOCATIONS] + 1);
        VERSION.setRelease(this, version + 1);
    }

    /**
     * Counts the release of an allocation this cache owns ({@code carved} as
     * when it was counted). On the owner thread
     * the single-writer counters change; on any other thread the remote ones,
     * with atomic adds, the release count last, so that an allocation never
     * looks released before its bytes are.
     */
    void countRelease(Category category, long requestedBytes, long reservedBytes, boolean carved, boolean onOwnerThread) {
        int base = category.id * FIELDS;
        if (onOwnerThread) {
            long[] c = counters;
            VERSION.setRelease(this, version + 1);
            SLOT.setRelease(c, base + REQUESTED, c[base + REQUESTED] - requestedBytes);
            SLOT.setRelease(c, base + RESERVED, c[base + RESERVED] - reservedBytes);
            if (carved) {
                SLOT.setRelease(c, base + CARVED, c[base + CARVED] - reservedBytes);
            }
            SLOT.setRelease(c, base + RELEASES, c[base + RELEASES] + 1);
            VERSION.setRelease(this, version + 1);
        } else {
            long[] r = remote();
            SLOT.getAndAdd(r, base + REQUESTED, -requestedBytes);
            SLOT.getAndAdd(r, base + RESERVED, -reservedBytes);
            if (carved) {
                SLOT.getAndAdd(r, base + CARVED, -reservedBytes);
            }
            SLOT.getAndAdd(r, base + RELEASES, 1L);
        }
    }

    /** Changes the requested size of a live allocation this cache owns, which keeps its size class. */
    void countResize(Category category, long requestedDelta, boolean onOwnerThread) {
        int base = category.id * FIELDS;
        if (onOwnerThread) {
            long[] c = counters;
            VERSION.setRelease(this, version + 1);
            SLOT.setRelease(c, base + REQUESTED, c[base + REQUESTED] + requestedDelta);
            VERSION.setRelease(this, version + 1);
        } else {
            SLOT.getAndAdd(remote(), base + REQUESTED, requestedDelta);
        }
    }

    /** The counters other threads write, made by the first of them. Any thread. */
    private long[] remote() {
        long[] r = (long[]) REMOTE_ARRAY.getAcquire(this);
        if (r == null) {
            long[] made = new long[COUNTERS];
            r = (long[]) REMOTE_ARRAY.compareAndExchangeRelease(this, null, made);
            if (r == null) {
                r = made;
            }
        }
        return r;
    }

    /**
     * Adds this cache's counters for the first {@code categories} categories to
     * {@code into} (laid out as the counters are), as they stood at one moment.
     * Any thread. It reads the remote changes, then the owner's counters inside
     * their version bracket, then the remote changes again, and retries until
     * neither moved in between: every allocation of this cache is then counted
     * either as live or as released, never half of each. After
     * {@code maxTries} attempts it settles for a last read in which the remote
     * changes are read first, so a release is never seen without its allocation.
     */
    void addCountsTo(long[] into, int categories) {
        int n = Math.min(COUNTERS, categories * FIELDS);
        long[] remoteBefore = new long[n];
        long[] own = new long[n];
        for (int attempt = 0; ; attempt++) {
            readRemote(remoteBefore, n);
            long before = (long) VERSION.getAcquire(this);
            if ((before & 1) != 0) {
                Thread.onSpinWait();
                continue;
            }
            long[] c = (long[]) COUNTERS_ARRAY.getAcquire(this);
            int owned = Math.min(n, c.length);
            for (int i = 0; i < owned; i++) {
                own[i] = (long) SLOT.getAcquire(c, i);
            }
            VarHandle.loadLoadFence();
            if ((long) VERSION.getAcquire(this) != before) {
                Thread.onSpinWait();
                continue;
            }
            if (attempt >= MAX_SNAPSHOT_TRIES || remoteUnchanged(remoteBefore, n)) {
                break;
            }
        }
        for (int i = 0; i < n; i++) {
            into[i] += remoteBefore[i] + own[i];
        }
    }

    /** How often {@link #addCountsTo} retries for a read in which nothing moved. */
    private static final int MAX_SNAPSHOT_TRIES = 64;

    private void readRemote(long[] into, int n) {
        long[] r = (long[]) REMOTE_ARRAY.getAcquire(this);
        for (int i = 0; i < n; i++) {
            into[i] = r == null ? 0 : (long) SLOT.getAcquire(r, i);
        }
    }

    private boolean remoteUnchanged(long[] seen, int n) {
        long[] r = (long[]) REMOTE_ARRAY.getAcquire(this);
        for (int i = 0; i < n; i++) {
            if ((r == null ? 0 : (long) SLOT.getAcquire(r, i)) != seen[i]) {
                return false;
            }
        }
        return true;
    }

    /** Allocations owned by this cache not yet released. Reliable once the owner is dead. */
    long liveAllocations() {
        long[] totals = new long[COUNTERS];
        addCountsTo(totals, Category.MAX_CATEGORIES);
        long live = 0;
        for (int i = 0; i < COUNTERS; i += FIELDS) {
            live += totals[i + ALLOCATIONS] - totals[i + RELEASES];
        }
        return live;
    }

    /** Asks the owner to give back everything cached, at its next operation. Any thread. */
    void requestFlush() {
        flushRequested = true;
    }

    /** Bytes held in the stacks; exact only from the owner or after the owner died. */
    long cachedBytes() {
        long bytes = largeChunk == null ? 0 : sizes.size(largeSizeIndex);
        for (int i = 0; i < cachedClasses; i++) {
            Stack stack = stacks[i];
            if (stack != null) {
                bytes += (long) stack.count * sizes.size(i);
            }
        }
        return bytes;
    }

    /** How many size classes have a stack now; stacks are made at a class's first use. */
    int stacksMade() {
        int made = 0;
        for (Stack stack : stacks) {
            if (stack != null) {
                made++;
            }
        }
        return made;
    }

    /** Gives every cached entry back to the arena. Owner thread, or any thread once the owner is dead. */
    void flush() {
        flushRequested = false;
        releaseLarge();
        for (int i = 0; i < cachedClasses; i++) {
            Stack stack = stacks[i];
            if (stack != null && stack.count > 0) {
                arena.freeBatch(stack.chunkIds, stack.handles, 0, stack.count);
                stack.count = 0;
                stack.lowWater = 0;
            }
        }
    }

    /**
     * Flushes the cache of a thread that has died and drops its stacks, so
     * that what stays reachable (from allocations it made that are still
     * live) is only its counters. Any thread, once the owner is dead.
     */
    void retire() {
        flush();
        Arrays.fill(stacks, null);
    }

    private void sweep() {
        operationsSinceSweep = 0;
        if (!largeUsed) {
            releaseLarge();
        }
        largeUsed = false;
        for (int i = 0; i < cachedClasses; i++) {
            Stack stack = stacks[i];
            if (stack == null) {
                continue;
            }
            int unused = stack.lowWater;
            int n = stack.count;
            if (unused > 0) {
                arena.freeBatch(stack.chunkIds, stack.handles, 0, unused);
                System.arraycopy(stack.chunkIds, unused, stack.chunkIds, 0, n - unused);
                System.arraycopy(stack.handles, unused, stack.handles, 0, n - unused);
                n -= unused;
                stack.count = n;
            }
            stack.lowWater = n;
        }
    }

    private void releaseLarge() {
        if (largeChunk != null) {
            Chunk chunk = largeChunk;
            largeChunk = null;
            largeSizeIndex = -1;
            arena.free(chunk, largeHandle);
        }
    }

    /** Whether the calling thread is this cache's owner; cheaper than looking up the caller's own cache. */
    boolean isOwnerThread() {
        return owner != null && owner.refersTo(Thread.currentThread());
    }

    /** Whether the owning thread has died; never true of a shared cache. */
    boolean isOwnerDead() {
        if (owner == null) {
            return false;
        }
        Thread thread = owner.get();
        return thread == null || !thread.isAlive();
    }
}
