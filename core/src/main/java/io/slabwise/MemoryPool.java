package io.slabwise;

import java.lang.ref.Cleaner;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The memory engine's public front: a pool of native memory carved from
 * fixed-size chunks into runs and subpages, with per-thread caches and exact
 * accounting. It has no Netty dependency; {@code io.slabwise.netty} builds
 * Netty buffers on top of it.
 *
 * <pre>
 *  allocate(n) ─▶ n &gt; dedicatedAbove? ─yes─▶ a dedicated region: an idle one that fits, or a new one
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
 * <h2>Parts</h2>
 * This class routes; each job has a part of its own, and each engine class
 * depends only on the part it uses:
 * <table>
 *   <caption>The parts of a pool</caption>
 *   <tr><th>part</th><th>its job</th></tr>
 *   <tr><td>{@link GeneralPool}</td><td>the drop-in hot path: allocate, free, resize, dedicated regions</td></tr>
 *   <tr><td>{@link Admission}</td><td>open or closed, policies, quotas, the wait at a limit</td></tr>
 *   <tr><td>{@link CommittedMemory}</td><td>regions taken from and given back to the chunk source, the ceiling</td></tr>
 *   <tr><td>{@link ThreadCaches}</td><td>per-thread caches, arena binding, dead threads, counter snapshots</td></tr>
 *   <tr><td>{@link IdleMemory}</td><td>decay, trim, reclaiming at the ceiling and after close</td></tr>
 *   <tr><td>{@link WholeChunks}</td><td>what the sequential allocators and block pools take from the pool</td></tr>
 *   <tr><td>{@link Compaction}, {@link Pressure}</td><td>emptying sparse chunks through relocators; asking shrinkers for memory</td></tr>
 *   <tr><td>{@link Arena}s</td><td>carving chunks into runs and subpages</td></tr>
 * </table>
 *
 * <p>Thread safety: all methods may be called from any thread.
 */
public final class MemoryPool implements AutoCloseable {

    private static final System.Logger LOGGER = System.getLogger(MemoryPool.class.getName());
    /** Gives back the native memory of pools dropped without {@link #close()}. */
    private static final Cleaner CLEANER = Cleaner.create();
    /** How often idle memory is checked for decay. */
    private static final Duration DECAY_PERIOD = Duration.ofSeconds(1);
    /** The shortest time between two compactions made by allocations refused at the ceiling. */
    private static final long CEILING_COMPACTION_GAP = Duration.ofMillis(100).toNanos();

    private final PoolConfig config;
    private final SizeClasses sizes;
    private final DedicatedRegions dedicated;
    private final Arena[] arenas;
    private final CommittedMemory committed;
    private final Admission admission;
    /** The thread caches: binding, dead-thread reclamation, counter snapshots. */
    final ThreadCaches threadCaches;
    private final IdleMemory idle;
    private final WholeChunks wholeChunks;
    private final Scheduler.Cancellable decayTask;
    private final ConcurrentHashMap<String, Category> categoriesByName = new ConcurrentHashMap<>();
    /** Categories by id; replaced by a longer copy when one is added (under {@code categoriesByName}'s lock). */
    private volatile Category[] categories = new Category[0];
    private final Category defaultCategory;
    /**
     * The sequential allocators and block pools made by this pool, by their
     * arguments: the same arguments give the same one, and trim and the
     * ceiling reach their idle memory.
     */
    private final ConcurrentHashMap<String, SequentialAllocator> sequentialAllocators = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, BlockPool> blockPools = new ConcurrentHashMap<>();
    /** The drop-in hot path: allocate, free, resize, dedicated regions. */
    private final GeneralPool general;
    /** Chooses and marks the chunks to empty; the owners' relocators move what lives in them. */
    private final Compaction compaction;
    /** Asks the caches' shrinkers for memory above the high watermark and at the limits. */
    private final Pressure pressure;
    /** The background check of {@link #pressure}, scheduled with the first shrinker; null before. */
    private volatile Scheduler.Cancellable pressureTask;
    /** When the last compaction at the ceiling started, in ticker nanoseconds; they are at most one per {@link #CEILING_COMPACTION_GAP}. */
    private final AtomicLong lastCeilingCompaction = new AtomicLong(Long.MIN_VALUE);

