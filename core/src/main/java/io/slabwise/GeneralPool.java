package io.slabwise;

/**
 * The general pool: the drop-in hot path. It sizes a request (its size class,
 * whole pages, or a region of its own), takes it through {@link Admission}
 * from the calling thread's cache, its arena or a dedicated region, and gives
 * released memory back to the thread's cache, the arena or the regions; it
 * resizes in place and answers flush requests a release passes by. The
 * sequential allocators' and block pools' memory is freed here too, through
 * its {@link Releaser}. {@link MemoryPool} routes to it; nothing here calls
 * back into the pool.
 *
 * <p>Any thread. A release on the thread that allocated, with nobody waiting
 * at a limit, stays in {@link #free}'s first branch: the thread's cache keeps
 * the holder filled for that thread's next allocation of its class.
 */
final class GeneralPool {

    private final SizeClasses sizes;
    /** Requests above this many bytes (and at most a chunk) reserve a run of whole pages, not their size class. */
    private final int fittedAbove;
    /** Requests above it get a region of their own; at least {@link #fittedAbove}, at most a chunk. */
    private final int dedicatedAbove;
    /** The largest request: {@link Integer#MAX_VALUE} rounded down to a page. */
    private final int maxRequest;
    private final DedicatedRegions dedicated;
    private final ThreadCaches threadCaches;
    private final Admission admission;
    private final IdleMemory idle;
    private final CommittedMemory committed;

    /** One try at the general pool, for {@link Admission} and for the parts that take general-pool memory. */
    final Attempt attempt = new Attempt() {
        @Override
        public int tryOnce(Category category, int requested, Allocation out) {
            return tryGeneral(category, requested, out);
        }

        @Override
        public long leastReserved(int requested) {
            return reservedSizeFor(requested); // a request that reserves more than a limit can never be served
        }
    };

    GeneralPool(SizeClasses sizes, int fittedAbove, int dedicatedAbove, int pageSize, DedicatedRegions dedicated,
                ThreadCaches threadCaches, Admission admission, IdleMemory idle, CommittedMemory committed) {
        this.sizes = sizes;
        this.fittedAbove = fittedAbove;
        this.dedicatedAbove = dedicatedAbove;
        this.maxRequest = Integer.MAX_VALUE & -pageSize;
        this.dedicated = dedicated;
        this.threadCaches = threadCaches;
        this.admission = admission;
        this.idle = idle;
        this.committed = committed;
    }

    /** The pool's size classes. */
    SizeClasses sizes() {
        return sizes;
    }

    /** The largest request the pool serves. */
    int maxRequest() {
        return maxRequest;
    }

    /** Allocates for a category of the pool, under its policy at a limit; see {@link MemoryPool#allocate(Category, int, Allocation)}. */
    boolean allocate(Category category, int requested, Allocation out) {
        checkRequest(requested);
        out.checkNotLive();
        return admission.admit(attempt, category, requested, out);
    }

    /** {@link #allocate}, never waiting and returning false at a limit when {@code returnFalseAtLimit}. */
    boolean tryAllocate(Category category, int requested, Allocation out, boolean returnFalseAtLimit) {
        checkRequest(requested);
        out.checkNotLive();
        return admission.admit(attempt, category, requested, out, returnFalseAtLimit);
    }

    /** The exception for a request refused at a limit; see {@link MemoryPool#limitException}. */
    MemoryLimitException limitException(Category category, int requested) {
        return admission.exceptionFor(category, requested, reservedSizeFor(Math.max(0, requested)));
    }

    /** One try at the general pool: {@link Attempt#DONE}, or why it was refused. */
    private int tryGeneral(Category category, int requested, Allocation out) {
        return tryGeneral(category, requested, out, null);
    }

    /**
     * One try at the general pool; with {@code moveTo} (a compaction's move)
     * in that arena, the one the moved memory leaves, past the thread cache.
     */
    int tryGeneral(Category category, int requested, Allocation out, Arena moveTo) {
        boolean huge = requested > dedicatedAbove;
        int sizeIndex = huge ? -1 : SizeClasses.indexOf(Math.max(1, requested));
        int reserved = huge || requested > fittedAbove ? sizes.pageRound(requested) : sizes.size(sizeIndex);
        if (!category.admit(reserved)) {
            return Attempt.QUOTA;
        }
        try {
            // a holder from a stash names the caller's cache already (see allocateStashed)
            ThreadCache cache = out.owner != null ? out.owner : threadCaches.current();
            if (huge) {
                allocateDedicated(cache, category, requested, reserved, out);
            } else if (moveTo != null) {
                cache.allocateForMove(moveTo, category, requested, sizeIndex, reserved, out);
            } else {
                cache.allocate(category, requested, sizeIndex, reserved, out);
            }
            return Attempt.DONE;
        } catch (CeilingReached e) {
            category.release(reserved);
            return Attempt.CEILING;
        } catch (RuntimeException | Error e) { // the chunk source failed: the quota is as it was
            category.release(reserved);
            throw e;
        }
    }

