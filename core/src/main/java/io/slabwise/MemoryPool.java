package io.slabwise;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
 * <p>Every platform thread that allocates or frees is bound to one arena (the
 * one with the fewest threads) and gets a thread cache in front of it; virtual
 * threads share one cache per arena that keeps nothing cached. Caches of threads
 * that have died are flushed back to their arenas when the pool next grows, on
 * {@link #trim()}, and when statistics are taken.
 *
 * <p>Accounting is exact: {@link #requestedBytes()} and {@link #reservedBytes()}
 * sum what live allocations asked for and what the pool set aside for them, and
 * {@link #committedBytes()} is the native memory taken from the chunk source.
 *
 * <h2>Lifecycle</h2>
 * A pool is open from its construction until {@link #close()}. Closing
 * refuses new allocations, stops the pool's background work, gives back at
 * once what is idle (idle chunks and blocks, spare chunks, the caches of the
 * closing thread and of dead threads), and from then on gives each chunk back
 * as soon as its last buffer is released, on whatever thread releases it.
 * Buffers still live are reported per category in the log. A pool dropped
 * without {@code close()} is reclaimed once unreachable: no thread keeps it
 * alive through its thread cache, and the native memory it still held goes
 * back to the chunk source when the garbage collector finds it.
 *
 * <p>Thread safety: all methods may be called from any thread.
 */
public final class MemoryPool implements AutoCloseable {

    /** Gives back the native memory of pools dropped without {@link #close()}. */
    private static final Cleaner CLEANER = Cleaner.create();

    private static final System.Logger LOGGER = System.getLogger(MemoryPool.class.getName());

    private final PoolConfig config;
    private final SizeClasses sizes;
    private final Arena[] arenas;
    private final ChunkSource chunkSource;
    /** The thread caches: binding, dead-thread reclamation, counter snapshots. */
    final ThreadCaches threadCaches;
    /** Every region taken from the chunk source and not given back: what a dropped pool's cleaner frees. */
    private final Set<NativeRegion> committedRegions = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    /** The caches virtual threads share, one per arena; also in the registry. */
    private final ConcurrentHashMap<String, Category> categoriesByName = new ConcurrentHashMap<>();
    /** Categories by id; replaced by a longer copy when one is added (under {@code categoriesByName}'s lock). */
    private volatile Category[] categories = new Category[0];
    private final Category defaultCategory;
    private final MemoryLimit limit;
    /** Bytes of chunks handed out whole to sequential allocators and block pools. */
    private final AtomicLong wholeChunkBytes = new AtomicLong();
    private final AtomicLong hugeCommitted = new AtomicLong();
    private final AtomicLong hugeCount = new AtomicLong();
    /** Bytes of the block regions block pools hold, in use or idle. */
    private final AtomicLong blockRegionBytes = new AtomicLong();
    /**
     * The sequential allocators and block pools made by this pool, by their
     * arguments: the same arguments give the same one, and trim and the
     * ceiling reach their idle memory.
     */
    private final ConcurrentHashMap<String, SequentialAllocator> sequentialAllocators = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, BlockPool> blockPools = new ConcurrentHashMap<>();

    /** Builds a pool from a configuration; see {@link PoolConfig#builder()}. */
    public MemoryPool(PoolConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.chunkSource = config.chunkSource();
        this.sizes = new SizeClasses(config.pageSize(), config.chunkSize());
        this.limit = new MemoryLimit(config.maxMemory());
        this.arenas = new Arena[config.arenas()];
        for (int i = 0; i < arenas.length; i++) {
            arenas[i] = new Arena(this, i, sizes, config.maxIdleChunksPerArena(), config.remoteFreeQueueCapacity());
        }
        this.threadCaches = new ThreadCaches(this, arenas, config);
        this.defaultCategory = category(Category.DEFAULT_NAME);
        for (String quotaCategory : config.quotas().keySet()) {
            category(quotaCategory);
        }
        ChunkDecay.register(this);
        CLEANER.register(this, new RegionReclaimer(committedRegions, chunkSource));
        LOGGER.log(System.Logger.Level.DEBUG, "new pool: {0}", config);
    }

    /**
     * Frees what a pool dropped without {@link #close()} still held; refers to
     * the regions and the chunk source, never to the pool.
     */
    private static final class RegionReclaimer implements Runnable {
        private final Set<NativeRegion> regions;
        private final ChunkSource source;

        RegionReclaimer(Set<NativeRegion> regions, ChunkSource source) {
            this.regions = regions;
            this.source = source;
        }

        @Override
        public void run() {
            for (NativeRegion region : regions) {
                try {
                    source.release(region);
                } catch (RuntimeException e) {
                    LOGGER.log(System.Logger.Level.WARNING, "could not give back a region of a dropped pool", e);
                }
            }
            regions.clear();
        }
    }

    /**
     * Closes the pool; idempotent, any thread. New allocations fail with
     * {@link IllegalStateException} from now on, and so do callers waiting at
     * a limit. The decay work stops; idle chunks and blocks, the sequential
     * allocators' spare and empty open chunks, the closing thread's cache and
     * the caches of dead threads go back at once. Buffers still live stay
     * valid: each release gives its memory back to the chunk source as soon
     * as its chunk holds nothing else. Other live threads' caches go back at
     * their next release into this pool, or when the thread dies and a release
     * finds it dead. Live buffers are reported per category at WARNING level.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        ChunkDecay.unregister(this);
        limit.released(); // waiting callers wake up and find the pool closed
        giveBackAfterClose();
        threadCaches.forgetOwn();
        PoolStats stats = stats();
        if (stats.liveAllocations() > 0) {
            StringBuilder live = new StringBuilder();
            for (CategoryStats category : stats.categories()) {
                if (category.liveBuffers() > 0) {
                    live.append(live.length() == 0 ? "" : ", ").append(category.name()).append(": ")
                            .append(category.liveBuffers()).append(" buffers, ")
                            .append(category.requested()).append(" bytes requested");
                }
            }
            LOGGER.log(System.Logger.Level.WARNING, "pool closed with live buffers ({0}); their memory goes back"
                    + " as they are released", live);
        }
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    /** @throws IllegalStateException when the pool is closed */
    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this pool is closed: no new allocations (" + config.chunkSource()
                    + " chunks, " + committedBytes() + " bytes still committed for live buffers)");
        }
    }

    /** Gives back everything idle now, and the caches this thread may flush: after close, at once and after each release. */
    private void giveBackAfterClose() {
        reclaimCaches();
        releaseSpecialisedIdle();
        for (Arena arena : arenas) {
            arena.trim(0, 0);
        }
    }

    /**
     * Gives back chunks idle for longer than the decay time, keeping
     * {@code minIdleChunks} of them. Called once a second by the decay thread.
     *
     * @return the number of chunks given back
     */
    int decay() {
        reclaimDeadThreadCaches();
        long decayNanos = config.idleChunkDecay().toNanos();
        int keep = config.minIdleChunks();
        int released = 0;
        for (Arena arena : arenas) {
            released += arena.trim(decayNanos, keep);
            keep = Math.max(0, keep - arena.idleChunkCount());
        }
        for (BlockPool blocks : blockPools.values()) {
            released += blocks.releaseIdleBlocks(decayNanos);
        }
        return released;
    }

    /**
     * The category with this name, created on first use. Cheap after the first
     * call for a name; any thread.
     *
     * @throws IllegalArgumentException when the name is not a valid category name
     */
    public Category category(String name) {
        Category existing = categoriesByName.get(name);
        if (existing != null) {
            return existing;
        }
        Category.checkName(name);
        synchronized (categoriesByName) {
            existing = categoriesByName.get(name);
            if (existing != null) {
                return existing;
            }
            Category[] current = categories;
            if (current.length == Category.MAX_CATEGORIES) {
                throw new IllegalStateException("a pool has at most " + Category.MAX_CATEGORIES
                        + " categories; cannot add '" + name + "' to " + categoriesByName.keySet());
            }
            Long quota = config.quotas().get(name);
            Category created = new Category(this, name, current.length, quota != null,
                    quota != null ? quota : Long.MAX_VALUE, config.categoryPolicies().get(name));
            Category[] grown = Arrays.copyOf(current, current.length + 1);
            grown[created.id] = created;
            categories = grown;
            categoriesByName.put(name, created);
            return created;
        }
    }

    /**
     * The general pool (size classes, runs, subpages, huge regions) for the
     * category with this name, created on first use.
     */
    public Allocator allocator(String categoryName) {
        return category(categoryName).allocator;
    }

    /** The general pool for a category of this pool. */
    public Allocator allocator(Category category) {
        checkCategory(category);
        return category.allocator;
    }

    /**
     * A sequential allocator (FIFO slab) for the named category, with one
     * stripe per available processor and requests up to the pool's largest.
     */
    public SequentialAllocator sequential(String categoryName) {
        return sequential(categoryName, Runtime.getRuntime().availableProcessors(), maxRequest());
    }

    /**
     * A sequential allocator (FIFO slab) for the named category. The same
     * arguments give the same allocator: the pool holds on to each one it
     * made, so that {@link #trim()} and the ceiling reach its spare chunk.
     *
     * @param stripes    how many independently locked current chunks; threads pick one by id
     * @param maxRequest the largest request it accepts; larger ones fail with {@link IllegalArgumentException}
     */
    public SequentialAllocator sequential(String categoryName, int stripes, int maxRequest) {
        SequentialAllocator.checkArguments(stripes, maxRequest); // before the category takes one of its slots
        Category category = category(categoryName);
        int largest = Math.min(maxRequest, maxRequest());
        return sequentialAllocators.computeIfAbsent(categoryName + '/' + stripes + '/' + largest,
                key -> new SequentialAllocator(this, category, stripes, largest));
    }

    /** A block pool of 1 MiB blocks (or the chunk size, if smaller) for the named category. */
    public BlockPool blocks(String categoryName) {
        return blocks(categoryName, Math.min(1 << 20, chunkSize()), Runtime.getRuntime().availableProcessors());
    }

    /**
     * A block pool for the named category. Its blocks are regions of their
     * own from the chunk source, not parts of chunks, so a free block can go
     * back to the operating system on its own; the pool keeps up to
     * {@link PoolConfig#maxIdleBlocks()} free blocks for reuse. The same
     * arguments give the same block pool: the pool holds on to each one it
     * made, so that {@link #trim()} and the ceiling reach its idle blocks.
     *
     * @param blockSize a power of two from 8 KiB to the chunk size
     * @param stripes   independently locked groups of blocks; threads pick one by id
     */
    public BlockPool blocks(String categoryName, int blockSize, int stripes) {
        BlockPool.checkArguments(chunkSize(), blockSize, stripes); // before the category takes one of its slots
        Category category = category(categoryName);
        return blockPools.computeIfAbsent(categoryName + '/' + blockSize + '/' + stripes,
                key -> new BlockPool(this, category, blockSize, stripes, config.maxIdleBlocks()));
    }

    /** The category of allocations made without one ({@value Category#DEFAULT_NAME}). */
    public Category defaultCategory() {
        return defaultCategory;
    }

    /** Every category created so far, in order of creation. */
    public List<Category> categories() {
        return List.of(categories);
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
    public boolean allocate(int requested, Allocation out) {
        return allocate(defaultCategory, requested, out);
    }

    /**
     * Allocates {@code requested} bytes for {@code category} into {@code out},
     * which must not be live. At the ceiling or the category's quota the
     * category's {@link LimitPolicy} applies.
     *
     * @return true when {@code out} was filled; false only under {@link LimitPolicy#RETURN_NULL}
     * @throws IllegalArgumentException for a negative or oversized request, or a category of another pool
     * @throws IllegalStateException    when {@code out} already holds live memory
     * @throws MemoryLimitException     at a limit under {@link LimitPolicy#FAIL}, or after a {@link LimitPolicy#WAIT} timed out
     */
    public boolean allocate(Category category, int requested, Allocation out) {
        checkCategory(category);
        return allocateInOwnCategory(category, requested, out);
    }

    /** {@link #allocate(Category, int, Allocation)} for a category known to be this pool's. */
    boolean allocateInOwnCategory(Category category, int requested, Allocation out) {
        checkOpen();
        checkRequest(requested);
        checkNotLive(out);
        int refusal = mustQueue(category) ? Attempt.QUEUED : tryAllocate(category, requested, out);
        return refusal == Attempt.DONE || atLimit(generalAttempt, category, requested, out, refusal);
    }

    /**
     * Whether an allocation in {@code category} must line up behind callers
     * already waiting instead of trying first: true, for callers that would
     * wait themselves, while someone waits for the ceiling or for this
     * category's quota, the resources this caller competes for. This keeps a
     * stream of small requests from starving a large one, and leaves callers
     * that compete for neither resource alone.
     */
    boolean mustQueue(Category category) {
        return limit.hasWaiters() && (limit.ceilingQueue.hasWaiters() || category.quotaQueue.hasWaiters())
                && policyOf(category) == LimitPolicy.WAIT && config.waitAllowed().getAsBoolean();
    }

    private LimitPolicy policyOf(Category category) {
        LimitPolicy policy = category.policy;
        return policy != null ? policy : config.limitPolicy();
    }

    /** Whether any allocation waits at the ceiling or a quota right now; one volatile read. */
    boolean hasLimitWaiters() {
        return limit.hasWaiters();
    }

    /** Allocations waiting at the ceiling or a quota right now. */
    public int waitingAllocations() {
        return limit.waiters();
    }

    /**
     * Like {@link #allocate(Category, int, Allocation)}, but returns false at a
     * limit whatever the category's policy, without waiting.
     */
    public boolean tryAllocate(Category category, int requested, Allocation out, boolean returnFalseAtLimit) {
        checkOpen();
        checkRequest(requested);
        checkCategory(category);
        checkNotLive(out);
        int refusal = tryAllocate(category, requested, out);
        if (refusal == Attempt.DONE) {
            return true;
        }
        return returnFalseAtLimit
                ? atLimit(generalAttempt, category, requested, out, refusal, LimitPolicy.RETURN_NULL)
                : atLimit(generalAttempt, category, requested, out, refusal);
    }

    static void checkNotLive(Allocation out) {
        if (out.isLive()) {
            throw new IllegalStateException("the allocation holder is still live: " + out);
        }
    }

    /** One try at the general pool: {@link Attempt#DONE}, or why it was refused. */
    int tryAllocate(Category category, int requested, Allocation out) {
        boolean huge = requested > sizes.chunkSize();
        int sizeIndex = huge ? -1 : SizeClasses.indexOf(Math.max(1, requested));
        int reserved = huge ? roundToPage(requested) : sizes.size(sizeIndex);
        if (!category.admit(reserved)) {
            return Attempt.QUOTA;
        }
        try {
            ThreadCache cache = threadCaches.current();
            if (huge) {
                allocateHuge(cache, category, requested, out);
            } else {
                cache.allocate(category, requested, sizeIndex, out);
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

    /** One try of an allocation strategy, used again and again at a limit. */
    interface Attempt {
        int DONE = 0;
        int CEILING = 1;
        int QUOTA = 2;
        /** Not tried: other callers wait at a limit, and this one lines up behind them. */
        int QUEUED = 3;

        /** Tries once; returns {@link #DONE} or why the memory was refused. */
        int tryOnce(Category category, int requested, Allocation out);
    }

    private final Attempt generalAttempt = this::tryAllocate;

    /** Thrown inside the engine when taking a region would pass the ceiling; never escapes the pool. */
    static final class CeilingReached extends RuntimeException {
        private static final long serialVersionUID = 1L;
        static final CeilingReached INSTANCE = new CeilingReached();

        private CeilingReached() {
            super("ceiling reached", null, false, false);
        }
    }

    boolean atLimit(Attempt attempt, Category category, int requested, Allocation out, int refusal) {
        return atLimit(attempt, category, requested, out, refusal, policyOf(category));
    }

    /**
     * The slow path at a limit: reclaim what can be reclaimed and try again,
     * then apply {@code policy}. Returns true when {@code out} was filled.
     */
    boolean atLimit(Attempt attempt, Category category, int requested, Allocation out, int refusal, LimitPolicy policy) {
        if (refusal == Attempt.CEILING) {
            reclaimForCeiling();
            refusal = attempt.tryOnce(category, requested, out);
            if (refusal == Attempt.DONE) {
                return true;
            }
        }
        if (policy == LimitPolicy.RETURN_NULL) {
            return false;
        }
        failIfNeverSatisfiable(category, requested);
        if (policy == LimitPolicy.FAIL || !config.waitAllowed().getAsBoolean() || config.waitTimeout().isZero()) {
            throw limitException(category, requested, refusal,
                    policy == LimitPolicy.WAIT ? " (waiting is not allowed on this thread)" : "");
        }
        long deadline = System.nanoTime() + config.waitTimeout().toNanos();
        // first come, first served among the callers waiting for the same resource: only the head retries
        MemoryLimit.WaitQueue queue = refusal == Attempt.QUOTA
                || (refusal == Attempt.QUEUED && !limit.ceilingQueue.hasWaiters()) ? category.quotaQueue : limit.ceilingQueue;
        long ticket = limit.enqueue(queue);
        try {
            if (!limit.awaitTurn(queue, ticket, deadline)) {
                throw limitException(category, requested, refusal, " after waiting " + config.waitTimeout().toMillis() + " ms");
            }
            checkOpen();
            limit.retrying(Thread.currentThread()); // its own releases (a payload's parts given back) do not wake it
            while (true) {
                long seen = limit.releaseCount();
                refusal = attempt.tryOnce(category, requested, out);
                if (refusal == Attempt.DONE) {
                    return true;
                }
                if (refusal == Attempt.CEILING) {
                    reclaimForCeiling();
                    refusal = attempt.tryOnce(category, requested, out);
                    if (refusal == Attempt.DONE) {
                        return true;
                    }
                }
                checkOpen();
                if (!limit.awaitRelease(seen, deadline)) {
                    throw limitException(category, requested, refusal, " after waiting " + config.waitTimeout().toMillis() + " ms");
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw limitException(category, requested, refusal, " (interrupted while waiting)");
        } finally {
            limit.retrying(null);
            limit.dequeue(queue, ticket);
        }
    }

    /**
     * Fails a request that no release can ever make room for, rather than
     * let it wait out its timeout: one larger than its category's quota or
     * than the ceiling.
     */
    private void failIfNeverSatisfiable(Category category, int requested) {
        if (category.tracked && requested > category.quota) {
            throw limitException(category, requested, Attempt.QUOTA,
                    " (the request is larger than the quota itself: it can never be satisfied)");
        }
        if (requested > limit.max) {
            throw limitException(category, requested, Attempt.CEILING,
                    " (the request is larger than the ceiling itself: it can never be satisfied)");
        }
    }

    /**
     * Flushes the caches of dead threads and this thread's cache into their
     * arenas, and asks every other live thread to flush its own at its next
     * operation (no thread is stopped).
     */
    private void reclaimCaches() {
        threadCaches.reclaimDead();
        threadCaches.requestFlushAll();
        ThreadCache own = threadCaches.own();
        if (own != null) {
            own.flush();
        }
    }

    /** Takes back what can be taken without stopping other threads: dead caches, this thread's cache, idle chunks. */
    private void reclaimForCeiling() {
        reclaimCaches();
        releaseSpecialisedIdle();
        for (Arena arena : arenas) {
            arena.trim(0, 0);
        }
    }

    /**
     * Gives back the sequential allocators' spare chunks (to the arenas) and
     * the block pools' idle blocks (to the OS); returns how many idle blocks.
     */
    private int releaseSpecialisedIdle() {
        int released = 0;
        for (SequentialAllocator sequential : sequentialAllocators.values()) {
            sequential.retireEmptyOpenChunks(); // open chunks with no live slice: to the spare or the arena
            sequential.releaseSpare(); // to its arena, whose trim counts it when it leaves
        }
        for (BlockPool blocks : blockPools.values()) {
            released += blocks.releaseIdleBlocks(0);
        }
        return released;
    }

    /**
     * The exception for a request refused at a limit, naming the category, the
     * request, the limit and the current usage; for callers that got false from
     * an allocation but cannot return null themselves.
     */
    public MemoryLimitException limitException(Category category, int requested) {
        boolean quota = category.tracked && category.trackedReserved.get() + reservedSizeFor(Math.max(0, requested)) > category.quota;
        return limitException(category, requested, quota ? Attempt.QUOTA : Attempt.CEILING, "");
    }

    private MemoryLimitException limitException(Category category, int requested, int refusal, String suffix) {
        ThreadCaches.Snapshot counts = counters();
        String usage = "requested=" + counts.totalRequested() + " reserved=" + counts.totalReserved()
                + " committed=" + counts.committed;
        if (refusal == Attempt.QUOTA) {
            return new MemoryLimitException(MemoryLimitException.Kind.QUOTA, category.name(), requested, category.quota,
                    "category '" + category + "' quota exceeded: request of " + requested + " bytes, quota "
                            + category.quota + " bytes, category reserved " + category.trackedReserved.get()
                            + " bytes; pool " + usage + suffix);
        }
        return new MemoryLimitException(MemoryLimitException.Kind.CEILING, category.name(), requested, limit.max,
                "memory ceiling reached: category '" + category + "' requested " + requested + " bytes, limit "
                        + limit.max + " bytes; pool " + usage + suffix);
    }

    /**
     * Changes the quota of a category at run time; the category must have been
     * given a quota when the pool was built (that is what makes its reserved
     * bytes tracked exactly). Allocations already made are kept; new ones are
     * refused while the category is over the new quota.
     *
     * @throws IllegalStateException when the category has no tracked quota
     */
    public void setQuota(String categoryName, long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("quota of '" + categoryName + "' must not be negative: " + bytes);
        }
        Category category = category(categoryName);
        if (!category.tracked) {
            throw new IllegalStateException("category '" + categoryName + "' has no quota: give it one with "
                    + "PoolConfig.Builder.quota(name, bytes) (Long.MAX_VALUE for none yet) so its reserved bytes are tracked");
        }
        category.quota = bytes;
        limit.released();
    }

    /** Changes the policy of one category at run time; null goes back to the pool's. */
    public void setPolicy(String categoryName, LimitPolicy policy) {
        category(categoryName).policy = policy;
    }

    /** The ceiling on committed bytes; {@link Long#MAX_VALUE} when there is none. */
    public long maxMemory() {
        return limit.max;
    }

    private void checkCategory(Category category) {
        Category[] known = categories;
        if (category.id >= known.length || known[category.id] != category) {
            throw new IllegalArgumentException("category " + category + " belongs to another pool");
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
        Category category = allocation.category;
        int reserved = allocation.reserved;
        ThreadCache owner = allocation.owner;
        Releaser releaser = allocation.releaser;
        boolean onOwnerThread = owner.isOwnerThread();
        owner.countRelease(category, allocation.requested, reserved, releaser != null, onOwnerThread);
        if (releaser != null) {
            releaser.release(allocation);
            allocation.clear();
        } else {
            long handle = allocation.handle;
            int sizeIndex = allocation.sizeIndex;
            allocation.clear();
            if (chunk.huge) {
                freeHuge(chunk);
            } else if (closed) {
                chunk.arena.free(chunk, handle); // a closed pool caches nothing
            } else if (limit.hasWaiters()) {
                chunk.arena.free(chunk, handle); // someone waits for memory: do not keep it in this thread's cache
            } else {
                // the allocating thread releasing is the common case: its cache is at hand without a thread-local look-up
                (onOwnerThread ? owner : threadCaches.current()).free(chunk, handle, sizeIndex);
            }
        }
        // read again now that the memory is back: a caller that began to wait after the read above
        // may already have failed its try, and must be woken by this release
        if (category.release(reserved) || limit.hasWaiters()) {
            limit.released();
        }
        if (closed) {
            giveBackAfterClose();
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
        if (allocation.releaser != null) {
            if (!allocation.releaser.resizeInPlace(allocation, newRequested)) {
                return false;
            }
            countResize(allocation, newRequested);
            return true;
        }
        boolean sameClass = allocation.chunk.huge
                ? roundToPage(Math.max(newRequested, sizes.chunkSize() + 1)) == allocation.reserved
                : SizeClasses.indexOf(Math.max(1, newRequested)) == allocation.sizeIndex;
        if (!sameClass) {
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
     * Takes a whole chunk (an idle one if an arena has it) for a specialised
     * allocator. The chunk counts as committed but not as requested or reserved:
     * the specialised allocator accounts what it carves from it.
     *
     * @throws CeilingReached when a new chunk would pass the ceiling
     */
    void acquireChunk(Allocation out) {
        ThreadCache cache = threadCaches.current();
        cache.arena.allocate(sizes.count() - 1, out);
        out.sizeIndex = sizes.count() - 1;
        out.offset = 0;
        out.address = out.chunk.region.address();
        out.requested = 0;
        out.reserved = 0;
        wholeChunkBytes.addAndGet(sizes.chunkSize());
    }

    /** Gives back a chunk taken with {@link #acquireChunk}. */
    void releaseChunk(Allocation chunk) {
        wholeChunkBytes.addAndGet(-sizes.chunkSize());
        chunk.chunk.arena.free(chunk.chunk, chunk.handle);
        chunk.clear();
    }

    /**
     * Takes a region of {@code size} bytes from the chunk source for a block
     * pool: committed (and held to the ceiling) like a chunk, with no page
     * structure.
     *
     * @throws CeilingReached when that would pass the ceiling
     */
    void acquireBlockRegion(int size, Allocation out) {
        Chunk region = new Chunk(threadCaches.current().arena, commit(size));
        blockRegionBytes.addAndGet(size);
        wholeChunkBytes.addAndGet(size);
        out.chunk = region;
        out.handle = 0;
        out.sizeIndex = -1;
        out.offset = 0;
        out.address = region.region.address();
        out.requested = 0;
        out.reserved = 0;
    }

    /** Gives back a region taken with {@link #acquireBlockRegion}. */
    void releaseBlockRegion(Allocation region) {
        int size = region.chunk.chunkSize();
        blockRegionBytes.addAndGet(-size);
        wholeChunkBytes.addAndGet(-size);
        decommit(region.chunk.region);
        region.clear();
    }

    /**
     * Counts an allocation made by a specialised allocator on the calling
     * thread, carved from one of its whole chunks or blocks.
     */
    void countAllocation(Category category, int requested, int reserved, Allocation out) {
        threadCaches.current().countAllocation(category, requested, reserved, true, out);
    }

    SizeClasses sizes() {
        return sizes;
    }

    private void allocateHuge(ThreadCache cache, Category category, int requested, Allocation out) {
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
        out.category = category;
        out.requested = requested;
        out.reserved = size;
        cache.countAllocation(category, requested, size, false, out);
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

    /**
     * Takes {@code size} bytes from the chunk source.
     *
     * @throws CeilingReached when that would pass the ceiling
     */
    NativeRegion commit(int size) {
        if (!limit.tryCommit(size)) {
            throw CeilingReached.INSTANCE;
        }
        NativeRegion region;
        try {
            region = chunkSource.allocate(size);
        } catch (RuntimeException | Error e) {
            limit.uncommit(size);
            throw e;
        }
        if (region.size() != size) {
            chunkSource.release(region);
            limit.uncommit(size);
            throw new IllegalStateException("chunk source returned " + region.size() + " bytes for " + size);
        }
        committedRegions.add(region);
        return region;
    }

    void decommit(NativeRegion region) {
        committedRegions.remove(region);
        chunkSource.release(region);
        limit.uncommit(region.size());
    }

    /** Caches of platform threads registered now; for tests. */
    int platformThreadCaches() {
        return threadCaches.platformCaches();
    }

    /** Flushes the caches of threads that have died back into their arenas; returns how many. */
    int reclaimDeadThreadCaches() {
        return threadCaches.reclaimDead();
    }

    /**
     * Gives back what is idle now: caches of dead threads are flushed, live
     * threads are asked to flush their caches at their next operation, this
     * thread's cache is flushed at once, the sequential allocators' spare
     * chunks and the block pools' idle blocks are given back, and idle chunks
     * go back to the chunk source, all but the configured {@code minIdleChunks}.
     *
     * @return the number of chunks and idle blocks given back to the operating system
     */
    public int trim() {
        reclaimCaches();
        int released = releaseSpecialisedIdle();
        int keep = config.minIdleChunks();
        for (Arena arena : arenas) {
            released += arena.trim(0, keep);
            keep = Math.max(0, keep - arena.idleChunkCount());
        }
        return released;
    }

    /** Bytes live allocations asked for. */
    public long requestedBytes() {
        return counters().totalRequested();
    }

    /** Bytes set aside for live allocations (their size classes). */
    public long reservedBytes() {
        return counters().totalReserved();
    }

    /** Native memory currently taken from the chunk source. */
    public long committedBytes() {
        return limit.committed();
    }

    /** Every thread's counters, read without stopping any thread (see {@link ThreadCounters}). */
    private ThreadCaches.Snapshot counters() {
        return threadCaches.snapshot(categories.length, limit::committed);
    }

    /**
     * A snapshot of the pool's accounting and its chunks. Taken without
     * stopping any allocating or releasing thread; while they run, a figure
     * may miss what changed during the read, but requested &lt;= reserved &lt;=
     * committed always holds, and with no traffic the figures are exact.
     */
    public PoolStats stats() {
        threadCaches.reclaimDead();
        ArenaSnapshot[] arenaSnapshots = new ArenaSnapshot[arenas.length];
        for (int i = 0; i < arenas.length; i++) {
            arenaSnapshots[i] = arenas[i].snapshot();
        }
        Category[] known = categories;
        ThreadCaches.Snapshot counts = threadCaches.snapshot(known.length, limit::committed);
        List<CategoryStats> perCategory = new ArrayList<>(known.length);
        for (Category category : known) {
            int id = category.id;
            long reserved = counts.reserved(id);
            long peak = category.peakReservedSeen.accumulateAndGet(reserved, Math::max);
            perCategory.add(new CategoryStats(category.name(), counts.requested(id), reserved,
                    counts.allocations(id), counts.releases(id), peak));
        }
        return new PoolStats(counts.totalRequested(), counts.totalReserved(), counts.committed,
                hugeCommitted.get(), hugeCount.get(), blockRegionBytes.get(),
                counts.totalAllocations(), counts.totalReleases(), sizes.chunkSize(), arenaSnapshots, perCategory,
                ResidentMemory.bytes(), Math.max(0, wholeChunkBytes.get() - counts.totalCarved()));
    }

    @Override
    public String toString() {
        return stats().summary();
    }
}