    /** Builds a pool from a configuration; see {@link PoolConfig#builder()}. */
    public MemoryPool(PoolConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.sizes = new SizeClasses(config.pageSize(), config.chunkSize());
        // above what thread caches keep by class (and above 8 pages, where every class is a run),
        // a run fits the request to whole pages instead of its class: up to 12.5% less reserved
        int fittedAbove = Math.min(config.chunkSize(), Math.max(8 * config.pageSize(),
                config.maxCachedSize() <= 0 ? 0 : sizes.size(SizeClasses.indexOf(Math.min(config.maxCachedSize(), config.chunkSize())))));
        int dedicatedAbove = Math.min(config.chunkSize(), Math.max(fittedAbove, config.dedicatedAbove()));
        MemoryLimit limit = new MemoryLimit(config.maxMemory(), config.ticker());
        this.committed = new CommittedMemory(config.chunkSource(), limit);
        this.dedicated = new DedicatedRegions(committed, config.ticker(), config.chunkSize());
        this.arenas = new Arena[config.arenas()];
        for (int i = 0; i < arenas.length; i++) {
            arenas[i] = new Arena(committed, i, sizes, config.firstChunkSize(), config.maxIdleChunksPerArena(), config.remoteFreeQueueCapacity(),
                    config.ticker());
        }
        this.threadCaches = new ThreadCaches(limit, arenas, config, dedicated, fittedAbove, dedicatedAbove,
                this::isClosed);
        this.idle = new IdleMemory(arenas, threadCaches, committed, dedicated, config, sequentialAllocators.values(),
                blockPools.values());
        this.pressure = new Pressure(config.pressure(), limit, config.ticker(), idle, config.chunkSize());
        this.admission = new Admission(config, limit, pressure, this::reclaimForCeiling, this::counters);
        this.general = new GeneralPool(sizes, fittedAbove, dedicatedAbove, config.pageSize(), dedicated, threadCaches,
                admission, idle, committed);
        this.wholeChunks = new WholeChunks(threadCaches, committed, sizes, general.attempt, general::free);
        this.compaction = new Compaction(arenas, sequentialAllocators.values(), blockPools.values(), threadCaches,
                admission, (arena, c, requested, out) -> general.tryGeneral(c, requested, out, arena), general::free, this::counters,
                limit, committed, sizes.chunkSize(), config.ticker());
        this.defaultCategory = category(Category.DEFAULT_NAME);
        for (String quotaCategory : config.quotas().keySet()) {
            category(quotaCategory);
        }
        for (String floorCategory : config.pressure().floors().keySet()) {
            category(floorCategory);
        }
        CLEANER.register(this, committed.reclaimerOnCollection());
        this.decayTask = PoolTask.repeat(this, DECAY_PERIOD, MemoryPool::decay);
        LOGGER.log(System.Logger.Level.DEBUG, "new pool: {0}", config);
    }

    /**
     * Periodic work of a pool (the decay, the pressure check) on its
     * scheduler; holds the pool weakly, so a pool nobody uses can be
     * collected, and then cancels itself.
     */
    private static final class PoolTask implements Runnable {
        private final WeakReference<MemoryPool> pool;
        private final Consumer<MemoryPool> work;
        private volatile Scheduler.Cancellable handle;

        private PoolTask(MemoryPool pool, Consumer<MemoryPool> work) {
            this.pool = new WeakReference<>(pool);
            this.work = work;
        }

        /** Runs {@code work} on {@code pool} every {@code period} on the pool's scheduler while the pool lives. */
        static Scheduler.Cancellable repeat(MemoryPool pool, Duration period, Consumer<MemoryPool> work) {
            PoolTask task = new PoolTask(pool, work);
            Scheduler.Cancellable scheduled = pool.config.scheduler().repeat(task, period);
            task.handle = scheduled;
            return scheduled;
        }

        @Override
        public void run() {
            MemoryPool live = pool.get();
            if (live != null) {
                work.accept(live);
            } else if (handle != null) {
                handle.cancel();
            }
        }
    }