    /**
     * Allocates into a blank holder from the calling thread's stash (see
     * {@link MemoryPool#allocateStashed}); the thread's cache is looked up
     * once, here, and the holder carries it to {@link #tryGeneral}.
     */
    Allocation allocateStashed(Category category, int requested, boolean returnNullAtLimit) {
        checkRequest(requested);
        ThreadCache cache = threadCaches.current();
        if (admission.admitsFreely(category)) {
            Allocation filled = cache.takeFilled(category, requested);
            if (filled != null) {
                return filled; // the common case: a holder this thread released, its memory still in it
            }
        }
        Allocation out = cache.takeHolder();
        return admission.admit(attempt, category, requested, out, returnNullAtLimit) ? out : null;
    }

    /** Gives memory back; see {@link MemoryPool#free}. The common case, kept short so that it inlines, comes first. */
    void free(Allocation allocation) {
        Chunk chunk = allocation.chunk;
        if (chunk == null || allocation.kept) {
            throw new IllegalStateException("double free: the allocation holds no live memory");
        }
        ThreadCache owner = allocation.owner;
        Category category = allocation.category;
        boolean counted = false;
        if (allocation.stashed && allocation.releaser == null && owner.isOwnerThread() && !chunk.evacuating
                && admission.admitsFreely(category)) {
            // the common case, kept short so that it inlines: a buffer released on the thread that allocated it
            owner.countRelease(category, allocation.requested, allocation.reserved, false, true);
            if (chunk.huge ? owner.keepDedicatedFilled(allocation) : owner.keepFilled(allocation)) {
                return; // the holder keeps its memory for this thread's next allocation of its class (or pages)
            }
            counted = true;
        }
        release(allocation, chunk, owner, category, counted);
    }

    /** The rest of {@link #free}: every release whose holder is not kept filled; {@code counted} when it was counted. */
    private void release(Allocation allocation, Chunk chunk, ThreadCache owner, Category category, boolean counted) {
        int reserved = allocation.reserved;
        Releaser releaser = allocation.releaser;
        if (!counted && releaser == null && owner instanceof SharedCache) {
            // a virtual thread's allocation: one step under the shared cache's lock, which orders its checks
            // against the flush that a close, a waiter or a compaction asks of the shared cache
            int outcome = ((SharedCache) owner).release(allocation, admission);
            if (outcome != SharedCache.PASSED) { // the holder is done with: it may already serve another thread
                if (outcome == SharedCache.KEPT) {
                    return;
                }
                afterRelease(category, reserved, admission.isClosed());
                return;
            }
        }
        boolean onOwnerThread = owner.isOwnerThread();
        boolean closed = admission.isClosed();
        if (releaser != null) {
            owner.countRelease(category, allocation.requested, reserved, true, onOwnerThread);
            releaser.release(allocation);
            allocation.clear();
            if (admission.hasWaiters()) {
                answerFlushRequest(owner, onOwnerThread); // its cache may hold what a waiter needs
            }
        } else {
            if (!counted) {
                owner.countRelease(category, allocation.requested, reserved, false, onOwnerThread);
            }
            long handle = allocation.handle;
            int sizeIndex = allocation.sizeIndex;
            allocation.clear();
            if (chunk.huge) {
                freeDedicated(chunk, closed, onOwnerThread ? owner : null);
                answerFlushRequest(owner, onOwnerThread);
            } else if (closed || chunk.evacuating || admission.hasWaiters()) {
                // closed, a chunk being emptied, or someone waits for memory: not into this thread's cache
                chunk.arena.free(chunk, handle);
                answerFlushRequest(owner, onOwnerThread);
            } else {
                // the allocating thread releasing is the common case: its cache is at hand without a thread-local look-up
                (onOwnerThread ? owner : threadCaches.current()).free(chunk, handle, sizeIndex);
            }
        }
        // read again: a close() between the read above and the caching (a shared cache's lock taken by then)
        // found nothing to flush yet, and no later operation flushes a shared cache of a closed pool
        afterRelease(category, reserved, closed || admission.isClosed());
        // cleared above; its next use is its owner's next allocation (a virtual thread's holder that came
        // this way, past a busy or flushing shared cache, is left to the garbage collector)
        if (allocation.stashed && !(owner instanceof SharedCache)) {
            if (onOwnerThread) {
                owner.stash.stash(allocation);
            } else {
                owner.stash.returnHolder(allocation);
            }
        }
    }

    /**
     * What every release that gave memory back ends with: the category's
     * tracked bytes, a waiter woken, and in a {@code closed} pool the memory
     * given back at once, with whatever the thread caches hold (a virtual
     * thread may have cached its memory in a shared cache as the pool closed).
     */
    private void afterRelease(Category category, int reserved, boolean closed) {
        // read again now that the memory is back: a caller that began to wait after the checks above
        // may already have failed its try, and must be woken by this release
        if (category.release(reserved) || admission.hasWaiters()) {
            admission.released();
        }
        if (closed) {
            // a closed pool gives each chunk back as soon as it is empty; the shared caches are flushed first
            idle.reclaimAfterClose();
            if (committed.committed() == 0) {
                idle.trimNativeHeap(); // the last one: what malloc kept of its regions goes back too
            }
        }
    }

