package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PooledByteBufAllocator;
import io.slabwise.CompactionStats;
import io.slabwise.PoolStats;
import io.slabwise.netty.SlabwiseAllocator;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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

import java.lang.management.ManagementFactory;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * The cost of one compaction: before every iteration a cache of
 * {@code cacheMiB} of entries (log-uniform sizes, {@code sizesKiB}) is filled
 * and a random {@code freed} fraction of its entries released; the measured
 * operation is one {@code SlabwiseAllocator.compact()} (chunks at most half
 * used are emptied, no byte budget), timed on its own
 * ({@link Mode#SingleShotTime}). Every entry is checked after it.
 *
 * <p>Where the entries live ({@code layout}): {@code general}, the general
 * pool ({@code forCategory("cache").directBuffer}), 1-16 KiB; {@code sequential},
 * a sequential allocator ({@code sequential("log_cache")}), as a log cache's
 * record batches, 1-16 KiB; {@code blocks}, a block pool
 * ({@code blocks("block_cache")}), as a block cache's payloads, 64 KiB-1 MiB.
 * Netty's allocators take every entry from {@code directBuffer}, the same
 * sizes in the same order.
 *
 * <p>Every iteration has an allocator of its own, made by its setup and
 * closed (Slabwise) by its teardown, so each compaction starts from the same
 * state. Netty's allocators cannot compact: for them the operation does nothing,
 * its time means nothing, and they are here for the memory they hold after
 * the same fragmentation, the baseline for what compaction saves. Before the
 * operation, and once more after it (outside its time), every allocator gives
 * back what it can without moving anything: Slabwise {@code trim()}, the
 * pooled allocator {@code trimCurrentThreadCache()}; the adaptive allocator
 * has nothing of the kind.
 *
 * <p>The figures of each compaction are {@link Counters} ({@code @AuxCounters}
 * events, one value per iteration): bytes moved and freed, the time the pool
 * measured, the heap bytes it allocated, committed and resident bytes before and after, the cache's live
 * bytes. {@code benchmarks/run-compaction.sh} turns them into a table.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3)
@Measurement(iterations = 10)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class CompactionBenchmark {

    /** Where a cache's entries come from in Slabwise. */
    public enum Layout {
        /** The general pool, a category's {@code directBuffer}. */
        general("cache"),
        /** A sequential allocator (FIFO slab). */
        sequential("log_cache"),
        /** A block pool. */
        blocks("block_cache");

        final String category;

        Layout(String category) {
            this.category = category;
        }

        /** How Slabwise allocates an entry of this layout. */
        IntFunction<ByteBuf> source(SlabwiseAllocator slabwise) {
            switch (this) {
                case sequential:
                    return slabwise.sequential(category)::allocate;
                case blocks:
                    return slabwise.blocks(category)::allocate;
                default:
                    return slabwise.forCategory(category)::directBuffer;
            }
        }
    }

    /**
     * What one compaction did, one value per iteration (JMH events, which JMH
     * adds up over the iterations in its score: read the per-iteration raw
     * data). All zero for Netty's allocators but the memory figures.
     */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Counters {
        /** Bytes of entries the owner moved (copied once each). */
        public long movedBytes;
        /** Entries moved. */
        public long movedEntries;
        /** Bytes of the chunks and blocks the compaction emptied (given back, or kept as a sequential allocator's spare). */
        public long freedBytes;
        /** Entries that could not move (in use, or refused by a limit). */
        public long refusedEntries;
        /** The time the compaction took, as the pool measured it. */
        public long compactionNanos;
        /**
         * Heap bytes the compaction allocated (this thread's, which runs the
         * relocator); -prof gc would count the setup's too.
         */
        public long garbageBytes;
        /** Committed bytes after the fragmentation and a trim, before the operation. */
        public long committedBefore;
        /** Committed bytes just after the operation. */
        public long committedAfter;
        /**
         * Slabwise only: the bytes of its chunks, blocks and huge regions after
         * the operation and the trim, as against the committed bytes, which
         * count whole region groups (32 MiB taken at once) from their first
         * chunk to their last.
         */
        public long chunkBytesTrimmed;
        /** Committed bytes after the operation and one more trim (Slabwise) or thread-cache trim (pooled). */
        public long committedTrimmed;
        /** The process's resident bytes before the operation. */
        public long residentBefore;
        /** The process's resident bytes after the operation and the trim. */
        public long residentTrimmed;
        /** Bytes of the cache's live entries. */
        public long liveBytes;

        /** Zeroes the counters for the iteration. */
        @Setup(Level.Iteration)
        public void reset() {
            movedBytes = 0;
            movedEntries = 0;
            freedBytes = 0;
            refusedEntries = 0;
            compactionNanos = 0;
            garbageBytes = 0;
            committedBefore = 0;
            committedAfter = 0;
            committedTrimmed = 0;
            chunkBytesTrimmed = 0;
            residentBefore = 0;
            residentTrimmed = 0;
            liveBytes = 0;
        }
    }

    /** The allocator under test. */
    @Param({"slabwise", "pooled", "adaptive"})
    public AllocatorKind allocator;

    /** Where the entries live in Slabwise. */
    @Param({"general", "sequential", "blocks"})
    public Layout layout;

    /** The fraction of the entries released at random before each compaction. */
    @Param({"0.8", "0.9"})
    public double freed;

    /** The bytes of entries allocated before the release, in MiB. */
    @Param("64")
    public int cacheMiB;

    /**
     * Entry sizes in KiB, log-uniform, as {@code min-max}; {@code auto} is
     * {@code 1-16} for the general pool and the sequential allocator and
     * {@code 64-1024} for the block pool (whose small payloads are mini-blocks).
     */
    @Param("auto")
    public String sizesKiB;

    /** Reads the heap bytes a thread allocated. */
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final RelocatableCache cache = new RelocatableCache();
    private final byte[] template = new byte[1 << 20];
    private int[] sizes;
    private ByteBufAllocator alloc;
    private SlabwiseAllocator slabwise;
    private IntFunction<ByteBuf> source;
    /** The counters of the iteration, for the figures taken after the operation. */
    private Counters counters;
    private long before;
    private long residentBefore;
    private long live;
    private int iteration;

    /** Makes the entry sizes. */
    @Setup(Level.Trial)
    public void setUp() {
        new Random(5).nextBytes(template);
        String range = "auto".equals(sizesKiB) ? (layout == Layout.blocks ? "64-1024" : "1-16") : sizesKiB;
        String[] bounds = range.split("-");
        if (bounds.length != 2) {
            throw new IllegalArgumentException("sizesKiB is auto or min-max in KiB: " + sizesKiB);
        }
        int min = Integer.parseInt(bounds[0].trim()) * 1024;
        int max = Integer.parseInt(bounds[1].trim()) * 1024;
        if (min < 8 || max < min || max > template.length) {
            throw new IllegalArgumentException("entry sizes from 1 KiB to 1024 KiB, min <= max: " + sizesKiB);
        }
        sizes = RelocatableCache.logUniformSizes(1 << 14, min, max, 11);
    }

    /**
     * Makes a fresh allocator (in Slabwise, with the cache as its entries'
     * owner), fills the cache and releases a random {@code freed} of it; then
     * gives back what can go without moving anything.
     */
    @Setup(Level.Iteration)
    public void fragment() {
        alloc = allocator.create();
        if (alloc instanceof SlabwiseAllocator) {
            slabwise = (SlabwiseAllocator) alloc;
            source = layout.source(slabwise);
            slabwise.setRelocator(layout.category, cache);
        } else {
            slabwise = null;
            source = alloc::directBuffer;
        }
        live = cache.refill(source, sizes, template, (long) cacheMiB << 20, freed, 1000L + iteration++);
        before = trim();
        residentBefore = ProcessMemory.residentBytes();
    }

    /** Gives back what the allocator can without moving anything; returns the committed bytes after. */
    long trim() {
        if (slabwise != null) {
            slabwise.trim();
        } else if (alloc instanceof PooledByteBufAllocator) {
            ((PooledByteBufAllocator) alloc).trimCurrentThreadCache();
        }
        return committed();
    }

    /** One compaction (Slabwise); nothing for Netty's allocators, which cannot move their buffers. */
    @Benchmark
    public long compact(Counters counters) {
        this.counters = counters;
        long allocated = THREADS.getCurrentThreadAllocatedBytes();
        CompactionStats done = slabwise != null ? slabwise.compact() : CompactionStats.NONE;
        counters.garbageBytes = THREADS.getCurrentThreadAllocatedBytes() - allocated;
        counters.movedBytes = done.movedBytes();
        counters.movedEntries = done.movedEntries();
        counters.freedBytes = done.bytesFreed();
        counters.refusedEntries = done.refusedEntries();
        counters.compactionNanos = done.nanos();
        counters.committedBefore = before;
        counters.committedAfter = committed();
        counters.residentBefore = residentBefore;
        counters.liveBytes = live;
        return done.movedBytes();
    }

    /**
     * After the operation, outside its time: checks that every entry still
     * holds the bytes it was written with, wherever it moved, takes the
     * figures after one more trim, then releases the cache and closes a
     * Slabwise allocator.
     */
    @TearDown(Level.Iteration)
    public void afterCompaction() {
        cache.checkAll();
        if (counters != null) {
            counters.committedTrimmed = trim();
            counters.residentTrimmed = ProcessMemory.residentBytes();
            if (slabwise != null) {
                PoolStats stats = slabwise.stats();
                counters.chunkBytesTrimmed = stats.chunkBytes() + stats.hugeCommittedBytes() + stats.hugeIdleBytes()
                        + stats.blockRegionBytes();
            }
        }
        cache.clear();
        if (slabwise != null) {
            slabwise.close();
        }
    }

    private long committed() {
        if (slabwise != null) {
            return slabwise.pool().committedBytes();
        }
        return ((ByteBufAllocatorMetricProvider) alloc).metric().usedDirectMemory();
    }
}
