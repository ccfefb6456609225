package io.slabwise;

/**
 * A platform thread's own cache in front of an arena: recently freed memory
 * of each cached size class, kept in a small stack so that the common
 * allocate/release path takes no lock, plus this thread's share of the pool's
 * accounting.
 *
 * <pre>
 *  ThreadCache ─┬─ stacks[class]  ClassStack: entries, and holders kept filled on top
 *               ├─ slots          LargeSlots: one run and one dedicated region above the cached sizes
 *               ├─ stash          HolderStash: blank holders, and those other threads gave back
 *               └─ counters       ThreadCounters: this thread's share of the accounting
 * </pre>
 *
 * <h2>Ownership</h2>
 * Only the owning thread touches the stacks, except that once the owner has
 * died (observed through {@link Thread#isAlive()}, which orders everything the
 * owner did before it), {@link MemoryPool} may flush them from another thread.
 * Any other thread asks for a flush through {@link #requestFlush()}; the owner
 * honours it at its next allocation or release. Virtual threads share one
 * cache per arena instead, a {@link SharedCache}: the same stacks, slots and
 * stash, used only under its try-lock.
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
 * memory its own allocations can never reach. Above the cached sizes,
 * {@link LargeSlots} keep one run and one dedicated region of up to 1 MiB.
 *
 * <h2>Holders kept filled</h2>
 * The Netty adapter's buffers take their {@link Allocation} holder from this
 * cache ({@link #takeHolder()}). When such a buffer is released on the thread
 * that allocated it, the holder is kept with its memory on top of the stack of
 * its class (up to {@link ClassStack#KEPT_LIMIT} per class), and that thread's
 * next allocation of the class takes it as it is: nothing about the memory is
 * looked up, computed or written again ({@link #keepFilled}, {@link #takeFilled}):
 * only the category and the requested size are set, and the holder is not
 * cleared and filled. Kept holders count as cached memory, and a flush or a sweep turns them back
 * into plain entries. Above the cached sizes the large slot does the same for
 * one holder of a run fitted to whole pages, which a request of the same bytes
 * takes as it is. The buffer that released a holder dropped it first, so no
 * stale buffer can reach it (see {@code SlabwiseDirectByteBuf.deallocate}).
 *
 * <h2>Refills</h2>
 * When the stack of a cached size class is empty, the cache takes a batch of
 * allocations from the arena under one lock, sized by demand; a release into
 * a full stack hands the older half over to the arena's remote-free queue,
 * lock-free (see {@link ClassStack}).
 *
 * <h2>Trimming</h2>
 * Every {@link #SWEEP_INTERVAL} operations the cache frees, per size class, as
 * many entries as were never used since the previous sweep (the low-water mark
 * of the stack), oldest first, and whatever the slots held unused.
 *
 * <h2>What an idle cache costs</h2>
 * A cache is cheap until it caches: the stack of a size class is made at its
 * first use, the counters grow with the categories the thread allocates in,
 * and the counters other threads write are made at the first release from
 * another thread. A new cache is a few hundred bytes of heap; when its thread
 * dies its stacks are given back and dropped ({@link #retire()}).
 *
 * <h2>Accounting</h2>
 * A cache carries its thread's {@link ThreadCounters}: what the thread's
 * allocations took and what their releases gave back, per category. The
 * owner counts with plain stores; other threads count releases of its
 * allocations with atomic adds. Readers never make either wait.
 */
class ThreadCache {

    /** Operations between two sweeps of unused entries. */
    static final int SWEEP_INTERVAL = 8192;
    /** The stacks of a dead thread's cache, which caches nothing more (see {@link #retire}). */
    private static final ClassStack[] NO_STACKS = new ClassStack[0];

    /**
     * The pool's thread caches: told when this cache's arena grew, asked where
     * a crowded cache moves, and the pool's idle dedicated regions.
     */
    final ThreadCaches caches;
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
    private final SizeClasses sizes;
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
    /** What is kept above the cached sizes: the large and the dedicated slot. */
    private final LargeSlots slots;
    /**
     * Blank holders for the Netty adapter's buffers (see {@link #takeHolder()}):
     * a holder released without its memory kept goes back here, on the owner
     * thread, or through its stack of returned holders from any other.
     */
    final HolderStash stash = new HolderStash();
    volatile boolean flushRequested;

    /** This thread's share of the pool's accounting. */
    final ThreadCounters counters;

    /** The cache of platform thread {@code owner}, bound to {@code arena}. */
    ThreadCache(ThreadCaches caches, MemoryLimit limit, Arena arena, Thread owner, int maxCachedSize,
                int maxCachedBytesPerClass, int maxEntriesPerClass) {
        this(caches, limit, arena, owner, maxCachedSize, maxCachedBytesPerClass, maxEntriesPerClass, 0,
                new ThreadCounters(false));
    }

