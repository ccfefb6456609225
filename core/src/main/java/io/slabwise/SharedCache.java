package io.slabwise;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The cache that the virtual threads bound to one arena share, its stacks,
 * slots and stash used only under a try-lock that no thread ever waits for.
 *
 * <pre>
 *  virtual thread ──tryLock──▶ taken: the stacks, slots and stash of a ThreadCache; counts with plain writes
 *                 ──busy─────▶ allocate: the arena's lock     release: the arena's remote-free queue (lock-free)
 *                              counts with atomic adds
 * </pre>
 *
 * <p>Virtual threads get no cache of their own: there may be millions of
 * them, each short-lived. A virtual thread that finds another one using this
 * cache does not wait, but allocates from the arena or releases through its
 * lock-free remote-free queue. What is counted while holding the lock (an
 * allocation through the stacks, a dedicated region or a carved slice
 * counted while the lock is free, a release of one of its allocations) is
 * counted with plain stores; the rest with atomic adds.
 *
 * <p>A release is one step under the lock ({@link #release}): counted, then
 * its holder kept filled, or its memory cached and its holder stashed. Its
 * holders kept filled and its holder stash work as a thread's own, under the
 * same lock ({@link #release}, {@link #takeFilled}, {@link #takeHolder()}), so
 * a virtual thread's buffer hands its holder, with its memory, to the next
 * virtual thread of the arena, and an allocate and release makes no holder
 * object there either. The lock's compare-and-set and release store order
 * everything a holder (and a buffer object attached to it) carries from one
 * thread to the next. Any thread may flush the cache when no virtual thread
 * holds it ({@link #flushShared()}).
 *
 * <p>A shared cache has no owner thread, is never bound to an arena, never
 * moves to another, never retires, and keeps no dedicated region in its slot
 * unfilled; it keeps up to {@link LargeSlots#SHARED_EXTRA_REGIONS} regions
 * filled beyond the slot's one.
 */
final class SharedCache extends ThreadCache {

    /**
     * Tries of the lock by a thread asking it to flush (see
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
    /** {@link #busy}, a field of the cache itself: the lock costs no load of another object. */
    private static final VarHandle BUSY;

    static {
        try {
            BUSY = MethodHandles.lookup().findVarHandle(SharedCache.class, "busy", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** {@link #release}: nothing done; the lock was taken, or the release must go past the cache. */
    static final int PASSED = 0;
    /** {@link #release}: counted, and the holder kept filled; nothing is left to do. */
    static final int KEPT = 1;
    /**
     * {@link #release}: counted, the holder cleared, the memory cached
     * (or sent to its arena; a dedicated region, to the pool's idle regions).
     */
    static final int CACHED = 2;

    /**
     * Guards the stacks, slots and stash: a virtual thread that finds it taken
     * does not wait but goes to the arena (allocation) or the remote-free
     * queue (release).
     */
    @SuppressWarnings("unused") // through BUSY only
    private volatile boolean busy;
    /** The pool's clock, for how long {@link #flushShared()} tries the lock. */
    private final Ticker ticker;

    /** The cache of the virtual threads bound to {@code arena}. */
    SharedCache(ThreadCaches caches, MemoryLimit limit, Arena arena, Ticker ticker, int maxCachedSize,
                int maxCachedBytesPerClass, int maxEntriesPerClass) {
        super(caches, limit, arena, null, maxCachedSize, maxCachedBytesPerClass, maxEntriesPerClass,
                LargeSlots.SHARED_EXTRA_REGIONS, new ThreadCounters(true));
        this.ticker = ticker;
    }

    /** Whether another thread holds the lock now (a hint: it may be let go, or taken, the next moment). */
    boolean isBusy() {
        return (boolean) BUSY.getOpaque(this);
    }

    /** Takes the lock if it is free: never waits. */
    boolean lockShared() {
        return BUSY.compareAndSet(this, false, true);
    }

    /**
     * Gives back the lock taken with {@link #lockShared()}; a release store
     * is all a lock's release needs. A flush asked for while the lock was
     * held (by a trim, a close or a waiter that found it taken) is made
     * first: not every operation answers one (an allocation of a dedicated
     * region, a holder taken from the stash, anything after close()), so it
     * could otherwise wait for good. In a closed pool the arena's empty
     * chunks then go back too, since the close's own trim may have run
     * before this flush.
     */
    void unlockShared() {
        if (flushRequested) {
            flush();
            if (caches.isClosed()) {
                arena.trim(0, 0);
            }
        }
        BUSY.setRelease(this, false);
    }

    /** A blank holder from the stash if the lock is free, else a new one; any thread. */
    @Override
    Allocation takeHolder() {
        Allocation holder = null;
        if (lockShared()) {
            try {
                holder = stash.pop();
            } finally {
                unlockShared();
            }
        }
        return ownedHolder(holder);
    }

    /** Allocates through the stacks under the lock, or from the arena when another thread holds it. */
    @Override
    void allocate(Category category, int requested, int sizeIndex, int reserved, Allocation out) {
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
    }

    /**
     * Allocates from the arena, past the stacks, counted on this cache like
     * any allocation, with atomic adds: for a virtual thread that finds the
     * cache busy.
     */
    void allocateFromArena(Category category, int requested, int sizeIndex, int reserved, Allocation out) {
        allocatePastStacks(arena, category, requested, sizeIndex, reserved, out, false);
    }

    /** As a thread's own, counted with atomic adds: the lock is not held. */
    @Override
    void allocateForMove(Arena target, Category category, int requested, int sizeIndex, int reserved, Allocation out) {
        allocatePastStacks(target, category, requested, sizeIndex, reserved, out, false);
    }

    /** Never: virtual threads are not bound to arenas, and the shared cache stays with its own. */
    @Override
    void moveIfCrowded() {
    }

    /** Releases into the stacks under the lock, or through the arena's remote-free queue when it is taken. */
    @Override
    void free(Chunk chunk, long handle, int sizeIndex) {
        if (chunk.arena == arena && lockShared()) {
            try {
                freeCached(chunk, handle, sizeIndex);
            } finally {
                unlockShared();
            }
        } else {
            chunk.arena.freeFromOtherArena(chunk, handle); // lock-free, unless the queue is full
        }
    }

    /**
     * Counts a new allocation and makes this cache its owner: with plain
     * writes under the lock when that is free, as the stacks do, and with
     * atomic adds past it.
     */
    @Override
    void countAllocation(Category category, long requestedBytes, long reservedBytes, boolean carved, Allocation out) {
        out.owner = this;
        if (lockShared()) {
            try {
                counters.countAllocation(category.id, requestedBytes, reservedBytes, carved, true);
            } finally {
                unlockShared();
            }
            return;
        }
        counters.countAllocation(category.id, requestedBytes, reservedBytes, carved, false);
    }

    /**
     * A filled holder under the lock, and null without waiting when another
     * thread holds it, or at once for a request no slot could hold (above
     * {@link LargeSlots#LIMIT}); any thread.
     */
    @Override
    Allocation takeFilled(Category category, int requested) {
        if (requested > LargeSlots.LIMIT || !lockShared()) {
            return null;
        }
        try {
            return takeFilledLocked(category, requested);
        } finally {
            unlockShared();
        }
    }

    /** Never: the shared cache's dedicated slot holds only kept holders (see {@link #keepDedicated}). */
    @Override
    Chunk takeDedicated(int pages) {
        return null;
    }

    /** Never: a region kept unfilled would belong to no thread that could take it back without the lock. */
    @Override
    boolean keepDedicated(Chunk chunk) {
        return false;
    }

    /**
     * Releases an allocation this cache owns in one step under its lock, so
     * that its counts are plain writes and its checks are ordered against the
     * flush a close, a waiter or a compaction asks of the cache. The release
     * is counted; then a stashed holder in a category without a quota keeps
     * its memory for the arena's next virtual thread, or else the memory goes
     * into the stacks (or its own arena; a dedicated region, once the lock is
     * given back, to the pool's idle regions) and a stashed holder, cleared,
     * into the stash. Any thread, for an allocation without a releaser; once
     * this returned anything but {@link #PASSED}, the caller must not touch
     * {@code allocation} again, which another virtual thread may be using.
     *
     * @return {@link #PASSED} (another virtual thread holds the lock, the pool
     *         is closed, someone waits for memory, or the chunk is being
     *         evacuated), {@link #KEPT} or {@link #CACHED}
     */
    int release(Allocation allocation, Admission admission) {
        if (!lockShared()) {
            return PASSED;
        }
        Chunk chunk = allocation.chunk;
        try {
            Category category = allocation.category;
            if (chunk.evacuating || admission.isClosed() || admission.hasWaiters()) {
                return PASSED;
            }
            counters.countReleaseLocked(category.id, allocation.requested, allocation.reserved);
            boolean keeps = allocation.stashed && !category.tracked; // a tracked category's bytes must come back
            if (keeps && (chunk.huge ? keepDedicatedFilled(allocation) : keepFilled(allocation))) {
                return KEPT;
            }
            long handle = allocation.handle;
            int sizeIndex = allocation.sizeIndex;
            allocation.clear();
            if (!chunk.huge) {
                freeCached(chunk, handle, sizeIndex);
            }
            if (allocation.stashed) {
                stash.stash(allocation);
            }
        } finally {
            unlockShared();
        }
        if (chunk.huge) {
            caches.dedicated.giveBack(chunk); // outside the lock: that may take the idle list's lock, or unmap the region
        }
        return CACHED;
    }

    /**
     * Gives the cache's entries back to the arena from any thread: at once,
     * by this thread or by the virtual thread holding the cache as it lets
     * go; after a long hold, at the holder's release of the lock.
     *
     * <p>The request is set first, then the lock tried until it is taken or
     * the request answered: a holder that read no request just before it was
     * set lets go of the lock a few instructions later, and with one try the
     * request would wait for the cache's next operation, which may never come
     * (a closed pool). The tries spin, then yield (the holder's thread may
     * have been descheduled as it let go), and stop after 20 ms of the pool's
     * ticker: a holder that is not yet letting go reads the request when it
     * does, and the callers (trims, closes, waiters at a limit, compactions)
     * never hold a shared cache's lock themselves.
     */
    void flushShared() {
        requestFlush();
        long deadline = ticker.read() + FLUSH_LOCK_WAIT_NANOS;
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
            } else if (ticker.read() - deadline > 0) {
                return; // the holder answers the request when it lets go
            } else {
                Thread.yield(); // the holder's thread may have been descheduled as it was letting go
            }
        }
    }
}