    /**
     * Closes the pool; idempotent, any thread. New allocations fail with
     * {@link IllegalStateException} from now on, and so do callers waiting at
     * a limit and allocations under way that have yet to commit a new region
     * (their region goes back at once). Idle chunks and blocks, the sequential
     * allocators' spare and empty open chunks, the closing thread's cache and
     * the caches of dead threads go back at once. Buffers still live stay
     * valid: each release gives its memory back to the chunk source as soon
     * as its chunk holds nothing else. Other live threads' caches go back at
     * their next release into this pool, or within a decay period of the
     * thread's end: the decay work runs on until nothing is committed, giving
     * back everything idle each time. Live buffers are reported per category
     * at WARNING level.
     */
    @Override
    public void close() {
        if (!admission.close()) {
            return;
        }
        Scheduler.Cancellable pressureCheck = pressureTask;
        if (pressureCheck != null) {
            pressureCheck.cancel();
        }
        committed.close(); // before committed() is read below: nothing is committed after that read
        dedicated.close();
        idle.reclaimAll(true);
        threadCaches.forgetOwn();
        if (committed.committed() == 0) {
            decayTask.cancel(); // else it runs on, giving back what threads alive at close held once they end (see decay)
        }
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
        return admission.isClosed();
    }

    /**
     * Gives back chunks and blocks idle for longer than the decay time, keeping
     * {@code minIdleChunks} chunks. Called once a second on the pool's scheduler.
     *
     * @return the number of chunks and blocks given back
     */
    int decay() {
        if (admission.isClosed()) {
            // closed: nothing stays idle, so what the caches of threads that ended after close() held (flushed into
            // their arenas by the reclaim of dead threads) goes back too; the task stops once nothing is committed
            idle.reclaimAll(true);
            if (committed.committed() == 0) {
                decayTask.cancel();
            }
            return 0;
        }
        int given = idle.decay();
        long budget = config.compactionBytesPerSecond();
        if (budget > 0) {
            compaction.compact(Compaction.DEFAULT_MAX_OCCUPANCY, budget * DECAY_PERIOD.toSeconds(), false, "background");
        }
        return given;
    }

    /**
     * Before an allocation is refused at the ceiling: idle memory goes back,
     * and (at most once every 100 ms, never waiting for a compaction under
     * way) relocatable entries move out of sparse chunks so that those go
     * back too.
     */
    private void reclaimForCeiling() {
        idle.reclaimAll(false);
        if (compaction.hasRelocators()) {
            long now = config.ticker().read();
            long last = lastCeilingCompaction.get();
            if ((last == Long.MIN_VALUE || now - last >= CEILING_COMPACTION_GAP) && lastCeilingCompaction.compareAndSet(last, now)) {
                compaction.compact(Compaction.DEFAULT_MAX_OCCUPANCY, Long.MAX_VALUE, false, "ceiling");
            }
        }
    }

    /**
     * Registers the {@link Relocator} of a category: the owner of its
     * entries, which moves them when a compaction asks. With null, removes
     * it; the category's memory then never moves again, and removing the
     * last one opens the chunks left closed to new memory for readers of
     * moved entries (see {@link Evacuation#heldByReaders(Allocation)}). Only
     * entries of a category with a relocator are ever moved, and only by
     * that relocator.
     * While any category has one, the last chunk under the ceiling (when the
     * ceiling holds at least four chunks) is kept for compactions' moves:
     * other allocations are refused a chunk earlier, so that a compaction at
     * the ceiling always has room to move into.
     *
     * @return the relocator it replaced, or null
     * @throws IllegalArgumentException for a category of another pool
     */
    public Relocator setRelocator(String categoryName, Relocator relocator) {
        return compaction.setRelocator(category(categoryName), relocator);
    }

    /**
     * Registers the {@link Shrinker} of a category: the owner of a cache that
     * can drop entries, which frees memory when the pool asks. With null,
     * removes it. Shrinkers are asked only in a pool with a ceiling and with
     * pressure on (see {@link PressureConfig}): in the background while
     * committed memory is above the high watermark, and before an allocation
     * is refused or made to wait at the ceiling or its category's quota. The
     * first shrinker starts the background check on the pool's scheduler.
     *
     * @return the shrinker it replaced, or null
     * @throws IllegalStateException when the pool is closed
     */
    public Shrinker setShrinker(String categoryName, Shrinker shrinker) {
        admission.checkOpen();
        Shrinker previous = pressure.set(category(categoryName), shrinker);
        if (shrinker != null && pressureTask == null && pressure.active() && config.pressure().background()) {
            synchronized (pressure) {
                if (pressureTask == null) {
                    pressureTask = PoolTask.repeat(this, config.pressure().checkPeriod(), MemoryPool::pressureTick);
                }
            }
        }
        return previous;
    }