    /**
     * A cache with {@code extraRegions} kept regions beyond its dedicated
     * slot's one (see {@link LargeSlots}) and {@code counters}; for
     * {@link SharedCache}, which has no owner.
     */
    ThreadCache(ThreadCaches caches, MemoryLimit limit, Arena arena, Thread owner, int maxCachedSize,
                int maxCachedBytesPerClass, int maxEntriesPerClass, int extraRegions, ThreadCounters counters) {
        this.caches = caches;
        this.limit = limit;
        this.arena = arena;
        this.ownerThread = owner;
        this.sizes = arena.sizes;
        // the size classes up to the largest cached size: the ones above them may take the large slot
        int cachedClasses = maxCachedSize <= 0 ? 0
                : Math.min(sizes.count(), SizeClasses.indexOf(Math.min(maxCachedSize, sizes.chunkSize())) + 1);
        int stacked = maxEntriesPerClass == 0 ? 0 : cachedClasses;
        while (stacked > 0 && sizes.size(stacked - 1) > maxCachedBytesPerClass) {
            stacked--;
        }
        this.stackedClasses = stacked;
        this.largestStackedRequest = stacked == 0 ? -1 : sizes.size(stacked - 1);
        this.maxCachedBytesPerClass = maxCachedBytesPerClass;
        this.maxEntriesPerClass = maxEntriesPerClass;
        this.stacks = new ClassStack[stackedClasses];
        this.counters = counters;
        this.slots = new LargeSlots(sizes, caches.dedicated, stash, cachedClasses, caches.fittedAbove(),
                caches.dedicatedAbove(), extraRegions);
    }

    /**
     * A blank holder for an allocation on the calling thread, which must be the
     * owner: a stashed one, one another thread gave back, or a new one. Its
     * {@code owner} names this cache until the pool fills it.
     */
    Allocation takeHolder() {
        Allocation holder = stash.pop();
        if (holder == null) {
            holder = stash.takeReturned();
        }
        return ownedHolder(holder);
    }

    /** {@code holder}, or a new one when null, naming this cache as its owner. */
    final Allocation ownedHolder(Allocation holder) {
        if (holder == null) {
            holder = new Allocation(true);
        }
        if (holder.owner != this) {
            holder.owner = this; // a reference stored into a long-lived object costs G1 a fence and a card mark
        }
        return holder;
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
        allocateCached(category, requested, sizeIndex, reserved, out);
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
        allocatePastStacks(target, category, requested, sizeIndex, reserved, out, true);
    }

    /**
     * Allocates from {@code from} past the stacks and counts it on this cache,
     * with plain writes when {@code exclusive}; reacts to the growth of this
     * cache's own arena only.
     */
    final void allocatePastStacks(Arena from, Category category, int requested, int sizeIndex, int reserved,
                                  Allocation out, boolean exclusive) {
        from.allocate(sizeIndex, reserved, out);
        if (from == arena) {
            afterArenaAllocation();
        }
        placeAndCount(category, requested, sizeIndex, reserved, out, exclusive);
    }

    /** Allocates through the stacks; the owner thread, or a virtual thread holding a shared cache. */
    final void allocateCached(Category category, int requested, int sizeIndex, int reserved, Allocation out) {
        flushIfRequested();
        ClassStack stack = sizeIndex < stackedClasses ? stack(sizeIndex) : null;
        if (stack != null && stack.hasKept()) {
            stack.unkeep(stash::stash); // a caller with a holder of its own takes kept memory as plain entries
        }
        if (slots.takeRun(sizeIndex, reserved, out)) {
            // the large slot's run, taken as it is
        } else if (stack == null) {
            arena.allocate(sizeIndex, reserved, out);
            afterArenaAllocation();
        } else if (!stack.pop(arena, out)) {
            stack.refill(arena, sizeIndex, limit.hasWaiters(), out); // a batch under one lock, one of it taken
            afterArenaAllocation();
        }
        placeAndCount(category, requested, sizeIndex, reserved, out, true);
        countOperation();
    }

    /** Fills {@code out} and counts it, with plain writes when {@code exclusive} (the owner, or the shared cache's lock held). */
    private void placeAndCount(Category category, int requested, int sizeIndex, int reserved, Allocation out,
                               boolean exclusive) {
        // a subpage element's size is its class's size, the reserved size: no look-up of the subpage
        out.place(sizeIndex, (int) out.chunk.offset(out.handle, reserved), category, requested, reserved);
        out.owner = this;
        counters.countAllocation(category.id, requested, reserved, false, exclusive);
    }

