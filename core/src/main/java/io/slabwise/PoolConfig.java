package io.slabwise;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * The settings of a {@link MemoryPool}, immutable. Build one with
 * {@link #builder()}; every setting starts from a {@code slabwise.*} system
 * property when it is set, and from the documented default otherwise.
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>setting</th><th>system property</th><th>default</th></tr>
 *   <tr><td>chunk size</td><td>{@code slabwise.chunkSize}</td><td>4 MiB (a power of two, 64 KiB to 256 MiB)</td></tr>
 *   <tr><td>size of an arena's first chunks</td><td>{@code slabwise.firstChunkSize}</td><td>256 KiB, or the chunk
 *       size when smaller (the chunk size gives every chunk one size)</td></tr>
 *   <tr><td>arenas</td><td>{@code slabwise.arenas}</td><td>2 x available processors, at most 1024</td></tr>
 *   <tr><td>arena chunk bytes per arena in use</td><td>{@code slabwise.arenaSpreadBytes}</td><td>32 MiB (0 spreads threads
 *       over every arena from the start)</td></tr>
 *   <tr><td>smallest request with a region of its own</td><td>{@code slabwise.dedicatedAbove}</td><td>an eighth of
 *       a chunk (512 KiB); the chunk size gives only huge requests one</td></tr>
 *   <tr><td>largest cached size</td><td>{@code slabwise.maxCachedSize}</td><td>64 KiB (0 turns thread caches off)</td></tr>
 *   <tr><td>cached bytes per size class</td><td>{@code slabwise.maxCachedBytesPerClass}</td><td>1 MiB</td></tr>
 *   <tr><td>cached entries per size class</td><td>{@code slabwise.maxCachedEntriesPerClass}</td><td>256</td></tr>
 *   <tr><td>idle chunks kept per arena</td><td>{@code slabwise.maxIdleChunksPerArena}</td><td>1</td></tr>
 *   <tr><td>idle blocks kept per block pool</td><td>{@code slabwise.maxIdleBlocks}</td><td>4 (one 4 MiB chunk's worth of 1 MiB blocks)</td></tr>
 *   <tr><td>idle chunk (and block) decay</td><td>{@code slabwise.idleChunkDecayMillis}</td><td>10 s</td></tr>
 *   <tr><td>idle chunks kept past the decay</td><td>{@code slabwise.minIdleChunks}</td><td>0</td></tr>
 *   <tr><td>ceiling on committed bytes</td><td>{@code slabwise.maxMemory}</td><td>none on Java 17-21; the JVM's
 *       maximum direct memory with the built-in Java 22+ sources (see {@link Builder#maxMemory(long)})</td></tr>
 *   <tr><td>policy at the ceiling or a quota</td><td>{@code slabwise.limitPolicy}</td><td>{@code FAIL}</td></tr>
 *   <tr><td>longest wait under {@code WAIT}</td><td>{@code slabwise.waitTimeoutMillis}</td><td>5 s</td></tr>
 *   <tr><td>background compaction budget</td><td>{@code slabwise.compactionBytesPerSecond}</td><td>0 (off)</td></tr>
 * </table>
 *
 * The page size is fixed at 8 KiB. System properties are held to the same
 * checks as the builder's methods: a value out of range fails
 * {@link Builder#build()}, and one that is not a number fails when the builder
 * is created, each with a message that names the setting.
 */
public final class PoolConfig {

    /** The size of a page, the granule of runs. */
    public static final int PAGE_SIZE = 8192;
    static final int MIN_CHUNK_SIZE = 64 * 1024;
    static final int MAX_CHUNK_SIZE = 256 * 1024 * 1024;

    private final int chunkSize;
    private final int firstChunkSize;
    private final int arenas;
    private final long arenaSpreadBytes;
    private final long compactionBytesPerSecond;
    private final int maxCachedSize;
    private final int dedicatedAbove;
    private final int maxCachedBytesPerClass;
    private final int maxCachedEntriesPerClass;
    private final int maxIdleChunksPerArena;
    private final int maxIdleBlocks;
    private final int remoteFreeQueueCapacity;
    private final ChunkSource chunkSource;
    private final long maxMemory;
    private final LimitPolicy limitPolicy;
    private final Duration waitTimeout;
    private final Map<String, Long> quotas;
    private final Map<String, LimitPolicy> categoryPolicies;
    private final PressureConfig pressure;
    private final Duration idleChunkDecay;
    private final int minIdleChunks;
    private final BooleanSupplier waitAllowed;
    private final Ticker ticker;
    private final Scheduler scheduler;

    private PoolConfig(Settings<?> b, long maxMemory) {
        this.maxMemory = maxMemory;
        this.limitPolicy = b.limitPolicy;
        this.waitTimeout = b.waitTimeout;
        this.quotas = Map.copyOf(b.quotas);
        this.categoryPolicies = Map.copyOf(b.categoryPolicies);
        this.pressure = b.pressure;
        this.idleChunkDecay = b.idleChunkDecay;
        this.minIdleChunks = b.minIdleChunks;
        this.waitAllowed = b.waitAllowed;
        this.chunkSize = b.chunkSize;
        this.firstChunkSize = b.firstChunkSize == null ? Math.min(Settings.FIRST_CHUNK_SIZE, b.chunkSize) : b.firstChunkSize;
        this.arenas = b.arenas;
        this.arenaSpreadBytes = b.arenaSpreadBytes;
        this.compactionBytesPerSecond = b.compactionBytesPerSecond;
        this.maxCachedSize = b.maxCachedSize;
        this.dedicatedAbove = b.dedicatedAbove == null ? b.chunkSize / 8 : b.dedicatedAbove;
        this.maxCachedBytesPerClass = b.maxCachedBytesPerClass;
        this.maxCachedEntriesPerClass = b.maxCachedEntriesPerClass;
        this.maxIdleChunksPerArena = b.maxIdleChunksPerArena;
        this.maxIdleBlocks = b.maxIdleBlocks;
        this.remoteFreeQueueCapacity = b.remoteFreeQueueCapacity;
        this.chunkSource = b.chunkSource;
        this.ticker = b.ticker;
        this.scheduler = b.scheduler;
    }

    /** A builder that starts from the system properties and the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** The default configuration (system properties and defaults). */
    public static PoolConfig defaults() {
        return builder().build();
    }

    /** The chunk size in bytes. */
    public int chunkSize() {
        return chunkSize;
    }

    /**
     * The size of an arena's first chunks, in bytes; later ones grow with the
     * arena up to {@link #chunkSize()}. See {@link Settings#firstChunkSize(int)}.
     */
    public int firstChunkSize() {
        return firstChunkSize;
    }

    /** The page size in bytes (always {@link #PAGE_SIZE}). */
    public int pageSize() {
        return PAGE_SIZE;
    }

    /** The number of arenas. */
    public int arenas() {
        return arenas;
    }

    /**
     * How many bytes of chunks the arenas hold, per arena in use beyond the
     * first, before threads spread over one more arena; 0 when threads spread
     * over every arena from the start. See {@link Settings#arenaSpreadBytes(long)}.
     */
    public long arenaSpreadBytes() {
        return arenaSpreadBytes;
    }

    /**
     * Bytes a second that background compaction may move; 0 when it is off.
     * See {@link Settings#compactionBytesPerSecond(long)}.
     */
    public long compactionBytesPerSecond() {
        return compactionBytesPerSecond;
    }

    /** The largest request a thread cache keeps; 0 when thread caches are off. */
    public int maxCachedSize() {
        return maxCachedSize;
    }

    /**
     * Requests above this many bytes get a dedicated region of their own
     * rather than a run of a chunk (requests above a chunk always do); the
     * pool never applies it below the largest size thread caches keep.
     */
    public int dedicatedAbove() {
        return dedicatedAbove;
    }

    /** How many bytes a thread cache keeps at most for one size class. */
    public int maxCachedBytesPerClass() {
        return maxCachedBytesPerClass;
    }

    /** How many entries a thread cache keeps at most for one size class. */
    public int maxCachedEntriesPerClass() {
        return maxCachedEntriesPerClass;
    }

    /** How many idle chunks each arena keeps for reuse instead of giving them back. */
    public int maxIdleChunksPerArena() {
        return maxIdleChunksPerArena;
    }

    /**
     * How many free blocks each block pool keeps for reuse instead of giving
     * them back (they go back anyway after the idle decay time, or on trim).
     */
    public int maxIdleBlocks() {
        return maxIdleBlocks;
    }

    /** The capacity of each arena's queue of frees from other threads. */
    public int remoteFreeQueueCapacity() {
        return remoteFreeQueueCapacity;
    }

    /** Where native memory comes from. */
    public ChunkSource chunkSource() {
        return chunkSource;
    }

    /** The ceiling on committed bytes; {@link Long#MAX_VALUE} when there is none. */
    public long maxMemory() {
        return maxMemory;
    }

    /** The pool's policy at the ceiling or a quota. */
    public LimitPolicy limitPolicy() {
        return limitPolicy;
    }

    /** How long a {@link LimitPolicy#WAIT} allocation waits at most. */
    public Duration waitTimeout() {
        return waitTimeout;
    }

    /** Quotas on reserved bytes by category name, as configured at build time. */
    public Map<String, Long> quotas() {
        return quotas;
    }

    /** Policies that override the pool's, by category name. */
    public Map<String, LimitPolicy> categoryPolicies() {
        return categoryPolicies;
    }

    /** How the pool asks caches' {@link Shrinker}s for memory under pressure. */
    public PressureConfig pressure() {
        return pressure;
    }

    /**
     * Whether the reserved bytes of {@code category} are tracked exactly: it
     * has a quota, or a floor under pressure.
     */
    boolean tracks(String category) {
        return quotas.containsKey(category) || pressure.floors().containsKey(category);
    }

    /** How long a chunk stays idle before it goes back to the chunk source. */
    public Duration idleChunkDecay() {
        return idleChunkDecay;
    }

    /** How many idle chunks the pool keeps past their decay, for reuse. */
    public int minIdleChunks() {
        return minIdleChunks;
    }

    /** The time source of idle-memory decay, of the deadlines of waits at a limit, and of compactions' durations. */
    public Ticker ticker() {
        return ticker;
    }

    /** Where the periodic decay runs. */
    public Scheduler scheduler() {
        return scheduler;
    }

    /** Tells whether the calling thread may wait for memory (false on event loops). */
    public BooleanSupplier waitAllowed() {
        return waitAllowed;
    }

    @Override
    public String toString() {
        return "PoolConfig(chunkSize=" + chunkSize + ", firstChunkSize=" + firstChunkSize
                + ", maxMemory=" + (maxMemory == Long.MAX_VALUE ? "none" : maxMemory)
                + ", limitPolicy=" + limitPolicy + ", quotas=" + quotas + ", idleChunkDecay=" + idleChunkDecay
                + ", arenas=" + arenas + ", arenaSpreadBytes=" + arenaSpreadBytes
                + ", compactionBytesPerSecond=" + compactionBytesPerSecond + ", dedicatedAbove=" + dedicatedAbove
                + ", maxCachedSize=" + maxCachedSize
                + ", maxCachedBytesPerClass=" + maxCachedBytesPerClass + ", maxCachedEntriesPerClass=" + maxCachedEntriesPerClass
                + ", maxIdleChunksPerArena=" + maxIdleChunksPerArena + ", maxIdleBlocks=" + maxIdleBlocks + ", chunkSource=" + chunkSource
                + ", pressure=" + pressure + ')';
    }

    /** Builds a {@link PoolConfig}; each setter validates its argument. */
    public static final class Builder extends Settings<Builder> {

        private Builder() {
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Validates the settings together (those read from system properties
         * too) and builds the configuration.
         *
         * @throws IllegalArgumentException naming the first setting that is out of range
         */
        public PoolConfig build() {
            return buildConfig();
        }
    }

    /**
     * The settings of a pool, shared by {@link Builder} and by the builders of
     * allocators that wrap a pool (such as the Netty adapter's), so each
     * setting is written, documented and validated once. Every setting starts
     * from its system property when set.
     *
     * @param <B> the concrete builder, returned by every setter
     */
    public abstract static class Settings<B extends Settings<B>> {

        /** The default of {@link #firstChunkSize(int)}, or the chunk size when smaller. */
        private static final int FIRST_CHUNK_SIZE = 256 * 1024;
        /** The longest wait timeout and idle decay; longer ones are taken as this (see {@link #waitTimeout}). */
        public static final Duration LONGEST = Duration.ofDays(100L * 365);
        /** The most arenas a pool may have. */
        private static final int MAX_ARENAS = 1024;
        /** The largest {@link #remoteFreeQueueCapacity}: 8 MiB of queue per arena. */
        public static final int MAX_REMOTE_FREE_QUEUE_CAPACITY = 1 << 20;

        private int chunkSize = intProperty("slabwise.chunkSize", 4 * 1024 * 1024);
        /**
         * Null until a system property or {@link #firstChunkSize(int)} sets it:
         * then {@link #FIRST_CHUNK_SIZE}, or the chunk size when smaller. Not a
         * value of its own, which a property could give and pass unchecked.
         */
        private Integer firstChunkSize = optionalIntProperty("slabwise.firstChunkSize");
        private int arenas = intProperty("slabwise.arenas", Math.min(MAX_ARENAS, 2 * Runtime.getRuntime().availableProcessors()));
        private long arenaSpreadBytes = longProperty("slabwise.arenaSpreadBytes", 32L * 1024 * 1024);
        private long compactionBytesPerSecond = longProperty("slabwise.compactionBytesPerSecond", 0);
        private int maxCachedSize = intProperty("slabwise.maxCachedSize", 64 * 1024);
        /** Null until a system property or {@link #dedicatedAbove(int)} sets it: then an eighth of the chunk size. */
        private Integer dedicatedAbove = optionalIntProperty("slabwise.dedicatedAbove");
        private int maxCachedBytesPerClass = intProperty("slabwise.maxCachedBytesPerClass", 1024 * 1024);
        private int maxCachedEntriesPerClass = intProperty("slabwise.maxCachedEntriesPerClass", 256);
        private int maxIdleChunksPerArena = intProperty("slabwise.maxIdleChunksPerArena", 1);
        private int maxIdleBlocks = intProperty("slabwise.maxIdleBlocks", 4);
        /** Null until a system property or {@link #maxMemory(long)} sets it (see there for the default). */
        private Long maxMemory = optionalLongProperty("slabwise.maxMemory");
        private LimitPolicy limitPolicy = policyProperty("slabwise.limitPolicy", LimitPolicy.FAIL);
        private Duration waitTimeout = Duration.ofMillis(longProperty("slabwise.waitTimeoutMillis", 5000));
        private final Map<String, Long> quotas = new LinkedHashMap<>();
        private final Map<String, LimitPolicy> categoryPolicies = new LinkedHashMap<>();
        private PressureConfig pressure = PressureConfig.defaults();
        private Duration idleChunkDecay = Duration.ofMillis(longProperty("slabwise.idleChunkDecayMillis", 10_000));
        private int minIdleChunks = intProperty("slabwise.minIdleChunks", 0);
        private BooleanSupplier waitAllowed = () -> true;
        private int remoteFreeQueueCapacity = 4096;
        private ChunkSource chunkSource = ChunkSource.preferred();
        private Ticker ticker = Ticker.system();
        private Scheduler scheduler = Scheduler.shared();

        /** For the concrete builders. */
        protected Settings() {
        }

        /** This builder, as its own type. */
        protected abstract B self();

        /** The chunk size: a power of two from 64 KiB to 256 MiB. */
        public B chunkSize(int bytes) {
            this.chunkSize = requireChunkSize("chunkSize", bytes);
            return self();
        }

        /**
         * The size of an arena's first chunks: a power of two from 64 KiB to
         * the chunk size (which it must not exceed). Each chunk an arena takes
         * after them is the largest power of two at most an eighth of the bytes
         * the arena holds, between this size and the chunk size: with the
         * defaults an arena takes 256 KiB chunks while it holds under 4 MiB,
         * then 512 KiB, 1 MiB and 2 MiB ones up to 8, 16 and 32 MiB, and 4 MiB
         * ones from then on (a run or whole chunk larger than that gets a chunk
         * it fits). A small pool thus commits memory in small steps, and a
         * large one by whole chunks as before. The chunk size itself gives
         * every chunk one size.
         */
        public B firstChunkSize(int bytes) {
            this.firstChunkSize = requireChunkSize("firstChunkSize", bytes);
            return self();
        }

        private static int requireChunkSize(String name, int bytes) {
            if (bytes < MIN_CHUNK_SIZE || bytes > MAX_CHUNK_SIZE || Integer.bitCount(bytes) != 1) {
                throw new IllegalArgumentException(name + " must be a power of two from " + MIN_CHUNK_SIZE
                        + " to " + MAX_CHUNK_SIZE + ": " + bytes);
            }
            return bytes;
        }

        /** The number of arenas, from 1 to 1024; by default twice the available processors, at most 1024. */
        public B arenas(int count) {
            if (count < 1 || count > MAX_ARENAS) {
                throw new IllegalArgumentException("arenas must be from 1 to " + MAX_ARENAS + ": " + count);
            }
            this.arenas = count;
            return self();
        }

        /**
         * How many bytes of chunks the arenas together hold, per arena in use
         * beyond the first, before threads spread over one more arena: with
         * the default 32 MiB, every thread shares the first arena while the
         * arenas hold less than 32 MiB, two arenas take threads up to 64 MiB,
         * and so on until every arena is in use. A small pool thus commits
         * the chunks of one arena rather than a chunk or more in each (with
         * 4 MiB chunks and 16 arenas, 64 MiB for a few MiB of buffers).
         * New threads go to the in-use arena with the fewest threads; when
         * another arena comes into use, threads of the busiest arena move to
         * it, one at a time, at their next new chunk or cache sweep (a moving
         * thread first gives its cache back to its old arena); virtual
         * threads, which share a cache per arena, choose theirs by thread id
         * among the arenas in use. Arenas never go out of use once taken.
         * Threads sharing an arena meet on its lock only when their caches
         * miss. 0 spreads threads over every arena from their first
         * allocation.
         */
        public B arenaSpreadBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("arenaSpreadBytes must not be negative: " + bytes);
            }
            this.arenaSpreadBytes = bytes;
            return self();
        }

        /**
         * Background compaction: once a second, on the pool's scheduler, up to
         * this many bytes of relocatable entries are moved out of sparsely
         * used chunks (see {@link MemoryPool#compact()}); 0, the default, turns
         * it off. It does anything only for categories with a
         * {@link Relocator}.
         */
        public B compactionBytesPerSecond(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("compactionBytesPerSecond must not be negative: " + bytes);
            }
            this.compactionBytesPerSecond = bytes;
            return self();
        }

        /**
         * The largest request a thread cache keeps by size class; 0 turns
         * thread caches off. Above it (and above 8 pages) a request reserves
         * whole pages rather than its size class (see {@link MemoryPool#reservedSizeFor}).
         */
        public B maxCachedSize(int bytes) {
            this.maxCachedSize = requireNonNegative("maxCachedSize", bytes);
            return self();
        }

        /**
         * Requests above this many bytes get a dedicated region of their own,
         * whole pages of their size, instead of a run carved from a chunk; an
         * eighth of the chunk size by default (512 KiB). A run of half a chunk
         * or more leaves a hole only smaller requests can fill, and keeps its
         * chunk from going back; a region of its own goes back with its
         * buffer. Released regions are kept idle (one in each thread's slot, one
         * in a recent cell, up to a chunk's bytes in a list) for requests of
         * their pages or up to an eighth fewer. From a page to the chunk size; the chunk size
         * gives only huge requests a region, as Netty's pooled allocator does.
         * Below the largest cached size ({@link #maxCachedSize(int)}) it has no
         * effect: cached sizes always come from chunks.
         */
        public B dedicatedAbove(int bytes) {
            if (bytes < PAGE_SIZE) {
                throw new IllegalArgumentException("dedicatedAbove must be at least a page (" + PAGE_SIZE + " bytes): " + bytes);
            }
            this.dedicatedAbove = bytes;
            return self();
        }

        /**
         * How many bytes a thread cache keeps at most for one size class: a
         * cached class larger than this keeps nothing (the large slot above
         * the cached sizes is not a class's, see {@link #maxCachedSize(int)}).
         */
        public B maxCachedBytesPerClass(int bytes) {
            this.maxCachedBytesPerClass = requireNonNegative("maxCachedBytesPerClass", bytes);
            return self();
        }

        /** How many entries a thread cache keeps at most for one size class; 0 keeps none of any class. */
        public B maxCachedEntriesPerClass(int entries) {
            this.maxCachedEntriesPerClass = requireNonNegative("maxCachedEntriesPerClass", entries);
            return self();
        }

        /** How many idle chunks each arena keeps for reuse. */
        public B maxIdleChunksPerArena(int chunks) {
            this.maxIdleChunksPerArena = requireNonNegative("maxIdleChunksPerArena", chunks);
            return self();
        }

        /** How many free blocks each block pool keeps for reuse. */
        public B maxIdleBlocks(int blocks) {
            this.maxIdleBlocks = requireNonNegative("maxIdleBlocks", blocks);
            return self();
        }

        /** The capacity of each arena's queue of frees from other threads: from 2 to {@value #MAX_REMOTE_FREE_QUEUE_CAPACITY}. */
        public B remoteFreeQueueCapacity(int entries) {
            if (entries < 2 || entries > MAX_REMOTE_FREE_QUEUE_CAPACITY) {
                throw new IllegalArgumentException("remoteFreeQueueCapacity must be from 2 to "
                        + MAX_REMOTE_FREE_QUEUE_CAPACITY + ": " + entries);
            }
            this.remoteFreeQueueCapacity = entries;
            return self();
        }

        /**
         * The time source of idle-memory decay, of the deadlines of waits at a
         * limit and of compactions' durations (default {@link Ticker#system()});
         * tests advance one by hand.
         */
        public B ticker(Ticker ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker");
            return self();
        }

        /**
         * Where the periodic decay runs (default {@link Scheduler#shared()}, one
         * daemon thread for the JVM); tests run it by hand.
         */
        public B scheduler(Scheduler scheduler) {
            this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
            return self();
        }

        /** Where native memory comes from. */
        public B chunkSource(ChunkSource source) {
            this.chunkSource = Objects.requireNonNull(source, "chunkSource");
            return self();
        }

        /**
         * The ceiling on committed bytes (chunks, huge regions, idle and cached
         * memory); at least one chunk, {@link Long#MAX_VALUE} for none.
         *
         * <p>When it is not set, a pool whose chunks are direct buffers (the
         * built-in source on Java 17) has no ceiling of its own: the JVM's
         * {@code -XX:MaxDirectMemorySize} bounds them. The built-in sources of
         * Java 22 and later (mapped chunks, and FFM-allocated memory where
         * mapping is off), which that JVM limit does not see, take the JVM's
         * maximum direct memory as their ceiling, so the bound an operator set
         * still holds. A custom {@link ChunkSource} has no default ceiling.
         */
        public B maxMemory(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("maxMemory must be positive: " + bytes);
            }
            this.maxMemory = bytes;
            return self();
        }

        /** The pool's policy at the ceiling or a quota (default {@link LimitPolicy#FAIL}). */
        public B limitPolicy(LimitPolicy policy) {
            this.limitPolicy = Objects.requireNonNull(policy, "policy");
            return self();
        }

        /**
         * How long a {@link LimitPolicy#WAIT} allocation waits at most (default
         * 5 s); zero refuses at once. Anything longer than {@link #LONGEST}
         * (100 years) is taken as that: a wait that never ends in practice.
         */
        public B waitTimeout(Duration timeout) {
            this.waitTimeout = atMostLongest("waitTimeout", timeout);
            return self();
        }

        /**
         * A quota on the reserved bytes of a category. Categories named here have
         * their reserved bytes tracked exactly, which also lets their quota be
         * changed later with {@link MemoryPool#setQuota}; use
         * {@link Long#MAX_VALUE} to track a category without limiting it yet.
         */
        public B quota(String category, long bytes) {
            Category.checkName(category);
            if (bytes < 0) {
                throw new IllegalArgumentException("quota of '" + category + "' must not be negative: " + bytes);
            }
            quotas.put(category, bytes);
            return self();
        }

        /**
         * How the pool asks caches' {@link Shrinker}s for memory: the
         * watermarks, the bounds of shrinking at a limit, per-category floors
         * and weights (default {@link PressureConfig#defaults()}; it applies
         * only with a ceiling and once a shrinker is registered).
         */
        public B pressure(PressureConfig pressure) {
            this.pressure = Objects.requireNonNull(pressure, "pressure");
            return self();
        }

        /** A policy for one category, overriding the pool's. */
        public B categoryPolicy(String category, LimitPolicy policy) {
            Category.checkName(category);
            categoryPolicies.put(category, Objects.requireNonNull(policy, "policy"));
            return self();
        }

        /**
         * How long a chunk stays idle before it goes back to the chunk source
         * (default 10 s). Anything longer than {@link #LONGEST} (100 years) is
         * taken as that: idle memory that never decays, though a
         * {@link MemoryPool#trim()} still gives it back.
         */
        public B idleChunkDecay(Duration decay) {
            this.idleChunkDecay = atMostLongest("idleChunkDecay", decay);
            return self();
        }

        /** How many idle chunks the pool keeps past their decay, for reuse (default 0). */
        public B minIdleChunks(int chunks) {
            this.minIdleChunks = requireNonNegative("minIdleChunks", chunks);
            return self();
        }

        /**
         * Tells whether the calling thread may wait for memory under
         * {@link LimitPolicy#WAIT}; where it says no, the allocation fails at
         * once. The Netty adapter installs a check for event-loop threads.
         */
        public B waitAllowed(BooleanSupplier check) {
            this.waitAllowed = Objects.requireNonNull(check, "check");
            return self();
        }

        /**
         * Validates the settings together (those read from system properties
         * too) and builds the configuration.
         *
         * @throws IllegalArgumentException naming the first setting that is out of range
         */
        protected final PoolConfig buildConfig() {
            chunkSize(chunkSize);
            if (firstChunkSize != null) {
                firstChunkSize(firstChunkSize);
                if (firstChunkSize > chunkSize) {
                    throw new IllegalArgumentException("firstChunkSize (" + firstChunkSize
                            + " bytes) must not exceed the chunk size (" + chunkSize + " bytes)");
                }
            }
            arenas(arenas);
            arenaSpreadBytes(arenaSpreadBytes);
            compactionBytesPerSecond(compactionBytesPerSecond);
            maxCachedSize(maxCachedSize);
            if (dedicatedAbove != null) {
                dedicatedAbove(dedicatedAbove);
                if (dedicatedAbove > chunkSize) {
                    throw new IllegalArgumentException("dedicatedAbove (" + dedicatedAbove
                            + " bytes) must not exceed the chunk size (" + chunkSize + " bytes)");
                }
            }
            maxCachedBytesPerClass(maxCachedBytesPerClass);
            maxCachedEntriesPerClass(maxCachedEntriesPerClass);
            maxIdleChunksPerArena(maxIdleChunksPerArena);
            maxIdleBlocks(maxIdleBlocks);
            waitTimeout(waitTimeout);
            idleChunkDecay(idleChunkDecay);
            minIdleChunks(minIdleChunks);
            java.util.Set<String> named = new java.util.HashSet<>(quotas.keySet());
            named.addAll(pressure.floors().keySet());
            named.add(Category.DEFAULT_NAME);
            if (named.size() > Category.MAX_CATEGORIES) {
                throw new IllegalArgumentException("quotas and floors name " + (named.size() - 1) + " categories: with '"
                        + Category.DEFAULT_NAME + "' a pool has at most " + Category.MAX_CATEGORIES);
            }
            long ceiling;
            if (maxMemory == null) {
                // memory the JVM's direct-memory limit does not see gets that limit as its ceiling
                boolean jvmCounts = chunkSource == DirectChunkSource.INSTANCE && DirectChunkSource.countedByJvmLimit();
                boolean builtIn = chunkSource == DirectChunkSource.INSTANCE || chunkSource == MappedChunkSource.create();
                ceiling = builtIn && !jvmCounts ? JvmDirectMemory.max() : Long.MAX_VALUE;
            } else {
                ceiling = maxMemory;
                maxMemory(ceiling);
            }
            if (ceiling < chunkSize) {
                throw new IllegalArgumentException("maxMemory (" + ceiling + " bytes) must hold at least one chunk ("
                        + chunkSize + " bytes)");
            }
            return new PoolConfig(this, ceiling);
        }

        /** {@code duration}, not null or negative, and at most {@link #LONGEST}. */
        private static Duration atMostLongest(String name, Duration duration) {
            Objects.requireNonNull(duration, name);
            if (duration.isNegative()) {
                throw new IllegalArgumentException(name + " must not be negative: " + duration);
            }
            return duration.compareTo(LONGEST) > 0 ? LONGEST : duration;
        }

        private static int requireNonNegative(String name, int value) {
            if (value < 0) {
                throw new IllegalArgumentException(name + " must not be negative: " + value);
            }
            return value;
        }

        private static LimitPolicy policyProperty(String name, LimitPolicy fallback) {
            String value = System.getProperty(name);
            if (value == null || value.isBlank()) {
                return fallback;
            }
            try {
                return LimitPolicy.valueOf(value.trim().toUpperCase(java.util.Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("system property " + name + " is not one of "
                        + java.util.Arrays.toString(LimitPolicy.values()) + ": " + value, e);
            }
        }

        private static long longProperty(String name, long fallback) {
            Long value = optionalLongProperty(name);
            return value != null ? value : fallback;
        }

        /** The value of a system property, or null when it is not set. */
        private static Long optionalLongProperty(String name) {
            String value = System.getProperty(name);
            if (value == null || value.isBlank()) {
                return null;
            }
            try {
                return Long.parseLong(value.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("system property " + name + " is not an integer: " + value, e);
            }
        }

        private static int intProperty(String name, int fallback) {
            Integer value = optionalIntProperty(name);
            return value != null ? value : fallback;
        }

        /** The value of a system property, or null when it is not set. */
        private static Integer optionalIntProperty(String name) {
            String value = System.getProperty(name);
            if (value == null || value.isBlank()) {
                return null;
            }
            try {
                return Integer.parseInt(value.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("system property " + name + " is not an integer: " + value, e);
            }
        }
    }
}