    /** One background pressure check; none once the pool is closed. */
    private void pressureTick() {
        if (!admission.isClosed()) {
            pressure.background(compaction);
        }
    }

    /** What memory pressure has done so far: shrinkers asked and answers, watermark crossings, allocations that shrank. */
    public PressureStats pressureStats() {
        return pressure.stats();
    }

    /**
     * Compacts with the defaults: chunks at most half used, no limit on the
     * bytes moved. See {@link #compact(double, long)}.
     */
    public CompactionStats compact() {
        return compact(Compaction.DEFAULT_MAX_OCCUPANCY, Long.MAX_VALUE);
    }

    /**
     * Empties sparsely used chunks by having the owners of the entries in them
     * move those entries elsewhere, so that the chunks go back to the
     * operating system. Chosen, least used first while their bytes in use fit
     * {@code maxBytesToMove}: general-pool chunks, sequential allocators'
     * pinned chunks and block pools' cut blocks whose bytes in use are at most
     * {@code maxOccupancy} of their size, of categories with a
     * {@link Relocator} (general-pool chunks hold every category; only the
     * relocatable entries in them move). Each relocator is called once, on
     * this thread. A chunk whose entries all moved goes back at once, or,
     * when readers still hold old memory, as soon as the last of them
     * releases it. Entries of other categories never move. Waits for a
     * compaction under way; returns {@link CompactionStats#NONE} when called
     * from a relocator, or when no category has a relocator.
     *
     * @param maxOccupancy   chunks used at most this much are emptied: from 0 to under 1
     * @param maxBytesToMove the budget: bytes in use of the chunks chosen, and bytes the owners may move
     * @return what this compaction did
     * @throws IllegalArgumentException for an occupancy out of range or a negative budget
     * @throws IllegalStateException    when a relocator threw (the others still ran; every chunk is unmarked)
     */
    public CompactionStats compact(double maxOccupancy, long maxBytesToMove) {
        admission.checkOpen();
        return compaction.compact(maxOccupancy, maxBytesToMove, true, "compact");
    }