    /**
     * New memory for a compaction's move of {@code from}: in {@code from}'s
     * arena, where the compaction's choice counted room for it, past the
     * thread cache, never waiting at a limit.
     */
    boolean allocateForMove(Allocation from, Allocation to) {
        if (from.chunk.huge) {
            throw new IllegalArgumentException("a huge allocation has a region of its own and never moves: " + from);
        }
        Arena arena = from.chunk.arena;
        return admission.tryAdmit((category, requested, out) -> tryGeneral(category, requested, out, arena),
                from.category, from.requested, to);
    }

    /** Whether the pool was closed: moves are refused from then on. */
    boolean isClosed() {
        return admission.isClosed();
    }

    /** See {@link MemoryPool#resizeInPlace}: true when resized without moving, false when it must move. */
    boolean resizeInPlace(Allocation allocation, int newRequested) {
        if (!allocation.isLive()) {
            throw new IllegalStateException("the allocation holds no live memory");
        }
        if (newRequested < 0 || newRequested > allocation.reserved) {
            return false;
        }
        if (allocation.releaser != null) {
            if (!allocation.releaser.resizeInPlace(allocation, newRequested)) {
                return false;
            }
            countResize(allocation, newRequested);
            return true;
        }
        // in place while a request of the new size would reserve just as much (the same class, or the same pages):
        // a run stays a run of its class (or pages), even past a dedicated threshold that is not a whole number of
        // pages, which its last page may cross; a dedicated region serves what it could be reused for
        boolean fits = allocation.chunk.huge
                ? newRequested > dedicatedAbove && DedicatedRegions.fits(allocation.reserved, sizes.pageRound(newRequested))
                : reservedSizeFor(newRequested) == allocation.reserved;
        if (!fits) {
            return false;
        }
        countResize(allocation, newRequested);
        return true;
    }

    private void countResize(Allocation allocation, int newRequested) {
        ThreadCache owner = allocation.owner;
        owner.countResize(allocation.category, (long) newRequested - allocation.requested, owner.isOwnerThread());
        allocation.requested = newRequested;
    }

    /**
     * A region of its own for a request above {@link #dedicatedAbove}: an
     * idle one that fits ({@link DedicatedRegions#fits}), or a new one of
     * {@code pages} bytes. A reused region larger than {@code pages} reserves
     * all of it, so the category is charged the difference too; where its
     * quota has no room for that, a new region is committed instead.
     */
    private void allocateDedicated(ThreadCache cache, Category category, int requested, int pages, Allocation out) {
        Chunk slotted = cache.isOwnerThread() ? cache.takeDedicated(pages) : null; // the thread's own slot: no lock
        Chunk chunk = dedicated.take(category, pages, cache.arena, slotted);
        int size = chunk.chunkSize();
        out.chunk = chunk;
        out.handle = 0;
        out.place(-1, 0, category, requested, size);
        cache.countAllocation(category, requested, size, false, out);
    }

    /**
     * Answers a flush asked of the releasing thread's own cache (by a trim, a
     * caller waiting at a limit or a compaction) on a release that passed that
     * cache by: its owner answers at its next allocation or release, whichever
     * path that takes, or a caller waiting at the ceiling could time out while
     * the memory it needs sits in the cache of a thread that only releases.
     * Before the release is signalled, so that a waiter woken by it finds the
     * memory back in its arena. A thread with no cache of its own is not
     * given one; a shared cache answers when its lock is given back; a closed
     * pool's caches are flushed by {@link #afterRelease}.
     */
    private void answerFlushRequest(ThreadCache owner, boolean onOwnerThread) {
        if (admission.isClosed()) {
            return;
        }
        ThreadCache mine = onOwnerThread ? owner : threadCaches.own();
        if (mine != null) {
            mine.flushIfRequested();
        }
    }

    /**
     * Gives a dedicated region back while the pool is open: into the
     * releasing thread's slot when it allocated the region, its slot is free
     * and no caller waits for memory (as a release then passes every cache
     * by), else idle for any thread, where a caller at the ceiling can take
     * it back; to the chunk source once the pool is closed.
     */
    private void freeDedicated(Chunk chunk, boolean closed, ThreadCache ownerReleasing) {
        if (!closed && ownerReleasing != null && !admission.hasWaiters() && ownerReleasing.keepDedicated(chunk)) {
            return; // still counted, as in a slot (see DedicatedRegions); a trim or close() asks the owner to flush it
        }
        dedicated.giveBack(chunk); // straight back once the pool is closed
    }

    /** What a request of {@code requested} bytes reserves; see {@link MemoryPool#reservedSizeFor}. */
    int reservedSizeFor(int requested) {
        checkRequest(requested);
        return requested > fittedAbove ? sizes.pageRound(requested) : sizes.size(SizeClasses.indexOf(Math.max(1, requested)));
    }

    void checkRequest(int requested) {
        if (requested < 0) {
            throw new IllegalArgumentException("requested size must not be negative: " + requested);
        }
        if (requested > maxRequest()) {
            throw new IllegalArgumentException("requested size " + requested + " exceeds the largest allocation, " + maxRequest());
        }
    }
}
