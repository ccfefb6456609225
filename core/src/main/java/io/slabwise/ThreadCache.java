package io.slabwise;

import java.util.concurrent.atomic.AtomicReference;

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
 * <h2>Moving to another arena</h2>
 * While the pool is small, every thread shares the first arena; as it grows,
 * more arenas come into use and threads of a crowded arena move to them, one
 * at a time, at a new chunk or a sweep ({@link PoolConfig#arenaSpreadBytes()}).
 * A moving cache gives everything it holds back to its old arena first.
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
 * <h2>Holders kept filled</h2>
 * The Netty adapter's buffers take their {@link Allocation} holder from this
 * cache ({@link #takeHolder()}). When such a buffer is released on the thread
 * that allocated it, the holder is kept with its memory on top of the stack of
 * its class (up to {@link ClassStack#KEPT_LIMIT} per class), and that thread's
 * next allocation of the class takes it as it is: nothing about the memory is
 * looked up, computed or written again ({@link #keepFilled}, {@link #takeFilled}).
 * Kept holders count as cached memory, and a flush or a sweep turns them back
 * into plain entries. Above the cached sizes the large slot does the same for
 * one holder of a run fitted to whole pages ({@link #keepLarge}), which a
 * request of the same bytes takes as it is.
 *
 * <h2>Refills</h2>
 * When the stack of a cached size class is empty, the cache takes a batch of
 * allocations from the arena under one lock: {@link ClassStack#FIRST_REFILL_BATCH} at a
 * class's first refill, twice as many at each refill after, up to
 * {@link ClassStack#REFILL_BATCH}, and half as many again after a sweep finds entries of
 * the class unused (so a thread that touches many classes now and then holds
 * little, and one that keeps allocating a class takes it 16 at a time): first
 * memory of that class that other threads released into the arena's
 * remote-free queue, then, for a small class, elements of subpages with room;
 * a page class takes one new run only when the queue gave none. While callers
 * wait at a limit, a refill takes a single allocation, so that released memory
 * is not parked in one thread's cache. A thread whose
 * buffers are released by other threads (a producer) then takes the arena
 * lock once per batch instead of once per buffer, and gets its own memory
 * back without the arena taking it apart and carving it again. The other
 * side, a thread that releases more of a class than it allocates (a
 * consumer), fills its stack; a release into a full stack hands the older
 * half over to the arena's remote-free queue ({@link ClassStack#pushOrFlush}),
 * lock-free, for the producer's next refill.
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
 * {@link #shared(ThreadCaches, MemoryLimit, Arena, int, int, int)}, whose
 * stacks are guarded by a try-lock: a virtual thread that finds another one
 * using them does not wait, but allocates from the arena or releases through
 * its lock-free remote-free queue. What is counted while holding the lock
 * (an allocation through the stacks, a dedicated region or a carved slice
 * counted while the lock is free, a release of one of its allocations) is
 * counted with plain stores; the rest with atomic adds. A release is one
 * step under the lock ({@link #releaseShared}): counted, then its holder kept
 * filled, or its memory cached and its holder stashed. Its holders kept
 * filled and its holder stash work as a thread's own, under the same lock
 * ({@link #releaseShared}, {@link #takeFilled}, {@link #takeHolder()}), so a
 * virtual thread's buffer hands its holder, with its memory, to the next
 * virtual thread of the arena, and an allocate and release makes no holder
 * object there either. Any thread may flush it when no virtual thread holds
 * it ({@link #flushShared()}).
 *
 * <h2>Accounting</h2>
 * A cache carries its thread's {@link ThreadCounters}: what the thread's
 * allocations took and what their releases gave back, per category. The
 * owner counts with plain stores; other threads count releases of its
 * allocations with atomic adds. Readers never make either wait.
 */
final class ThreadCache {

    /** Operations between two sweeps of unused entries. */
    static final int SWEEP_INTERVAL = 8192;
    /** The largest run the single large slot keeps: a thread holds at most this much there. */
    static final int LARGE_SLOT_LIMIT = 1 << 20;
    /**
     * Tries of a shared cache's lock by a thread asking it to flush (see
     * {@link #flushShared}), spinning: enough to outlast a holder that is
     * letting go, a few microseconds.
     */
    private static final int FLUSH_LOCK_SPINS = 256;
    /**
     * How long the tries go on, those after {@link #FLUSH_LOCK_SPINS} each
     * after a {@link Thread#yield()}: longer than a descheduled thread waits
     * for its processor (a scheduler time slice or two), short for a trim or
     * a close.
     */
    private static final long FLUSH_LOCK_WAIT_NANOS = 20_000_000;
    /** The stacks of a dead thread's cache, which caches nothing more (see {@link #retire}). */
    private static final ClassStack[] NO_STACKS = new ClassStack[0];
    /** Dedicated regions a shared cache keeps filled beyond its slot's one (see {@link #extraRegions}). */
    static final int SHARED_EXTRA_REGIONS = 3;

    /** The pool's thread caches, for reclaiming dead threads' caches when the arena grows. */
    private final ThreadCaches caches;
    /** Whether callers wait for memory: refills then take a single allocation. */
    private final MemoryLimit limit;
    /**
     * The arena this cache allocates from and caches memory of. A thread's own
     * cache may move to another arena ({@link #moveIfCrowded()}); only its
     * owner writes it, and other threads read it only once the owner died.
     */
    Arena arena;
    /**
     * The owning thread, what {@link #isOwner} compares: one load, and no id
     * that a {@code Thread} subclass could override ({@code getId()} is not
     * final) so that two live threads look like one. Null for a shared cache,
     * and once {@link #retire()}d, so that a dead thread is kept reachable
     * only until its cache is reclaimed (a retired cache is in no registry,
     * so no one asks it {@link #isOwnerDead()} again).
     */
    private Thread ownerThread;
    /** A cache shared by virtual threads: its stacks, slots and stash only under {@link #lockShared()}. */
    private final boolean shared;
    private final SizeClasses sizes;
    /** The size classes up to the largest cached size: the ones above them may take the large slot. */
    private final int cachedClasses;
    /**
     * The cached classes that have a stack: those of which the per-class
     * limits allow at least one entry, the first ones (a larger class
     * allows fewer), none when a class may keep no entry at all. The
     * others go to the arena as if they were not cached.
     */
    private final int stackedClasses;
    private final int maxCachedBytesPerClass;
    private final int maxEntriesPerClass;
    /** The stack of each cached size class, made at the class's first use; none at all after {@link #retire()}. */
    private ClassStack[] stacks;
    private int operationsSinceSweep;
    /** The largest request a stack serves (the size of the largest stacked class); -1 with no stacked class. */
    private final int largestStackedRequest;
    /** Classes above the cached ones, up to this index, may take the single large slot. */
    private final int largestCachedLargeClass;
    /** One released run above the cached sizes (up to {@link #LARGE_SLOT_LIMIT}), kept for the next request of its class. */
    private Chunk largeChunk;
    private long largeHandle;
    private int largeSizeIndex = -1;
    private boolean largeUsed;
    /**
     * The large slot's other form: a holder released on this thread and kept
     * filled with its run, while {@link #largeKeptFilled} (then
     * {@link #largeChunk} is null). The field may still name the holder while
     * it is in use, so that keeping it again stores nothing.
     */
    private Allocation largeKept;
    private boolean largeKeptFilled;
    /**
     * Requests above {@code fittedAbove} bytes, up to {@code dedicatedAbove}, reserve a run of whole pages (see
     * {@link MemoryPool}); the large slot's kept holder serves those.
     */
    private final int fittedAbove;
    private final int dedicatedAbove;
    /**
     * One released dedicated region of up to {@link #LARGE_SLOT_LIMIT} (and
     * a chunk) this thread allocated, kept (with its chunk object) for this thread's next
     * request it fits; read by other threads only for statistics.
     */
    private Chunk dedicatedSlot;
    private boolean dedicatedUsed;
    /**
     * The dedicated slot's other form: a holder released on this thread and
     * kept filled with its region, while {@link #dedicatedKeptFilled} (then
     * {@link #dedicatedSlot} is null); like {@link #largeKept}, it may still
     * name the holder while it is in use.
     */
    private Allocation dedicatedKept;
    private boolean dedicatedKeptFilled;
    /**
     * A shared cache's kept holders of dedicated regions beyond the slot's
     * one, at most {@link #SHARED_EXTRA_REGIONS}: an arena's virtual threads
     * may hold several large buffers at once, and a region kept here is one
     * that the pool's idle regions need not take back and hand out again
     * (each a compare-and-set or a lock, and a count). Null in a thread's own
     * cache; under the shared cache's lock, read by others for statistics.
     */
    private final Allocation[] extraRegions;
    private int extraRegionCount;
    private volatile boolean flushRequested;

    /** This thread's share of the pool's accounting. */
    final ThreadCounters counters;

    ThreadCache(ThreadCaches caches, MemoryLimit limit, Arena arena, Thread owner, int maxCachedSize,
                int maxCachedBytesPerClass, int maxEntriesPerClass) {
        this(caches, limit, arena, owner, false, maxCachedSize, maxCachedBytesPerClass, maxEntriesPerClass);
    }

    private ThreadCache(ThreadCaches caches, MemoryLimit limit, Arena arena, Thread owner, boolean shared, int maxCachedSize,
                        int maxCachedBytesPerClass, int maxEntriesPerClass) {
        this.caches = caches;
        this.limit = limit;
        this.arena = arena;
        this.ownerThread = owner;
        this.shared = shared;
        this.sizes = arena.sizes;
        this.cachedClasses = maxCachedSize <= 0 ? 0 : Math.min(sizes.count(), SizeClasses.indexOf(Math.min(maxCachedSize, sizes.chunkSize())) + 1);
        int stacked = maxEntriesPerClass == 0 ? 0 : cachedClasses;
        while (stacked > 0 && sizes.size(stacked - 1) > maxCachedBytesPerClass) {
            stacked--;
        }
        this.stackedClasses = stacked;
        this.largestStackedRequest = stacked == 0 ? -1 : sizes.size(stacked - 1);
        this.largestCachedLargeClass = cachedClasses == 0 ? -1
                : SizeClasses.indexOf(Math.min(LARGE_SLOT_LIMIT, sizes.chunkSize()));
        this.fittedAbove = caches.fittedAbove();
        this.dedicatedAbove = caches.dedicatedAbove();
        this.maxCachedBytesPerClass = maxCachedBytesPerClass;
        this.maxEntriesPerClass = maxEntriesPerClass;
        this.stacks = new ClassStack[stackedClasses];
        this.counters = new ThreadCounters(shared);
        this.extraRegions = shared ? new Allocation[SHARED_EXTRA_REGIONS] : null;
    }

    /**
     * The cache that virtual threads bound to {@code arena} share: stacks,
     * slots and stash used only under its lock, counts plain under the lock
     * and atomic past it.
     */
    static ThreadCache shared(ThreadCaches caches, MemoryLimit limit, Arena arena, int maxCachedSize,
                              int maxCachedBytesPerClass, int maxEntriesPerClass) {
        return new ThreadCache(caches, limit, arena, null, true, maxCachedSize, maxCachedBytesPerClass, maxEntriesPerClass);
    }

    /**
     * Guards a shared cache's stacks: a virtual thread that finds it taken
     * does not wait but goes to the arena (allocation) or the remote-free
     * queue (release). Unused by a thread's own cache.
     */
    private final java.util.concurrent.atomic.AtomicBoolean sharedBusy = new java.util.concurrent.atomic.AtomicBoolean();

    /** Takes a shared cache's lock if it is free: never waits. */
    boolean lockShared() {
        return sharedBusy.compareAndSet(false, true);
    }

    /**
     * Gives back a shared cache's lock taken with {@link #lockShared()}; a
     * release store is all a lock's release needs. A flush asked for while
     * the lock was held (by a trim, a close or a waiter that found it taken)
     * is made first: not every operation answers one (an allocation of a
     * dedicated region, a holder taken from the stash, anything after
     * close()), so it could otherwise wait for good. In a closed pool the
     * arena's empty chunks then go back too, since the close's own trim may
     * have run before this flush.
     */
    void unlockShared() {
        if (flushRequested) {
            flush();
            if (caches.isClosed()) {
                arena.trim(0, 0);
            }
        }
        sharedBusy.setRelease(false);
    }

    /**
     * The stack of class {@code sizeIndex}, one of the {@link #stackedClasses},
     * made on first use; the owner thread, or the shared cache's lock held.
     */
    private ClassStack stack(int sizeIndex) {
        ClassStack stack = stacks[sizeIndex];
        if (stack == null) {
            int capacity = Math.min(maxEntriesPerClass, maxCachedBytesPerClass / sizes.size(sizeIndex)); // at least 1
            stack = new ClassStack(capacity);
            stacks[sizeIndex] = stack;
        }
        return stack;
    }

    /**
     * Allocates {@code requested} bytes (at most a chunk) of size class
     * {@code sizeIndex} into {@code out}, reserving {@code reserved} bytes: the
     * class's size, or the request rounded to whole pages when the pool fits it
     * (see {@link MemoryPool#reservedSizeFor}).
     */
    void allocate(Category category, int requested, int sizeIndex, int reserved, Allocation out) {
        if (shared) {
            if (lockShared()) {
                try {
                    allocateCached(category, requested, sizeIndex, reserved, out);
                } finally {
                    unlockShared();
                }
            } else {
                // another virtual thread has the stacks: never wait
                allocateFromArena(category, requested, sizeIndex, reserved, out);
            }
            return;
        }
        allocateCached(category, requested, sizeIndex, reserved, out);
    }

    /**
     * Allocates from the arena, past the stacks, counted on this cache like
     * any allocation: for a virtual thread that finds a shared cache busy.
     */
    void allocateFromArena(Category category, int requested, int sizeIndex, int reserved, Allocation out) {
        arena.allocate(sizeIndex, reserved, out);
        afterArenaAllocation();
        placeAndCount(category, requested, sizeIndex, reserved, out, !shared);
    }

    /**
     * Allocates a compaction's move from {@code target}, the arena of the
     * memory it leaves (the compaction counted room for it there, whatever
     * arena this thread uses), past the stacks, which must never hand out
     * memory cached in a chunk being evacuated; counted on this cache like
     * any allocation. A new chunk of another arena says nothing about how
     * crowded this cache's arena is, so only a move into its own may move
     * the cache; the other arena's threads see its growth.
     */
    void allocateForMove(Arena target, Category category, int requested, int sizeIndex, int reserved, Allocation out) {
        target.allocate(sizeIndex, reserved, out);
        if (target == arena) {
            afterArenaAllocation();
        }
        placeAndCount(category, requested, sizeIndex, reserved, out, !shared);
    }

    /** Allocates through the stacks; the owner thread, or a virtual thread holding a shared cache. */
    private void allocateCached(Category category, int requested, int sizeIndex, int reserved, Allocation out) {
        flushIfRequested();
        ClassStack stack = sizeIndex < stackedClasses ? stack(sizeIndex) : null;
        if (stack != null && stack.hasKept()) {
            stack.unkeep(this::stashHolder); // a caller with a holder of its own takes kept memory as plain entries
        }
        if (sizeIndex == largeSizeIndex && largeBytes() == reserved) {
            out.chunk = largeChunk;
            out.handle = largeHandle;
            largeChunk = null;
            largeSizeIndex = -1;
            largeUsed = true;
        } else if (stack == null) {
            arena.allocate(sizeIndex, reserved, out);
            afterArenaAllocation();
        } else if (!stack.pop(arena, out)) {
            stack.refill(arena, sizeIndex, limit.hasWaiters(), out); // a batch under one lock, one of it taken
            afterArenaAllocation();
        }
        placeAndCount(category, requested, sizeIndex, reserved, out, true);
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
    }

    /** Fills {@code out} and counts it, with plain writes when {@code exclusive} (the owner, or the shared cache's lock held). */
    private void placeAndCount(Category category, int requested, int sizeIndex, int reserved, Allocation out,
                               boolean exclusive) {
        // a subpage element's size is its class's size, the reserved size: no look-up of the subpage
        out.place(sizeIndex, (int) out.chunk.offset(out.handle, reserved), category, requested, reserved);
        out.owner = this;
        counters.countAllocation(category.id, requested, reserved, false, exclusive);
    }

    private void afterArenaAllocation() {
        if (arena.grew) {
            arena.grew = false;
            caches.reclaimDeadOnGrowth();
            if (shared) {
                caches.countArenasInUse(); // virtual threads choose among the arenas in use
            } else {
                moveIfCrowded();
            }
        }
    }

    /**
     * Moves this thread's cache to a less crowded arena when the pool grew
     * enough to take another arena into use (see
     * {@link PoolConfig#arenaSpreadBytes()}): everything cached goes back to
     * the old arena first, so the cache only ever holds memory of its arena.
     * Buffers already allocated stay where they are and go back to their own
     * arena when released. Owner thread only; never a shared cache.
     */
    private void moveIfCrowded() {
        if (shared) {
            return;
        }
        Arena target = caches.moveTarget(arena);
        if (target != null) {
            flush();
            arena = target;
        }
    }

    /** Releases a pooled (non-huge) allocation made by any thread. */
    void free(Chunk chunk, long handle, int sizeIndex) {
        if (shared) {
            if (chunk.arena == arena && lockShared()) {
                try {
                    freeCached(chunk, handle, sizeIndex);
                } finally {
                    unlockShared();
                }
            } else {
                chunk.arena.freeFromOtherArena(chunk, handle); // lock-free, unless the queue is full
            }
            return;
        }
        freeCached(chunk, handle, sizeIndex);
    }

    /** Releases into the stacks; the owner thread, or a virtual thread holding a shared cache. */
    private void freeCached(Chunk chunk, long handle, int sizeIndex) {
        flushIfRequested();
        if (chunk.arena != arena) {
            chunk.arena.freeFromOtherArena(chunk, handle); // lock-free, unless the queue is full
        } else if (sizeIndex < 0 || sizeIndex >= stackedClasses || !stack(sizeIndex).pushOrFlush(arena, chunk, handle)) {
            if (largeChunk == null && !largeKeptFilled && sizeIndex >= cachedClasses && sizeIndex <= largestCachedLargeClass) {
                largeChunk = chunk;
                largeHandle = handle;
                largeSizeIndex = sizeIndex;
            } else {
                arena.free(chunk, handle); // a stack filled by kept holders, a taken large slot (in either form), or a size neither keeps
            }
        }
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
    }

    /**
     * Counts a new allocation of this thread and makes this cache its owner;
     * {@code carved} when a specialised allocator carved it from a whole chunk.
     * Owner thread only (any thread for a shared cache, which counts with
     * plain writes under its lock when that is free, as its stacks do, and
     * with atomic adds past it).
     */
    void countAllocation(Category category, long requestedBytes, long reservedBytes, boolean carved, Allocation out) {
        out.owner = this;
        if (shared && lockShared()) {
            try {
                counters.countAllocation(category.id, requestedBytes, reservedBytes, carved, true);
            } finally {
                unlockShared();
            }
            return;
        }
        counters.countAllocation(category.id, requestedBytes, reservedBytes, carved, !shared);
    }

    /**
     * Counts the release of an allocation this cache owns ({@code carved} as
     * when it was counted); {@code onOwnerThread} when the caller is this
     * cache's owner, which counts with plain writes.
     */
    void countRelease(Category category, long requestedBytes, long reservedBytes, boolean carved, boolean onOwnerThread) {
        counters.countRelease(category.id, requestedBytes, reservedBytes, carved, onOwnerThread && !shared);
    }

    /** Whether virtual threads share this cache. */
    boolean isShared() {
        return shared;
    }

    /** {@link #releaseShared}: nothing done; the lock was taken, or the release must go past the cache. */
    static final int SHARED_PASSED = 0;
    /** {@link #releaseShared}: counted, and the holder kept filled; nothing is left to do. */
    static final int SHARED_KEPT = 1;
    /**
     * {@link #releaseShared}: counted, the holder cleared, the memory cached
     * (or sent to its arena; a dedicated region, to the pool's idle regions).
     */
    static final int SHARED_CACHED = 2;

    /**
     * Releases an allocation this shared cache owns in one step under its
     * lock, so that its counts are plain writes and its checks are ordered
     * against the flush a close, a waiter or a compaction asks of the cache.
     * The release is counted; then a stashed holder in a category without a
     * quota keeps its memory for the arena's next virtual thread, or else the
     * memory goes into the stacks (or its own arena; a dedicated region, once
     * the lock is given back, to the pool's idle regions) and a stashed
     * holder, cleared, into the stash. Any thread, for an allocation without
     * a releaser; once this returned anything but {@link #SHARED_PASSED}, the
     * caller must not touch {@code allocation} again, which another virtual
     * thread may be using.
     *
     * @return {@link #SHARED_PASSED} (another virtual thread holds the lock,
     *         the pool is closed, someone waits for memory, or the chunk is
     *         being evacuated), {@link #SHARED_KEPT} or {@link #SHARED_CACHED}
     */
    int releaseShared(Allocation allocation, Admission admission) {
        if (!lockShared()) {
            return SHARED_PASSED;
        }
        Chunk chunk = allocation.chunk;
        try {
            Category category = allocation.category;
            if (chunk.evacuating || admission.isClosed() || admission.hasWaiters()) {
                return SHARED_PASSED;
            }
            counters.countReleaseLocked(category.id, allocation.requested, allocation.reserved);
            boolean keeps = allocation.stashed && !category.tracked; // a tracked category's bytes must come back
            if (keeps && (chunk.huge ? keepDedicatedFilled(allocation) : keepFilled(allocation))) {
                return SHARED_KEPT;
            }
            long handle = allocation.handle;
            int sizeIndex = allocation.sizeIndex;
            allocation.clear();
            if (!chunk.huge) {
                freeCached(chunk, handle, sizeIndex);
            }
            if (allocation.stashed) {
                stashHolder(allocation);
            }
        } finally {
            unlockShared();
        }
        if (chunk.huge) {
            caches.dedicated.giveBack(chunk); // outside the lock: that may take the idle list's lock, or unmap the region
        }
        return SHARED_CACHED;
    }

    /** Changes the requested size of a live allocation this cache owns, which keeps its size class. */
    void countResize(Category category, long requestedDelta, boolean onOwnerThread) {
        counters.countResize(category.id, requestedDelta, onOwnerThread && !shared);
    }

    /** Asks the owner to give back everything cached, at its next operation. Any thread. */
    void requestFlush() {
        flushRequested = true;
    }

    /**
     * Answers a flush asked of this cache, if one was: on every path of the
     * owner's operations, including those that pass the stacks by (see
     * {@link MemoryPool}'s release). The owner thread, or a shared cache's lock held.
     */
    void flushIfRequested() {
        if (flushRequested) {
            flush();
        }
    }

    /** Bytes held in the stacks; exact only from the owner or after the owner died. */
    long cachedBytes() {
        long bytes = largeChunk == null ? 0 : largeBytes();
        if (largeKeptFilled) {
            bytes += largeKept.reserved;
        }
        for (int i = 0; i < stacks.length; i++) {
            ClassStack stack = stacks[i];
            if (stack != null) {
                bytes += (long) stack.size() * sizes.size(i);
            }
        }
        return bytes;
    }

    /** Entries of class {@code sizeIndex} cached now, kept holders included, and the most it may hold; for tests. */
    int[] stackFill(int sizeIndex) {
        ClassStack stack = stack(sizeIndex);
        return new int[] {stack.size(), stack.capacity};
    }

    /** How many size classes have a stack now; stacks are made at a class's first use. */
    int stacksMade() {
        int made = 0;
        for (ClassStack stack : stacks) {
            if (stack != null) {
                made++;
            }
        }
        return made;
    }

    /**
     * Gives a shared cache's entries back to the arena from any thread: at
     * once, by this thread or by the virtual thread holding the cache as it
     * lets go; after a long hold, at the holder's release of the lock.
     *
     * <p>The request is set first, then the lock tried until it is taken or
     * the request answered: a holder that read no request just before it was
     * set lets go of the lock a few instructions later, and with one try the
     * request would wait for the cache's next operation, which may never come
     * (a closed pool). The tries spin, then yield (the holder's thread may
     * have been descheduled as it let go), and stop after 20 ms: a holder
     * that is not yet letting go reads the request when it does, and the
     * callers (trims, closes, waiters at a limit, compactions) never hold a
     * shared cache's lock themselves.
     */
    void flushShared() {
        requestFlush();
        long deadline = System.nanoTime() + FLUSH_LOCK_WAIT_NANOS;
        for (int tries = 0; flushRequested; tries++) {
            if (lockShared()) {
                try {
                    flush();
                } finally {
                    unlockShared();
                }
                return;
            }
            if (tries < FLUSH_LOCK_SPINS) {
                Thread.onSpinWait();
            } else if (System.nanoTime() - deadline > 0) {
                return; // the holder answers the request when it lets go
            } else {
                Thread.yield(); // the holder's thread may have been descheduled as it was letting go
            }
        }
    }

    /**
     * Takes the dedicated region in this thread's slot if it fits a request
     * of {@code pages} bytes ({@link DedicatedRegions#fits}); null otherwise.
     * Answers a pending flush request first, since a dedicated region passes
     * the stacks by. Owner thread (a shared cache never has a region there,
     * see {@link #keepDedicated}).
     */
    Chunk takeDedicated(int pages) {
        if (flushRequested && !shared) {
            flush();
        }
        Chunk chunk = dedicatedSlot;
        if (chunk == null || !DedicatedRegions.fits(chunk.chunkSize(), pages)) {
            return null;
        }
        dedicatedSlot = null;
        dedicatedUsed = true;
        return chunk;
    }

    /**
     * Keeps a released dedicated region of up to {@link #LARGE_SLOT_LIMIT},
     * and no larger than a chunk, in this thread's slot if the slot is free.
     * Owner thread.
     */
    boolean keepDedicated(Chunk chunk) {
        // one region per slot, in either form: not beside a holder kept filled there
        if (shared || dedicatedSlot != null || dedicatedKeptFilled || flushRequested || !slotTakes(chunk)) {
            return false;
        }
        dedicatedSlot = chunk;
        return true;
    }

    /** Whether the dedicated slot may keep {@code region}: up to {@link #LARGE_SLOT_LIMIT} and a chunk. */
    private boolean slotTakes(Chunk region) {
        int size = region.chunkSize();
        return size <= LARGE_SLOT_LIMIT && size <= sizes.chunkSize();
    }

    /**
     * Keeps a released holder of a dedicated region this thread may keep (see
     * {@link #keepDedicated}) filled in the dedicated slot, if that is empty
     * (in a shared cache, else among its {@link #extraRegions} if there is
     * room); false otherwise. The region stays counted as in the slot. The
     * owner thread or the shared cache's lock holder, with no limit in the way
     * (see {@link Admission#admitsFreely}).
     */
    boolean keepDedicatedFilled(Allocation holder) {
        if (flushRequested || !slotTakes(holder.chunk)) {
            return false;
        }
        if (dedicatedSlot == null && !dedicatedKeptFilled) {
            if (dedicatedKept != holder) {
                dedicatedKept = holder; // (usually the same holder, back in its slot: no store, no write barrier)
            }
            dedicatedKeptFilled = true;
        } else if (extraRegions != null && extraRegionCount < extraRegions.length) {
            extraRegions[extraRegionCount++] = holder;
        } else {
            return false;
        }
        holder.kept = true;
        return true;
    }

    /**
     * One of a shared cache's {@link #extraRegions} for {@code requested}
     * bytes of {@code category}, counted, the newest whose region fits the
     * request's pages; null when none does. As {@link #takeDedicatedKept}.
     */
    private Allocation takeExtraRegion(Category category, int requested) {
        if (flushRequested) {
            return null; // the flush gives them back at this cache's next operation
        }
        int pages = sizes.pageRound(requested);
        for (int i = extraRegionCount - 1; i >= 0; i--) {
            Allocation holder = extraRegions[i];
            if (DedicatedRegions.fits(holder.reserved, pages)) {
                int last = --extraRegionCount;
                extraRegions[i] = extraRegions[last];
                extraRegions[last] = null;
                dedicatedUsed = true;
                return handOut(holder, category, requested);
            }
        }
        return null;
    }

    /**
     * The dedicated slot's kept holder for {@code requested} bytes of
     * {@code category}, counted, if its region fits the request's pages (see
     * {@link DedicatedRegions#fits}); null otherwise. The caller has
     * established that no limit applies and that the request gets a region.
     */
    private Allocation takeDedicatedKept(Category category, int requested) {
        Allocation holder = dedicatedKept;
        if (flushRequested || !DedicatedRegions.fits(holder.reserved, sizes.pageRound(requested))) {
            return null;
        }
        dedicatedKeptFilled = false;
        dedicatedUsed = true;
        return handOut(holder, category, requested);
    }

    /**
     * The dedicated regions parked in this cache, as {@code {count, bytes}}:
     * the slot's, in either form, and a shared cache's {@link #extraRegions}.
     * Exact from the owner (or the lock holder); as of a moment from others.
     */
    long[] parkedRegions() {
        long count = 0;
        long bytes = 0;
        Chunk chunk = dedicatedSlot;
        Allocation kept = dedicatedKept; // read by other threads while the owner (or a lock holder) keeps one
        if (chunk != null) {
            count = 1;
            bytes = chunk.chunkSize();
        } else if (dedicatedKeptFilled && kept != null) {
            count = 1;
            bytes = kept.reserved;
        }
        Allocation[] extra = extraRegions;
        if (extra != null) {
            for (int i = Math.min(extraRegionCount, extra.length) - 1; i >= 0; i--) {
                Allocation holder = extra[i]; // null while another thread moves the last one into its place
                if (holder != null) {
                    count++;
                    bytes += holder.reserved;
                }
            }
        }
        return new long[] {count, bytes};
    }

    private void releaseDedicated() {
        if (dedicatedKeptFilled) {
            dedicatedKeptFilled = false;
            unkeepRegion(dedicatedKept);
        }
        while (extraRegionCount > 0) {
            int last = --extraRegionCount;
            Allocation holder = extraRegions[last];
            extraRegions[last] = null;
            unkeepRegion(holder);
        }
        Chunk chunk = dedicatedSlot;
        if (chunk != null) {
            dedicatedSlot = null;
            caches.dedicated.giveBack(chunk); // idle for any thread, and for decay and trim
        }
    }

    /** A kept holder of a dedicated region goes blank into the stash; its region goes as a slotted one would. */
    private void unkeepRegion(Allocation holder) {
        Chunk region = holder.chunk;
        holder.clear();
        stashHolder(holder);
        caches.dedicated.giveBack(region);
    }

    /**
     * Gives every cached entry back to the arena. Owner thread, or any thread
     * once the owner is dead; for a shared cache, the holder of its lock.
     */
    void flush() {
        flushRequested = false;
        unkeepLarge();
        releaseLarge();
        releaseDedicated();
        for (ClassStack stack : stacks) {
            if (stack != null) {
                stack.unkeep(this::stashHolder);
                stack.flush(arena);
            }
        }
    }

    /**
     * Flushes the cache of a thread that has died and drops its stacks, so
     * that what stays reachable (from allocations it made that are still
     * live) is only its counters. Any thread, once the owner is dead.
     */
    void retire() {
        ownerThread = null; // dead: nothing may pass as its owner, and the cache no longer keeps it reachable
        flush();
        stacks = NO_STACKS; // a dead thread's cache keeps only its counters, while its buffers live
        holders = null;
        holderCount = 0;
    }

    private void sweep() {
        operationsSinceSweep = 0;
        if (!largeUsed) {
            unkeepLarge();
            releaseLarge();
        }
        largeUsed = false;
        if (!dedicatedUsed) {
            releaseDedicated();
        }
        dedicatedUsed = false;
        for (ClassStack stack : stacks) {
            if (stack != null) {
                stack.unkeep(this::stashHolder); // what is kept filled is swept like the rest
                stack.sweep(arena);
            }
        }
        moveIfCrowded();
    }

    /** The size of what the large slot holds: an element of its class, or a run (which may be fitted to whole pages). */
    private int largeBytes() {
        return Chunk.isSubpage(largeHandle) ? sizes.size(largeSizeIndex) : Chunk.runPages(largeHandle) * sizes.pageSize();
    }

    /** Turns the large slot's kept holder, if any, blank into the stash, its run back to the arena. */
    private void unkeepLarge() {
        if (largeKeptFilled) {
            largeKeptFilled = false;
            Allocation holder = largeKept;
            Chunk chunk = holder.chunk;
            long handle = holder.handle;
            holder.clear();
            stashHolder(holder);
            chunk.arena.free(chunk, handle);
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

    /** Whether {@code thread} is this cache's owner. */
    boolean isOwner(Thread thread) {
        return ownerThread == thread;
    }

    /** Whether the calling thread is this cache's owner; cheaper than looking up the caller's own cache. */
    boolean isOwnerThread() {
        return ownerThread == Thread.currentThread();
    }

    /** Whether the owning thread has died; never true of a shared cache. */
    boolean isOwnerDead() {
        Thread thread = ownerThread;
        return thread != null && !thread.isAlive();
    }

    // ---- the holder stash -------------------------------------------------------------------
    //
    // Blank Allocation holders for callers that never show a holder to anyone (the Netty adapter's
    // buffers): a buffer takes one at allocation and it comes back here when the buffer is released on
    // this thread, so the only object an allocation makes is the buffer itself. Owner thread only, except
    // in a shared cache, whose stash serves all its virtual threads under its lock. A holder of a thread's
    // own cache freed on another thread (a consumer of the buffers it allocated) goes back to it, cleared,
    // through a lock-free stack that releasing threads push onto and the owner takes whole, once its stash
    // is empty (returnHolder, takeReturned): push and take-all, so no holder can be seen twice. With the
    // adapter's recycling, the holder brings its buffer object back too, as Netty's recycler does.

    /** The most blank holders a stash keeps: enough for a thread that holds a few buffers at a time. */
    static final int HOLDER_STASH_CAPACITY = 8;
    /** Blank holders, made on first use; {@code holders[0 .. holderCount)} are free to take. */
    private Allocation[] holders;
    private int holderCount;
    /** Blank holders other threads gave back, linked by {@link Allocation#nextReturned}; the owner takes them whole. */
    private final AtomicReference<Allocation> returnedHolders = new AtomicReference<>();
    /** What the owner took of {@link #returnedHolders} and has not handed out yet; owner only. */
    private Allocation takenReturned;

    /**
     * A blank holder for an allocation on the calling thread, which must be the
     * owner (or any thread, for a shared cache, whose stash is taken from under
     * its lock): a stashed one, or a new one. Its {@code owner} names this
     * cache until the pool fills it.
     */
    Allocation takeHolder() {
        Allocation holder = null;
        if (!shared) {
            holder = popHolder();
            if (holder == null) {
                holder = takeReturned();
            }
        } else if (lockShared()) {
            try {
                holder = popHolder();
            } finally {
                unlockShared();
            }
        }
        if (holder == null) {
            holder = new Allocation(true);
        }
        if (holder.owner != this) {
            holder.owner = this; // a reference stored into a long-lived object costs G1 a fence and a card mark
        }
        return holder;
    }

    /** The top holder of the stash, or null; the owner, or the shared cache's lock held. */
    private Allocation popHolder() {
        int n = holderCount;
        if (n == 0) {
            return null;
        }
        holderCount = --n;
        return holders[n]; // left in place: stashing it again then stores nothing (see stashHolder)
    }

    /** A holder another thread gave back, or null; owner only (the one taker of the stack). */
    Allocation takeReturned() {
        Allocation holder = takenReturned;
        if (holder == null) {
            if (returnedHolders.get() == null) {
                return null; // the common case: a plain read, no write to the line releasing threads push onto
            }
            holder = returnedHolders.getAndSet(null);
        }
        takenReturned = holder.nextReturned;
        holder.nextReturned = null;
        return holder;
    }

    /**
     * Gives a cleared holder of this cache's stash, released on another
     * thread, back to the owner for its next allocations; any thread. Never
     * for a shared cache, whose holders go back to its stash under its lock.
     */
    void returnHolder(Allocation holder) {
        Allocation head;
        do {
            head = returnedHolders.get();
            holder.nextReturned = head;
        } while (!returnedHolders.compareAndSet(head, holder));
    }

    /**
     * Keeps a cleared holder of the stash for the next allocation, if there is
     * room; the owner thread, or the shared cache's lock held.
     */
    void stashHolder(Allocation holder) {
        Allocation[] stash = holders;
        if (stash == null) {
            holders = stash = new Allocation[HOLDER_STASH_CAPACITY];
        }
        int n = holderCount;
        if (n < stash.length) {
            if (stash[n] != holder) {
                stash[n] = holder; // most often the holder taken from this place: nothing to store
            }
            holderCount = n + 1;
        }
    }

    /** Blank holders in the stash now; for tests. */
    int stashedHolders() {
        return holderCount;
    }

    // ---- filled holders ---------------------------------------------------------------------
    //
    // The fastest path of all: a stashed holder released on its owner thread keeps its memory (chunk,
    // handle, offset, address, reserved size) and waits on top of the stack of its size class, and the
    // thread's next allocation of that class takes the holder as it is, setting only the category and
    // the requested size. Nothing about the memory is looked up or computed again, and the holder is
    // not cleared and filled. The buffer that released it dropped it first, so no stale buffer can
    // reach it (see SlabwiseDirectByteBuf.deallocate). The owner thread; in a shared cache, under its
    // lock, so that a virtual thread's holder serves the next virtual thread of the arena
    // (releaseShared, takeFilledShared).

    /**
     * Keeps a stashed holder whose allocation was just released (and
     * counted) with its memory, for this thread's next allocation of its
     * class: false, with nothing changed, when its memory is not this cache's
     * to keep that way (another arena, an uncached class, a full stack, a
     * pending flush). The caller has established that no limit and no
     * evacuation applies. The owner thread, or the shared cache's lock held.
     */
    boolean keepFilled(Allocation holder) {
        int sizeIndex = holder.sizeIndex;
        if (sizeIndex >= stackedClasses) {
            return sizeIndex >= cachedClasses && keepLarge(holder); // a cached class with no stack keeps nothing
        }
        if (flushRequested || sizeIndex < 0 || holder.chunk.arena != arena || !stack(sizeIndex).keep(holder)) {
            return false;
        }
        holder.kept = true;
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
        return true;
    }

    /**
     * A filled holder for {@code requested} bytes of {@code category}, taken
     * from the stack of its class and counted; null when there is none. The
     * caller has established that no limit applies (see
     * {@link Admission#admitsFreely}). The owner thread, or any thread for a
     * shared cache (see {@link #takeFilledShared}).
     */
    Allocation takeFilled(Category category, int requested) {
        if (shared) {
            return takeFilledShared(category, requested);
        }
        return takeFilledLocked(category, requested);
    }

    /**
     * {@link #takeFilled} of a shared cache: under its lock, and null without
     * waiting when another thread holds it, or at once for a request no slot
     * could hold (above {@link #LARGE_SLOT_LIMIT}).
     */
    private Allocation takeFilledShared(Category category, int requested) {
        if (requested > LARGE_SLOT_LIMIT || !lockShared()) {
            return null;
        }
        try {
            return takeFilledLocked(category, requested);
        } finally {
            unlockShared();
        }
    }

    /** {@link #takeFilled}: the owner thread, or the shared cache's lock held. */
    private Allocation takeFilledLocked(Category category, int requested) {
        if (requested > largestStackedRequest) {
            return takeFilledAbove(category, requested);
        }
        if (flushRequested) {
            return null;
        }
        ClassStack stack = stacks[SizeClasses.indexOf(Math.max(1, requested))];
        Allocation holder = stack == null ? null : stack.takeKept();
        return holder == null ? null : handOut(holder, category, requested);
    }

    /** {@link #takeFilled} above the cached sizes: the large slot's or the dedicated slot's kept holder. */
    private Allocation takeFilledAbove(Category category, int requested) {
        if (requested > dedicatedAbove) {
            Allocation kept = dedicatedKeptFilled ? takeDedicatedKept(category, requested) : null;
            return kept != null || extraRegionCount == 0 ? kept : takeExtraRegion(category, requested);
        }
        return largeKeptFilled ? takeLarge(category, requested) : null;
    }

    /** A kept holder taken for {@code requested} bytes of {@code category}: live again, and counted. */
    private Allocation handOut(Allocation holder, Category category, int requested) {
        holder.kept = false;
        if (holder.category != category) {
            // a reference stored into a long-lived object costs G1 a memory fence and a card mark
            // (a few nanoseconds, more than the rest of this method); the category rarely changes
            holder.category = category;
        }
        holder.requested = requested;
        counters.countAllocation(category.id, requested, holder.reserved, false, true);
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
        return holder;
    }

    /**
     * Keeps a released holder of a run above the cached sizes, fitted to whole
     * pages and of a class the large slot takes, filled in the large slot if
     * that is empty; false otherwise. As {@link #keepFilled}: the owner thread, or the shared cache's lock held.
     */
    private boolean keepLarge(Allocation holder) {
        int sizeIndex = holder.sizeIndex;
        if (flushRequested || largeKeptFilled || largeChunk != null || sizeIndex > largestCachedLargeClass
                || holder.requested <= fittedAbove || holder.chunk.arena != arena) {
            return false;
        }
        if (largeKept != holder) {
            largeKept = holder; // (usually the same holder, back in its slot: no store, no write barrier)
        }
        largeKeptFilled = true;
        holder.kept = true;
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
        return true;
    }

    /**
     * The large slot's kept holder for {@code requested} bytes of
     * {@code category}, counted, if it reserves just what the request would
     * (a run of its whole pages, the request being fitted); null otherwise.
     * The caller has established that no limit applies and that the request
     * gets no dedicated region.
     */
    private Allocation takeLarge(Category category, int requested) {
        Allocation holder = largeKept;
        if (flushRequested || requested <= fittedAbove || holder.reserved != sizes.pageRound(requested)) {
            return null;
        }
        largeKeptFilled = false;
        largeUsed = true;
        return handOut(holder, category, requested);
    }
}
