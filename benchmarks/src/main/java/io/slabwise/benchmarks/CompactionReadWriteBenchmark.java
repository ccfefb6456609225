package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.slabwise.CompactionStats;
import io.slabwise.PoolStats;
import io.slabwise.netty.SlabwiseAllocator;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * What background compaction costs a cache's readers and writers, and what it
 * saves in memory. Each iteration's setup makes a fresh allocator, fills a
 * {@link RelocatableCache} with {@code cacheMiB} of 1-16 KiB entries
 * (log-uniform) and thins it by releasing a random {@code freed} fraction of
 * them, so that its survivors are spread over all the memory the fill took.
 * Then, for the iteration, writers replace entries and readers read them:
 *
 * <ul>
 *   <li>{@code write}: allocates an entry of the next size, fills it (a copy
 *       from a heap array, stamped at both ends), swaps it into one of the
 *       hot slots (the first {@code hotFraction} of them, scattered in memory
 *       like the rest) under the slot's stripe lock and releases the entry it
 *       replaced. The other entries stay where the fill put them unless a
 *       compaction moves them: a cache whose most entries are long-lived.</li>
 *   <li>{@code read}: retains the entry of any slot under its stripe lock,
 *       copies it whole to a heap array, checks its stamps and releases it
 *       (when a writer or a move let go of it meanwhile, that last release
 *       frees it on the reader's thread).</li>
 * </ul>
 *
 * <p>Allocators: {@code slabwise} (the cache owns the category
 * {@code cache}; no background compaction), {@code slabwise_compacting} (the
 * same with {@code compactionBytesPerSecond} at {@code compactionMiBPerSecond}),
 * and Netty's {@code pooled} and {@code adaptive}, which cannot compact: the
 * baseline for speed and for memory held.
 *
 * <p>Compaction here is the pool's own background compaction, the feature as
 * users get it: once a second from the pool's creation, on the pool's
 * scheduler thread, with the budget of a second. As the pool is made by the
 * iteration's setup, the first compaction comes about a second after the
 * iteration's start less the fill's time; with iterations of 3 s (the
 * default), two or three run in each. At the default budget the first one
 * moves every entry it finds in chunks at most half used, the next ones what
 * the writers scattered since. {@link Memory} (JMH {@code @AuxCounters}
 * events, one value per iteration) gives the committed and resident bytes at
 * the end of each iteration, the cache's live bytes, and what the
 * compactions of the iteration did. Every entry is checked at the end of
 * each iteration.
 *
 * <p>The threads are one writer and one reader by default ({@code -tg} to
 * change); on a machine with two cores the scheduler thread competes with
 * them for a core while it compacts, which is part of the cost measured.
 */
@State(Scope.Group)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 5, time = 3)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class CompactionReadWriteBenchmark {

    /** The allocators of this benchmark: Slabwise without and with background compaction, and Netty's. */
    public enum CacheAllocator {
        /** Slabwise with its defaults: the cache owns its entries, nothing compacts them. */
        slabwise,
        /** Slabwise with background compaction at {@code compactionMiBPerSecond}. */
        slabwise_compacting,
        /** Netty's pooled allocator ({@link AllocatorKind#pooled}). */
        pooled,
        /** Netty's adaptive allocator ({@link AllocatorKind#adaptive}). */
        adaptive;

        ByteBufAllocator create(long compactionBytesPerSecond) {
            switch (this) {
                case slabwise:
                    return SlabwiseAllocator.builder().build();
                case slabwise_compacting:
                    return SlabwiseAllocator.builder().compactionBytesPerSecond(compactionBytesPerSecond).build();
                case pooled:
                    return AllocatorKind.pooled.create();
                default:
                    return AllocatorKind.adaptive.create();
            }
        }
    }

    /** The category of the cache's entries in Slabwise. */
    private static final String CATEGORY = "cache";
    /** Entry sizes cycled through by the fill and by every writer. */
    private static final int SIZES = 1 << 14;

    /** The allocator under test. */
    @Param({"slabwise", "slabwise_compacting", "pooled", "adaptive"})
    public CacheAllocator allocator;

    /** The background compaction budget of {@code slabwise_compacting}, in MiB a second. */
    @Param("64")
    public int compactionMiBPerSecond;

    /** The bytes of entries allocated by each iteration's setup, before the release, in MiB. */
    @Param("64")
    public int cacheMiB;

    /** The fraction of the entries the setup releases at random. */
    @Param("0.85")
    public double freed;

    /**
     * The fraction of the surviving entries that writers replace (the hot
     * ones, scattered like the others); the rest stay where the setup left
     * them unless a compaction moves them. Readers read every entry.
     */
    @Param("0.1")
    public double hotFraction;

    private final RelocatableCache cache = new RelocatableCache();
    private final int[] sizes = RelocatableCache.logUniformSizes(SIZES, 1024, 16 * 1024, 13);
    private final byte[] template = new byte[16 * 1024];
    private ByteBufAllocator alloc;
    private SlabwiseAllocator slabwise;
    private ByteBufAllocator source;
    private int iteration;
    /** The number of hot slots: writers replace the entries of slots 0 to hot - 1. */
    private int hot;
    /** The compactions before this iteration, to count those of the iteration. */
    private CompactionStats compactionsBefore = CompactionStats.NONE;
    /** The stripes the relocator had skipped before this iteration. */
    private long busyAtSetup;
    /** The counters the first writer reports, filled when the iteration ends. */
    private volatile Memory memory;

    /**
     * Memory at the end of an iteration and the compactions during it, one
     * value per iteration (JMH events: JMH adds them up over the iterations
     * in its score, so read the per-iteration raw data). Only the first
     * writer's instance reports, so the values do not add up over threads;
     * the benchmark fills it at the end of the iteration.
     */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Memory {
        /** The allocator's committed bytes (Netty: {@code usedDirectMemory}) when the iteration ended. */
        public long committedBytes;
        /**
         * Slabwise only: the bytes of its chunks when the iteration ended, as
         * against the committed bytes, which count whole region groups (32 MiB
         * taken at once) from their first chunk to their last.
         */
        public long chunkBytes;
        /** The process's resident bytes when the iteration ended. */
        public long residentBytes;
        /** The bytes of the cache's entries when the iteration ended. */
        public long liveBytes;
        /** Compactions during the iteration (background runs, whether or not they found chunks to empty). */
        public long compactions;
        /** Chunks the compactions of the iteration chose to empty. */
        public long chunksEvacuated;
        /** The time the compactions of the iteration took, as the pool measured it. */
        public long compactionNanos;
        /** Bytes the compactions of the iteration moved. */
        public long movedBytes;
        /** Bytes of chunks the compactions of the iteration emptied. */
        public long freedBytes;
        /** Entries the compactions of the iteration could not move. */
        public long refusedEntries;
        /** Stripes of the cache a relocator found busy twice and skipped, during the iteration. */
        public long busyStripes;

        private boolean reporting;

        /** Picks the instance that reports: the first writer's. */
        @Setup(Level.Trial)
        public void choose(ThreadParams threads) {
            reporting = threads.getSubgroupThreadIndex() == 0;
        }

        /** Zeroes the counters. */
        @Setup(Level.Iteration)
        public void reset() {
            committedBytes = 0;
            chunkBytes = 0;
            residentBytes = 0;
            liveBytes = 0;
            compactions = 0;
            chunksEvacuated = 0;
            compactionNanos = 0;
            movedBytes = 0;
            freedBytes = 0;
            refusedEntries = 0;
            busyStripes = 0;
        }
    }

    /** A writer's own sequence of slots and sizes, and its stamps. */
    @State(Scope.Thread)
    public static class Writer {
        SplittableRandom random;
        int next;
        int stamp;

        /** Seeds the writer's sequence by its thread index. */
        @Setup(Level.Trial)
        public void seed(ThreadParams threads) {
            random = new SplittableRandom(31L * threads.getThreadIndex() + 1);
            next = threads.getThreadIndex() * 997;
            stamp = threads.getThreadIndex() << 24;
        }
    }

    /** A reader's own sequence of slots, and the heap array it copies entries to. */
    @State(Scope.Thread)
    public static class Reader {
        SplittableRandom random;
        final byte[] copy = new byte[16 * 1024];

        /** Seeds the reader's sequence by its thread index. */
        @Setup(Level.Trial)
        public void seed(ThreadParams threads) {
            random = new SplittableRandom(17L * threads.getThreadIndex() + 3);
        }
    }

    /** Makes the bytes entries are filled with. */
    @Setup(Level.Trial)
    public void setUp() {
        new Random(5).nextBytes(template);
    }

    /**
     * Makes a fresh allocator (in Slabwise, with the cache as the owner of
     * its category's entries), fills the cache and releases a random
     * {@code freed} of its entries.
     */
    @Setup(Level.Iteration)
    public void fragment() {
        alloc = allocator.create((long) compactionMiBPerSecond << 20);
        if (alloc instanceof SlabwiseAllocator) {
            slabwise = (SlabwiseAllocator) alloc;
            source = slabwise.forCategory(CATEGORY);
            slabwise.setRelocator(CATEGORY, cache);
        } else {
            slabwise = null;
            source = alloc;
        }
        cache.refill(source::directBuffer, sizes, template, (long) cacheMiB << 20, freed, 2000L + iteration++);
        hot = Math.max(1, (int) (cache.size() * hotFraction));
        compactionsBefore = slabwise != null ? slabwise.pool().compactionTotals() : CompactionStats.NONE;
        busyAtSetup = cache.busyStripes();
        memory = null;
    }

    /**
     * Fills the reporting writer's {@link Memory} with the figures at the end
     * of the iteration, checks every entry, then releases the cache and
     * closes a Slabwise allocator.
     */
    @TearDown(Level.Iteration)
    public void measure() {
        Memory m = memory;
        if (m != null) {
            report(m);
        }
        cache.checkAll();
        cache.clear();
        if (slabwise != null) {
            slabwise.close();
        }
    }

    private void report(Memory m) {
        m.committedBytes = committed();
        if (slabwise != null) {
            PoolStats stats = slabwise.stats();
            m.chunkBytes = stats.chunkBytes() + stats.hugeCommittedBytes() + stats.hugeIdleBytes() + stats.blockRegionBytes();
        }
        m.residentBytes = ProcessMemory.residentBytes();
        m.liveBytes = cache.liveBytes();
        CompactionStats done = compactionsSinceSetup();
        m.compactions = done.compactions();
        m.chunksEvacuated = done.chunksEvacuated();
        m.compactionNanos = done.nanos();
        m.movedBytes = done.movedBytes();
        m.freedBytes = done.bytesFreed();
        m.refusedEntries = done.refusedEntries();
        m.busyStripes = cache.busyStripes() - busyAtSetup;
    }

    /** Replaces the entry of a random hot slot with a new one of the next size. */
    @Benchmark
    @Group("cache")
    @GroupThreads(1)
    public int write(Writer writer, Memory counters) {
        if (memory == null && counters.reporting) {
            memory = counters;
        }
        int size = sizes[writer.next++ & (SIZES - 1)];
        ByteBuf entry = source.directBuffer(size);
        RelocatableCache.fill(entry, template, writer.stamp++);
        cache.replace(writer.random.nextInt(hot), entry);
        return size;
    }

    /** Reads the entry of a random slot whole, and checks it. */
    @Benchmark
    @Group("cache")
    @GroupThreads(1)
    public int read(Reader reader) {
        ByteBuf entry = cache.retain(reader.random.nextInt(cache.size()));
        try {
            int size = entry.writerIndex();
            entry.getBytes(0, reader.copy, 0, size);
            RelocatableCache.check(entry);
            return reader.copy[size >>> 1];
        } finally {
            entry.release();
        }
    }

    long committed() {
        if (slabwise != null) {
            return slabwise.pool().committedBytes();
        }
        return ((ByteBufAllocatorMetricProvider) alloc).metric().usedDirectMemory();
    }

    /** What the compactions since this iteration's setup did (all zero but for Slabwise). */
    CompactionStats compactionsSinceSetup() {
        if (slabwise == null) {
            return CompactionStats.NONE;
        }
        CompactionStats now = slabwise.pool().compactionTotals();
        CompactionStats then = compactionsBefore;
        return new CompactionStats(now.compactions() - then.compactions(), now.chunksEvacuated() - then.chunksEvacuated(),
                now.chunksFreed() - then.chunksFreed(), now.bytesFreed() - then.bytesFreed(),
                now.movedEntries() - then.movedEntries(), now.movedBytes() - then.movedBytes(),
                now.refusedEntries() - then.refusedEntries(), now.heldByReaders() - then.heldByReaders(),
                now.nanos() - then.nanos());
    }
}