    /** Every compaction of this pool so far, added up: explicit, background and at the ceiling. */
    public CompactionStats compactionTotals() {
        return compaction.totals();
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
            Category created = new Category(this, general, name, current.length, config.tracks(name),
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
     * stripe per available processor (at most 1024) and requests up to the pool's largest.
     */
    public SequentialAllocator sequential(String categoryName) {
        return sequential(categoryName, Math.min(SequentialAllocator.MAX_STRIPES, Runtime.getRuntime().availableProcessors()),
                maxRequest());
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
                key -> new SequentialAllocator(admission, wholeChunks, category, stripes, largest));
    }

    /**
     * A block pool of 1 MiB blocks (or the chunk size, if smaller) for the
     * named category, with one stripe per available processor (at most 1024).
     */
    public BlockPool blocks(String categoryName) {
        return blocks(categoryName, Math.min(1 << 20, chunkSize()),
                Math.min(BlockPool.MAX_STRIPES, Runtime.getRuntime().availableProcessors()));
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
                key -> new BlockPool(admission, wholeChunks, config.ticker(), category, blockSize, stripes,
                        config.maxIdleBlocks()));
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

    /**
     * The size one request of {@code requested} bytes reserves: its size
     * class up to the largest size thread caches keep (64 KiB by default, and
     * never less than 8 pages), whole pages above (a run fitted to the
     * request, so a 65 KiB request reserves 72 KiB with 8 KiB pages, not its
     * class's 80 KiB), and whole pages of a region of its own above the dedicated threshold
     * ({@link PoolConfig#dedicatedAbove()}, 512 KiB by default). An idle region
     * reused for such a request may be larger by up to an eighth; the request
     * then reserves all of it.
     */
    public int reservedSizeFor(int requested) {
        return general.reservedSizeFor(requested);
    }

    /**
     * Allocates {@code requested} bytes into {@code out}, which must not be live.
     *
     * @param requested bytes asked for, 0 to {@link Integer#MAX_VALUE} rounded down to a page
     * @throws IllegalArgumentException for a negative or oversized request
     * @throws IllegalStateException    when {@code out} already holds live memory, or the pool is closed
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
     * @throws IllegalStateException    when {@code out} already holds live memory, or the pool is closed
     * @throws MemoryLimitException     at a limit under {@link LimitPolicy#FAIL}, or after a {@link LimitPolicy#WAIT} timed out
     */
    public boolean allocate(Category category, int requested, Allocation out) {
        checkCategory(category);
        return general.allocate(category, requested, out);
    }

    /** Allocations waiting at the ceiling or a quota right now. */
    public int waitingAllocations() {
        return admission.waiters();
    }

    /** Refusals and waits at the ceiling and the quotas since the pool was built, per category; any thread. */
    public LimitStats limitStats() {
        return admission.limitStats(categories);
    }

    /**
     * With {@code returnFalseAtLimit}, a try-allocate: like
     * {@link #allocate(Category, int, Allocation)}, but it never waits, and
     * returns false at a limit whatever the category's policy. Without, it is
     * {@code allocate}: the category's policy applies, a
     * {@link LimitPolicy#WAIT} included.
     */
    public boolean tryAllocate(Category category, int requested, Allocation out, boolean returnFalseAtLimit) {
        checkCategory(category);
        return general.tryAllocate(category, requested, out, returnFalseAtLimit);
    }


    /**
     * For the Netty adapter (through {@code io.slabwise.internal.EngineAccess}):
     * an allocation in a holder from the calling thread's stash, whose buffer
     * never shows it to anyone; see {@link GeneralPool#allocateStashed}.
     *
     * @return the filled holder, or null when refused at a limit without an exception
     */
    Allocation allocateStashed(Category category, int requested, boolean returnNullAtLimit) {
        checkCategory(category);
        return general.allocateStashed(category, requested, returnNullAtLimit);
    }

    static void checkNotLive(Allocation out) {
        if (out.isLive()) {
            throw new IllegalStateException("the allocation holder is still live: " + out);
        }
    }

    /**
     * The exception for a request refused at a limit, naming the category, the
     * request, the limit and the current usage; for callers that got false from
     * an allocation but cannot return null themselves.
     */
    public MemoryLimitException limitException(Category category, int requested) {
        return general.limitException(category, requested);
    }

    /**
     * Changes the quota of a category at run time; the category must have been
     * given a quota when the pool was built (that is what makes its reserved
     * bytes tracked exactly). Allocations already made are kept; new ones are
     * refused while the category is over the new quota. Callers waiting under
     * {@link LimitPolicy#WAIT} try again; one whose request reserves more
     * than the new quota fails at once as never satisfiable, rather than
     * wait out its timeout.
     *
     * @throws IllegalStateException when the category has no tracked quota
     */
    public void setQuota(String categoryName, long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("quota of '" + categoryName + "' must not be negative: " + bytes);
        }
        Category category = categoriesByName.get(Category.checkName(categoryName));
        if (category == null) { // a category with a quota exists from the start: do not add one only to refuse it
            throw new IllegalStateException("category '" + categoryName + "' has no quota: give it one with "
                    + "PoolConfig.Builder.quota(name, bytes) (Long.MAX_VALUE for none yet) so its reserved bytes are tracked");
        }
        admission.setQuota(category, bytes);
    }

    /** Changes the policy of one category at run time; null goes back to the pool's. */
    public void setPolicy(String categoryName, LimitPolicy policy) {
        category(categoryName).policy = policy;
    }

    /** The ceiling on committed bytes; {@link Long#MAX_VALUE} when there is none. */
    public long maxMemory() {
        return admission.maxMemory();
    }

    private void checkCategory(Category category) {
        Category[] known = categories;
        if (category.id >= known.length || known[category.id] != category) {
            throw new IllegalArgumentException("category " + category + " belongs to another pool");
        }
    }

    /**
     * Gives memory back. {@code allocation} is cleared and may be reused; a
     * holder from a thread's stash ({@link #allocateStashed}) freed on the
     * thread that allocated it goes back to that stash. A holder is freed by
     * one thread at a time, like any use of it (see {@link Allocation}): a
     * second free after the first is refused, but two racing frees of one
     * holder are not detected and may hand its memory to two buffers. The
     * Netty adapter's buffers serialise their releases through their
     * reference count, so a double release there always throws.
     *
     * @throws IllegalStateException when it holds no live memory (a double free)
     */
    public void free(Allocation allocation) {
        general.free(allocation);
    }

    /**
     * Records that a live allocation now stands for {@code newRequested} bytes
     * without moving; allowed only while the new size reserves just as much (see {@link #reservedSizeFor}).
     *
     * @return true when the allocation was resized in place, false when it must move
     */
    public boolean resizeInPlace(Allocation allocation, int newRequested) {
        return general.resizeInPlace(allocation, newRequested);
    }