    /** Counts one operation of the stacks or slots, and sweeps every {@link #SWEEP_INTERVAL} of them. */
    private void countOperation() {
        if (++operationsSinceSweep >= SWEEP_INTERVAL) {
            sweep();
        }
    }

    /** After an allocation from this cache's arena: if the arena grew, the pool's caches decide what follows. */
    private void afterArenaAllocation() {
        if (arena.takeGrowth()) {
            caches.arenaGrew(this);
        }
    }

    /**
     * Moves this thread's cache to a less crowded arena when the pool grew
     * enough to take another arena into use (see
     * {@link PoolConfig#arenaSpreadBytes()}): everything cached goes back to
     * the old arena first, so the cache only ever holds memory of its arena.
     * Buffers already allocated stay where they are and go back to their own
     * arena when released. Owner thread only.
     */
    void moveIfCrowded() {
        Arena target = caches.moveTarget(arena);
        if (target != null) {
            flush();
            arena = target;
        }
    }

    /** Releases a pooled (non-huge) allocation made by any thread. */
    void free(Chunk chunk, long handle, int sizeIndex) {
        freeCached(chunk, handle, sizeIndex);
    }

    /** Releases into the stacks; the owner thread, or a virtual thread holding a shared cache. */
    final void freeCached(Chunk chunk, long handle, int sizeIndex) {
        flushIfRequested();
        if (chunk.arena != arena) {
            chunk.arena.freeFromOtherArena(chunk, handle); // lock-free, unless the queue is full
        } else if (sizeIndex < 0 || sizeIndex >= stackedClasses || !stack(sizeIndex).pushOrFlush(arena, chunk, handle)) {
            if (!slots.keepRun(chunk, handle, sizeIndex)) {
                arena.free(chunk, handle); // a stack filled by kept holders, a taken large slot (in either form), or a size neither keeps
            }
        }
        countOperation();
    }

    /**
     * Counts a new allocation of this thread and makes this cache its owner;
     * {@code carved} when a specialised allocator carved it from a whole chunk.
     * Owner thread only.
     */
    void countAllocation(Category category, long requestedBytes, long reservedBytes, boolean carved, Allocation out) {
        out.owner = this;
        counters.countAllocation(category.id, requestedBytes, reservedBytes, carved, true);
    }

    /**
     * Counts the release of an allocation this cache owns ({@code carved} as
     * when it was counted); {@code onOwnerThread} when the caller is this
     * cache's owner, which counts with plain writes (never so for a shared
     * cache, which has no owner thread).
     */
    final void countRelease(Category category, long requestedBytes, long reservedBytes, boolean carved, boolean onOwnerThread) {
        counters.countRelease(category.id, requestedBytes, reservedBytes, carved, onOwnerThread);
    }

    /** Changes the requested size of a live allocation this cache owns, which keeps its size class. */
    final void countResize(Category category, long requestedDelta, boolean onOwnerThread) {
        counters.countResize(category.id, requestedDelta, onOwnerThread);
    }

    /** Asks the owner to give back everything cached, at its next operation. Any thread. */
    final void requestFlush() {
        flushRequested = true;
    }

    /**
     * Answers a flush asked of this cache, if one was: on every path of the
     * owner's operations, including those that pass the stacks by (see
     * {@link MemoryPool}'s release). The owner thread, or a shared cache's lock held.
     */
    final void flushIfRequested() {
        if (flushRequested) {
            flush();
        }
    }

    /** Bytes held in the stacks and the large slot; exact only from the owner or after the owner died. */
    final long cachedBytes() {
        long bytes = slots.cachedBytes();
        for (int i = 0; i < stacks.length; i++) {
            ClassStack stack = stacks[i];
            if (stack != null) {
                bytes += (long) stack.size() * sizes.size(i);
            }
        }
        return bytes;
    }

    /** Entries of class {@code sizeIndex} cached now, kept holders included, and the most it may hold; for tests. */
    final int[] stackFill(int sizeIndex) {
        ClassStack stack = stack(sizeIndex);
        return new int[] {stack.size(), stack.capacity};
    }

    /** How many size classes have a stack now; stacks are made at a class's first use. */
    final int stacksMade() {
        int made = 0;
        for (ClassStack stack : stacks) {
            if (stack != null) {
                made++;
            }
        }
        return made;
    }

    /**
     * Takes the dedicated region in this thread's slot if it fits a request
     * of {@code pages} bytes ({@link DedicatedRegions#fits}); null otherwise.
     * Answers a pending flush request first, since a dedicated region passes
     * the stacks by. Owner thread.
     */
    Chunk takeDedicated(int pages) {
        flushIfRequested();
        return slots.takeDedicated(pages);
    }

