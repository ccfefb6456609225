package io.slabwise;

import java.lang.ref.Cleaner;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A pool of native memory: fixed-size chunks carved into runs and subpages,
 * with per-thread caches and exact accounting per {@link Category}, the
 * cache allocators ({@link #sequential}, {@link #blocks}), limits, compaction
 * and memory pressure. No Netty here; {@code io.slabwise.netty} builds Netty
 * buffers on it. Requests above {@link PoolConfig#dedicatedAbove()} get a
 * region of their own; the others are served by the calling thread's cache,
 * else its arena, else a new chunk.
 *
 * <p>Accounting is exact: {@link #requestedBytes()} and {@link #reservedBytes()}
 * sum what live allocations asked for and what the pool set aside for them,
 * and {@link #committedBytes()} is the native memory taken from the chunk
 * source.
 *
 * <p>A pool is open from its construction until {@link #close()}. A pool
 * dropped without {@code close()} is reclaimed once unreachable: no thread
 * keeps it alive through its thread cache, and the native memory it held
 * goes back to the chunk source when the garbage collector finds it.
 *
 * <p>This class is the API and wires the parts; every call goes to the part
 * whose job it is (see the package documentation), and no engine logic is
 * here. All methods may be called from any thread.
 */
public final class MemoryPool implements AutoCloseable {

    private static final System.Logger LOGGER = System.getLogger(MemoryPool.class.getName());
    /** Gives back the native memory of pools dropped without {@link #close()}. */
    private static final Cleaner CLEANER = Cleaner.create();

    private final PoolConfig config;
    // the parts, package-private for the engine's tests
    final CommittedMemory committed;
    final Arena[] arenas;
    final Admission admission;
    final Categories categories;
    final ThreadCaches threadCaches;
    final IdleMemory idle;
    private final WholeChunks wholeChunks;
    private final Upkeep upkeep;
    private final Statistics statistics;
    /**
     * The sequential allocators and block pools made by this pool, by their
     * arguments: the same arguments give the same one, and trim and the
     * ceiling reach their idle memory.
     */
    private final ConcurrentHashMap<String, SequentialAllocator> sequentialAllocators = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, BlockPool> blockPools = new ConcurrentHashMap<>();
    final GeneralPool general;
    final Compaction compaction;
    final Pressure pressure;

    /** Builds a pool from a configuration; see {@link PoolConfig#builder()}. Wires the parts, each given the parts it uses. */
    public MemoryPool(PoolConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        SizeClasses sizes = new SizeClasses(config.pageSize(), config.chunkSize());
        // above what thread caches keep by class (and above 8 pages, where every class is a run),
        // a run fits the request to whole pages instead of its class: up to 12.5% less reserved
        int fittedAbove = Math.min(config.chunkSize(), Math.max(8 * config.pageSize(),
                config.maxCachedSize() <= 0 ? 0 : sizes.size(SizeClasses.indexOf(Math.min(config.maxCachedSize(), config.chunkSize())))));
        int dedicatedAbove = Math.min(config.chunkSize(), Math.max(fittedAbove, config.dedicatedAbove()));
        MemoryLimit limit = new MemoryLimit(config.maxMemory(), config.ticker());
        this.committed = new CommittedMemory(config.chunkSource(), limit);
        DedicatedRegions dedicated = new DedicatedRegions(committed, config.ticker(), config.chunkSize());
        this.arenas = new Arena[config.arenas()];
        for (int i = 0; i < arenas.length; i++) {
            arenas[i] = new Arena(committed, i, sizes, config.firstChunkSize(), config.maxIdleChunksPerArena(), config.remoteFreeQueueCapacity(),
                    config.ticker());
        }
        this.threadCaches = new ThreadCaches(limit, arenas, config, dedicated, fittedAbove, dedicatedAbove);
        this.categories = new Categories(config, this);
        this.idle = new IdleMemory(arenas, threadCaches, committed, dedicated, config, sequentialAllocators.values(),
                blockPools.values());
        this.pressure = new Pressure(config.pressure(), limit, config.ticker(), idle, config.chunkSize());
        this.statistics = new Statistics(threadCaches, categories, committed, dedicated, arenas, pressure, config.chunkSize());
        this.upkeep = new Upkeep(config, limit, committed, dedicated, threadCaches, idle, pressure);
        this.admission = new Admission(config, limit, pressure, upkeep);
        this.general = new GeneralPool(sizes, fittedAbove, dedicatedAbove, config.pageSize(), dedicated, threadCaches,
                admission, idle, committed);
        this.categories.open(general);
        this.wholeChunks = new WholeChunks(threadCaches, committed, sizes, general);
        CompactionChoice choice = new CompactionChoice(arenas, sequentialAllocators.values(), blockPools.values(), limit,
                committed, config.chunkSize());
        this.compaction = new Compaction(choice, threadCaches, general, statistics, limit, config.ticker());
        CLEANER.register(this, committed.reclaimerOnCollection());
        upkeep.start(this, compaction);
        LOGGER.log(System.Logger.Level.DEBUG, "new pool: {0}", config);
    }

    /**
     * Closes the pool; idempotent, any thread. New allocations, callers
     * waiting at a limit and allocations yet to commit a new region fail with
     * {@link IllegalStateException} from now on. What is idle goes back at
     * once; live buffers stay valid, and each chunk goes back when its last
     * buffer is released. Other live threads' caches go back at their next
     * release into this pool, or a decay period after the thread ends (the
     * decay runs on until nothing is committed). Live buffers are logged per
     * category at WARNING level.
     */
    @Override
    public void close() {
        if (!admission.close()) {
            return;
        }
        upkeep.closed();
        String live = statistics.liveBuffers();
        if (!live.isEmpty()) {
            LOGGER.log(System.Logger.Level.WARNING, "pool closed with live buffers ({0}); their memory goes back"
                    + " as they are released", live);
        }
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return admission.isClosed();
    }

    /**
     * Registers the {@link Relocator} of a category, the owner of its entries,
     * which moves them when a compaction asks; with null, removes it. Only
     * entries of a category with a relocator ever move, and only by it. While
     * any category has one, the last chunk under the ceiling is kept for
     * compactions' moves (see {@link Relocator}).
     *
     * @return the relocator it replaced, or null
     * @throws IllegalArgumentException for a category of another pool
     */
    public Relocator setRelocator(String categoryName, Relocator relocator) {
        return compaction.setRelocator(category(categoryName), relocator);
    }

    /**
     * Registers the {@link Shrinker} of a category, the owner of a cache that
     * can drop entries when the pool asks; with null, removes it. Asked in a
     * pool with a ceiling and pressure on ({@link PressureConfig}): above the
     * high watermark, in the background, and before an allocation is refused
     * or waits at a limit.
     *
     * @return the shrinker it replaced, or null
     * @throws IllegalStateException when the pool is closed
     */
    public Shrinker setShrinker(String categoryName, Shrinker shrinker) {
        admission.checkOpen();
        Shrinker previous = pressure.set(category(categoryName), shrinker);
        if (shrinker != null) {
            upkeep.shrinkerAdded();
        }
        return previous;
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
     * Empties sparse chunks by having the owners of their entries move them,
     * so that the chunks go back to the operating system. Chosen least used
     * first while their bytes in use fit {@code maxBytesToMove}: chunks,
     * pinned sequential chunks and cut blocks used at most
     * {@code maxOccupancy}, holding entries of categories with a
     * {@link Relocator}, each called once on this thread. A chunk goes back
     * once its entries moved and readers let go of the old memory. Waits for
     * a compaction under way; {@link CompactionStats#NONE} from a relocator
     * or without relocators. See docs/compaction.md.
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
        return categories.get(name);
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
        return categories.check(category).allocator;
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
        return categories.defaultCategory();
    }

    /** Every category created so far, in order of creation. */
    public List<Category> categories() {
        return categories.list();
    }

    /** The configuration this pool was built with. */
    public PoolConfig config() {
        return config;
    }

    /** The size of one chunk in bytes. */
    public int chunkSize() {
        return config.chunkSize();
    }

    /**
     * The size a request reserves: its size class up to the largest size
     * thread caches keep (64 KiB by default, at least 8 pages), whole pages
     * above (65 KiB reserves 72 KiB with 8 KiB pages), whole pages of a region
     * of its own above {@link PoolConfig#dedicatedAbove()} (an idle region
     * reused for it may be up to an eighth larger, and is reserved whole).
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
        return allocate(categories.defaultCategory(), requested, out);
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
        return general.allocate(categories.check(category), requested, out);
    }

    /** Allocations waiting at the ceiling or a quota right now. */
    public int waitingAllocations() {
        return admission.waiters();
    }

    /** Refusals and waits at the ceiling and the quotas since the pool was built, per category; any thread. */
    public LimitStats limitStats() {
        return admission.limitStats(categories.all());
    }

    /**
     * With {@code returnFalseAtLimit}, a try-allocate: like
     * {@link #allocate(Category, int, Allocation)}, but it never waits, and
     * returns false at a limit whatever the category's policy. Without, it is
     * {@code allocate}: the category's policy applies, a
     * {@link LimitPolicy#WAIT} included.
     */
    public boolean tryAllocate(Category category, int requested, Allocation out, boolean returnFalseAtLimit) {
        return general.tryAllocate(categories.check(category), requested, out, returnFalseAtLimit);
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
        Category category = categories.existing(categoryName);
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

    /**
     * Gives memory back. {@code allocation} is cleared and may be reused; a
     * holder from a thread's stash (the Netty adapter's) freed on the
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

    /** The largest request the pool serves. */
    public int maxRequest() {
        return general.maxRequest();
    }

    /**
     * Gives back what is idle now: this thread's and dead threads' caches
     * (live threads flush theirs at their next operation), the cache
     * allocators' spare chunks and idle blocks, and idle chunks but
     * {@code minIdleChunks}.
     *
     * @return the number of chunks and idle blocks given back to the operating system
     */
    public int trim() {
        return idle.trim();
    }

    /** Bytes live allocations asked for. */
    public long requestedBytes() {
        return statistics.requestedBytes();
    }

    /** Bytes set aside for live allocations (their size classes). */
    public long reservedBytes() {
        return statistics.reservedBytes();
    }

    /** Native memory taken from the chunk source now; dead threads' caches are given back first. */
    public long committedBytes() {
        return statistics.committedBytes();
    }

    /**
     * A snapshot of the pool's accounting and its chunks. Taken without
     * stopping any allocating or releasing thread; while they run, a figure
     * may miss what changed during the read, but requested &lt;= reserved &lt;=
     * committed always holds, and with no traffic the figures are exact.
     */
    public PoolStats stats() {
        return statistics.stats();
    }

    /**
     * Every pooled chunk's use, arena by arena, oldest first: percent handed
     * out, at least 1 when anything is. Walks every chunk under its arena's
     * lock, for operators; {@link PoolStats#chunksByOccupancy()} costs nothing
     * per chunk.
     */
    public int[] chunkUsePercent() {
        return statistics.chunkUsePercent();
    }

    /**
     * {@link PoolStats#report()}, a map of every chunk (one line per arena,
     * {@code .} idle, {@code 1}-{@code 9} tens of percent used, {@code #}
     * full) and what pressure did; walks every chunk, for operators.
     */
    public String report() {
        return statistics.report();
    }

    @Override
    public String toString() {
        return stats().summary();
    }
}