    SizeClasses sizes() {
        return sizes;
    }

    /** Whether any allocation waits at the ceiling or a quota right now; one volatile read. */
    boolean hasLimitWaiters() {
        return admission.hasWaiters();
    }

    /** The largest request the pool serves. */
    public int maxRequest() {
        return general.maxRequest();
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
     * thread's cache is flushed at once, the sequential allocators' spare and
     * empty open chunks and the block pools' idle blocks are given back, and
     * idle chunks go back to the chunk source, all but the configured
     * {@code minIdleChunks}.
     *
     * @return the number of chunks and idle blocks given back to the operating system
     */
    public int trim() {
        return idle.trim();
    }

    /** Native heap trims this pool asked for that were made (see {@link NativeHeap}); for tests. */
    long nativeHeapTrims() {
        return idle.nativeHeapTrims();
    }

    /** Bytes live allocations asked for. */
    public long requestedBytes() {
        threadCaches.reclaimDeadIfAny();
        return counters().totalRequested();
    }

    /** Bytes set aside for live allocations (their size classes). */
    public long reservedBytes() {
        threadCaches.reclaimDeadIfAny();
        return counters().totalReserved();
    }

    /**
     * Native memory currently taken from the chunk source. Caches of threads
     * that have died are given back to their arenas first (the scan for them
     * allocates nothing when there are none), so the figure never counts
     * memory only a dead thread's cache held; the decay thread does the same
     * about once a second.
     */
    public long committedBytes() {
        threadCaches.reclaimDeadIfAny();
        return committed.committed();
    }

    /** Every thread's counters, read without stopping any thread (see {@link ThreadCounters}). */
    private ThreadCaches.Snapshot counters() {
        return threadCaches.snapshot(categories.length, committed::committed);
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
        ThreadCaches.Snapshot counts = threadCaches.snapshot(known.length, committed::committed);
        List<CategoryStats> perCategory = new ArrayList<>(known.length);
        for (Category category : known) {
            int id = category.id;
            long reserved = counts.reserved(id);
            long peak = category.peakReservedSeen.accumulateAndGet(reserved, Math::max);
            perCategory.add(new CategoryStats(category.name(), counts.requested(id), reserved,
                    counts.allocations(id), counts.releases(id), peak));
        }
        long[] parked = threadCaches.parkedDedicated();
        return new PoolStats(counts, committed.figures(dedicated.idleBytes(), parked[0], parked[1]), arenaSnapshots,
                perCategory, sizes.chunkSize(), ResidentMemory.bytes());
    }

    /**
     * For every pooled chunk, arena by arena and oldest first, the percentage
     * of its bytes handed out, rounded down but at least 1 when anything is
     * handed out (0 means nothing is). Walks every chunk, each arena under its
     * lock: for an operator's look at a pool, not for a periodic reader, which
     * {@link PoolStats#chunksByOccupancy()} serves at a cost independent of
     * the pool's size.
     */
    public int[] chunkUsePercent() {
        int[][] perArena = new int[arenas.length][];
        int total = 0;
        for (int i = 0; i < arenas.length; i++) {
            perArena[i] = arenas[i].chunkUsePercent();
            total += perArena[i].length;
        }
        int[] all = new int[total];
        int at = 0;
        for (int[] percents : perArena) {
            System.arraycopy(percents, 0, all, at, percents.length);
            at += percents.length;
        }
        return all;
    }

    /**
     * {@link PoolStats#report()} followed by a map of every chunk, one line
     * per arena and one character per chunk, oldest first: {@code .} idle,
     * {@code 1}-{@code 9} the tens of percent in use, {@code #} full. Walks
     * every chunk, as {@link #chunkUsePercent()} does: for operators.
     */
    public String report() {
        StringBuilder sb = new StringBuilder(stats().report());
        for (Arena arena : arenas) {
            sb.append(String.format(Locale.ROOT, "  arena %2d chunk map [", arena.index));
            for (int percent : arena.chunkUsePercent()) {
                sb.append(PoolStats.occupancyChar(percent));
            }
            sb.append("]\n");
        }
        pressure.report(sb);
        return sb.toString();
    }

    @Override
    public String toString() {
        return stats().summary();
    }
}
