package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PooledByteBufAllocator;
import io.slabwise.CompactionStats;
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
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * What one compaction costs against the size of the cache, with an owner
 * that walks all its entries and one that files them by region key. Before
 * every iteration a fresh allocator's cache is filled with {@code cacheMiB}
 * of entries (log-uniform sizes, {@code sizesKiB}), and a fixed window of it,
 * the {@code thinMiB} allocated from the middle of the fill on, loses a random
 * {@code freed} of its entries: the same work for a compaction whatever the
 * size of the cache around it (a few sparse chunks to empty, their survivors
 * to move), while the rest stays dense. The measured operation is one
 * {@code SlabwiseAllocator.compact()} (chunks at most half used, no byte
 * budget), {@link Mode#SingleShotTime}.
 *
 * <p>The owner ({@link RegionKeyedCache}): {@code walk} asks
 * {@code evacuation.contains} of every entry, as a simple relocator does, so
 * its work grows with the cache; {@code keyed} files each entry under its
 * buffer's region key and looks only at the buckets under
 * {@code evacuation.regionKeys()}. In warm-up iterations (every iteration
 * with {@code check=always}) the keyed owner proves its filing during the
 * compaction: no entry it skipped lay in a chunk being emptied, every entry
 * sits in its key's bucket. Every entry's stamps are checked after every
 * compaction, so a wrong copy fails the run.
 *
 * <p>Layouts ({@link CompactionBenchmark.Layout}): {@code general} and
 * {@code sequential}; a block pool's payloads span several keys, which this
 * cache does not file. Netty's allocators cannot compact, so this is a
 * Slabwise benchmark: with {@code allocator=pooled} or {@code adaptive} the
 * operation does nothing, and only the memory they hold for the same fill and
 * thinning ({@code committedTrimmed}) means something.
 *
 * <p>Figures ({@link Counters}, one value per iteration): entries in the
 * cache, entries the owner looked at, entries and bytes moved, bytes freed
 * and chunks emptied ({@link CompactionStats}), the keys given, the pool's
 * time, the owner's time within it and the part of that spent on the entries
 * that moved (the rest is the owner's looking), the heap bytes the compacting thread
 * allocated (read around the call with {@code ThreadMXBean}: {@code -prof gc}
 * would count the setup's fill). {@code benchmarks/run-compaction-scale.sh}
 * makes the table.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-XX:MaxDirectMemorySize=3g", "-Dslabwise.noGlibcWarning=true",
        "--enable-native-access=ALL-UNNAMED", FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class CompactionScaleBenchmark {

    /** How the cache's owner finds the entries to move. */
    public enum Owner {
        /** Asks the evacuation about every entry of the cache. */
        walk,
        /** Files entries by region key and looks only at those under the keys being emptied. */
        keyed
    }

    /** What one compaction did, one value per iteration (JMH adds them up over iterations: read the raw data). */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Counters {
        /** Entries in the cache when the compaction started. */
        public long entries;
        /** Entries the owner asked the evacuation about. */
        public long lookedAt;
        /** Entries moved. */
        public long movedEntries;
        /** Bytes of entries moved. */
        public long movedBytes;
        /** Bytes that left the pool ({@link CompactionStats#bytesFreed()}). */
        public long freedBytes;
        /** Chunks emptied ({@link CompactionStats#chunksEvacuated()}). */
        public long chunksEvacuated;
        /** Region keys the owner was given. */
        public long regionKeys;
        /** The compaction's time as the pool measured it. */
        public long poolNanos;
        /** The owner's time within it (its relocate call, without the keyed owner's check). */
        public long ownerNanos;
        /**
         * The part of the owner's time spent on entries that moved (copy,
         * release of the old buffer, re-filing): the rest is its looking.
         */
        public long movingNanos;
        /** Heap bytes the compacting thread allocated during the call. */
        public long garbageBytes;
        /** Bytes of the cache's entries. */
        public long liveBytes;
        /** Committed bytes (Netty: usedDirectMemory) after the fill, the thinning and a trim. */
        public long committedBefore;
        /** Committed bytes after the operation and one more trim. */
        public long committedTrimmed;

        /** Zeroes the counters for the iteration. */
        @Setup(Level.Iteration)
        public void reset() {
            entries = 0;
            lookedAt = 0;
            movedEntries = 0;
            movedBytes = 0;
            freedBytes = 0;
            chunksEvacuated = 0;
            regionKeys = 0;
            poolNanos = 0;
            ownerNanos = 0;
            movingNanos = 0;
            garbageBytes = 0;
            liveBytes = 0;
            committedBefore = 0;
            committedTrimmed = 0;
        }
    }

    /** The allocator: Slabwise compacts; Netty's allocators are here for the memory they hold. */
    @Param("slabwise")
    public AllocatorKind allocator;

    /** How the owner finds the entries to move. */
    @Param({"walk", "keyed"})
    public Owner owner;

    /** Where the entries live in Slabwise: {@code general} or {@code sequential}. */
    @Param({"general"})
    public CompactionBenchmark.Layout layout;

    /** The bytes of entries allocated, in MiB. */
    @Param({"64", "256", "1024"})
    public int cacheMiB;

    /** The bytes of entries, allocated from the middle of the fill on, that are thinned: the same at every size. */
    @Param("32")
    public int thinMiB;

    /** The fraction of the window's entries released. */
    @Param("0.9")
    public double freed;

    /** Entry sizes in KiB, log-uniform, as {@code min-max}. */
    @Param("1-16")
    public String sizesKiB;

    /**
     * Compactions of a small cache (16 MiB, half of an 8 MiB window thinned)
     * on an allocator of their own before the first iteration, with the same
     * owner and layout, so that the compaction's code is compiled as in a
     * process that has compacted a while (background compaction runs every
     * second): one compaction per iteration would otherwise be measured
     * mostly in the interpreter. 0 measures it cold.
     */
    @Param("30")
    public int jitWarmup;

    /** When the keyed owner checks its filing during the compaction: {@code warmup}, {@code always} or {@code never}. */
    @Param("warmup")
    public String check;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final byte[] template = new byte[1 << 20];
    private int[] sizes;
    private RegionKeyedCache cache;
    private ByteBufAllocator alloc;
    private SlabwiseAllocator slabwise;
    private Counters counters;
    private long before;
    private int iteration;

    /** Checks the parameters and makes the entry sizes. */
    @Setup(Level.Trial)
    public void setUp() {
        if (layout == CompactionBenchmark.Layout.blocks) {
            throw new IllegalArgumentException("blocks: a payload lies under several region keys, which this cache does not file");
        }
        if (!List.of("warmup", "always", "never").contains(check)) {
            throw new IllegalArgumentException("check is warmup, always or never: " + check);
        }
        if (thinMiB > cacheMiB) {
            throw new IllegalArgumentException("thinMiB must not exceed cacheMiB: " + thinMiB + " > " + cacheMiB);
        }
        new Random(5).nextBytes(template);
        String[] bounds = sizesKiB.split("-");
        if (bounds.length != 2) {
            throw new IllegalArgumentException("sizesKiB is min-max in KiB: " + sizesKiB);
        }
        int min = Integer.parseInt(bounds[0].trim()) * 1024;
        int max = Integer.parseInt(bounds[1].trim()) * 1024;
        if (min < 8 || max < min || max > template.length) {
            throw new IllegalArgumentException("entry sizes from 1 KiB to 1024 KiB, min <= max: " + sizesKiB);
        }
        sizes = RelocatableCache.logUniformSizes(1 << 14, min, max, 11);
        cache = new RegionKeyedCache(owner == Owner.keyed);
        ByteBufAllocator first = allocator.create();
        if (first instanceof SlabwiseAllocator) {
            warmUp((SlabwiseAllocator) first);
        }
    }

    /** {@link #jitWarmup} compactions of a small cache on {@code small}, each entry checked after; closes it. */
    private void warmUp(SlabwiseAllocator small) {
        try (small) {
            small.setRelocator(layout.category, cache);
            cache.verify(!"never".equals(check));
            IntFunction<ByteBuf> source = layout.source(small);
            for (int i = 0; i < jitWarmup; i++) {
                List<RegionKeyedCache.Entry> fillOrder = cache.fill(source, sizes, template, 16L << 20);
                cache.thinWindow(fillOrder, 4L << 20, 8L << 20, 0.5 + 0.4 * (i % 2), i);
                small.compact();
                cache.checkAll();
            }
            cache.clear();
        }
    }

    /**
     * Makes a fresh allocator (Slabwise: the cache as its entries' owner),
     * fills the cache, thins the window, gives back what can go without
     * moving anything and collects the setup's garbage, so that a
     * collection does not fall into the timed compaction.
     */
    @Setup(Level.Iteration)
    public void fragment(IterationParams params) {
        alloc = allocator.create();
        IntFunction<ByteBuf> source;
        if (alloc instanceof SlabwiseAllocator) {
            slabwise = (SlabwiseAllocator) alloc;
            source = layout.source(slabwise);
            slabwise.setRelocator(layout.category, cache);
        } else {
            slabwise = null;
            source = alloc::directBuffer;
        }
        cache.verify("always".equals(check) || "warmup".equals(check) && params.getType() == IterationType.WARMUP);
        long cacheBytes = (long) cacheMiB << 20;
        long window = (long) thinMiB << 20;
        List<RegionKeyedCache.Entry> fillOrder = cache.fill(source, sizes, template, cacheBytes);
        cache.thinWindow(fillOrder, (cacheBytes - window) / 2, window, freed, 1000L + iteration++);
        fillOrder = null;
        before = trim();
        cache.resetCounts();
        System.gc();
    }

    /** Gives back what the allocator can without moving anything; returns the committed bytes after. */
    private long trim() {
        if (slabwise != null) {
            slabwise.trim();
        } else if (alloc instanceof PooledByteBufAllocator) {
            ((PooledByteBufAllocator) alloc).trimCurrentThreadCache();
        }
        return slabwise != null ? slabwise.pool().committedBytes()
                : ((ByteBufAllocatorMetricProvider) alloc).metric().usedDirectMemory();
    }

    /** One compaction (Slabwise); nothing for Netty's allocators, which cannot move their buffers. */
    @Benchmark
    public long compact(Counters counters) {
        this.counters = counters;
        counters.entries = cache.size();
        long allocated = THREADS.getCurrentThreadAllocatedBytes();
        CompactionStats done = slabwise != null ? slabwise.compact() : CompactionStats.NONE;
        counters.garbageBytes = THREADS.getCurrentThreadAllocatedBytes() - allocated;
        counters.movedEntries = done.movedEntries();
        counters.movedBytes = done.movedBytes();
        counters.freedBytes = done.bytesFreed();
        counters.chunksEvacuated = done.chunksEvacuated();
        counters.poolNanos = done.nanos();
        return done.movedBytes();
    }

    /**
     * After the operation, outside its time: checks every entry's stamps,
     * takes the owner's figures and the memory after one more trim, then
     * releases the cache and closes a Slabwise allocator.
     */
    @TearDown(Level.Iteration)
    public void afterCompaction() {
        cache.checkAll();
        if (counters != null) {
            counters.lookedAt = cache.lookedAt();
            counters.regionKeys = cache.keysGiven();
            counters.ownerNanos = cache.relocateNanos();
            counters.movingNanos = cache.movingNanos();
            counters.liveBytes = cache.liveBytes();
            counters.committedBefore = before;
            counters.committedTrimmed = trim();
        }
        cache.clear();
        if (slabwise != null) {
            slabwise.close();
        }
    }
}