    /**
     * Keeps a released dedicated region of up to {@link LargeSlots#LIMIT},
     * and no larger than a chunk, in this thread's slot if the slot is free.
     * Owner thread.
     */
    boolean keepDedicated(Chunk chunk) {
        return !flushRequested && slots.keepDedicated(chunk);
    }

    /**
     * Keeps a released holder of a dedicated region this thread may keep (see
     * {@link #keepDedicated}) filled in the dedicated slot, if that is empty
     * (in a shared cache, else among its extra regions if there is room);
     * false otherwise. The region stays counted as in the slot. The owner
     * thread or the shared cache's lock holder, with no limit in the way
     * (see {@link Admission#admitsFreely}).
     */
    final boolean keepDedicatedFilled(Allocation holder) {
        return !flushRequested && slots.keepDedicatedFilled(holder);
    }

    /**
     * The dedicated regions parked in this cache, as {@code {count, bytes}}:
     * the slot's, in either form, and a shared cache's extra regions.
     * Exact from the owner (or the lock holder); as of a moment from others.
     */
    final long[] parkedRegions() {
        return slots.parkedRegions();
    }

    /**
     * Gives every cached entry back to the arena. Owner thread, or any thread
     * once the owner is dead; for a shared cache, the holder of its lock.
     */
    final void flush() {
        flushRequested = false;
        slots.flush();
        for (ClassStack stack : stacks) {
            if (stack != null) {
                stack.unkeep(stash::stash);
                stack.flush(arena);
            }
        }
    }

    /**
     * Flushes the cache of a thread that has died and drops its stacks, so
     * that what stays reachable (from allocations it made that are still
     * live) is only its counters. Any thread, once the owner is dead.
     */
    final void retire() {
        ownerThread = null; // dead: nothing may pass as its owner, and the cache no longer keeps it reachable
        flush();
        stacks = NO_STACKS; // a dead thread's cache keeps only its counters, while its buffers live
        stash.drop();
    }

    private void sweep() {
        operationsSinceSweep = 0;
        slots.sweep();
        for (ClassStack stack : stacks) {
            if (stack != null) {
                stack.unkeep(stash::stash); // what is kept filled is swept like the rest
                stack.sweep(arena);
            }
        }
        moveIfCrowded();
    }

    /** Whether {@code thread} is this cache's owner. */
    final boolean isOwner(Thread thread) {
        return ownerThread == thread;
    }

    /** Whether the calling thread is this cache's owner; cheaper than looking up the caller's own cache. */
    final boolean isOwnerThread() {
        return ownerThread == Thread.currentThread();
    }

    /** Whether the owning thread has died; never true of a shared cache. */
    final boolean isOwnerDead() {
        Thread thread = ownerThread;
        return thread != null && !thread.isAlive();
    }

    /**
     * Keeps a stashed holder whose allocation was just released (and
     * counted) with its memory, for this thread's next allocation of its
     * class: false, with nothing changed, when its memory is not this cache's
     * to keep that way (another arena, an uncached class, a full stack, a
     * pending flush). The caller has established that no limit and no
     * evacuation applies. The owner thread, or the shared cache's lock held.
     */
    final boolean keepFilled(Allocation holder) {
        int sizeIndex = holder.sizeIndex;
        if (sizeIndex >= stackedClasses) {
            // a cached class with no stack keeps nothing; above them, the large slot may keep it
            if (flushRequested || holder.chunk.arena != arena || !slots.keepLargeFilled(holder)) {
                return false;
            }
        } else if (flushRequested || sizeIndex < 0 || holder.chunk.arena != arena || !stack(sizeIndex).keep(holder)) {
            return false;
        } else {
            holder.kept = true;
        }
        countOperation();
        return true;
    }

    /**
     * A filled holder for {@code requested} bytes of {@code category}, taken
     * from the stack of its class and counted; null when there is none. The
     * caller has established that no limit applies (see
     * {@link Admission#admitsFreely}). The owner thread.
     */
    Allocation takeFilled(Category category, int requested) {
        return takeFilledLocked(category, requested);
    }

    /** {@link #takeFilled}: the owner thread, or the shared cache's lock held. */
    final Allocation takeFilledLocked(Category category, int requested) {
        if (requested > largestStackedRequest) {
            // above the cached sizes: the large slot's or the dedicated slot's kept holder
            Allocation holder = flushRequested ? null : slots.takeFilled(requested);
            return holder == null ? null : handOut(holder, category, requested);
        }
        if (flushRequested) {
            return null;
        }
        ClassStack stack = stacks[SizeClasses.indexOf(Math.max(1, requested))];
        Allocation holder = stack == null ? null : stack.takeKept();
        return holder == null ? null : handOut(holder, category, requested);
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
        countOperation();
        return holder;
    }
}
