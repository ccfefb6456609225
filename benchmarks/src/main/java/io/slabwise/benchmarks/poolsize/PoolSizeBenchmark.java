package io.slabwise.benchmarks.poolsize;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocatorMetric;
import io.netty.util.Version;
import io.netty.util.internal.PlatformDependent;
import io.slabwise.PoolStats;
import io.slabwise.benchmarks.CommandLine;
import io.slabwise.netty.SlabwiseAllocator;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * Pool size: what an allocator's operations cost when it holds 1 GiB of live
 * buffers and when it holds hundreds of GiB, Slabwise beside Netty's
 * {@link PooledByteBufAllocator}. A cost that grows with the pool (a walk of
 * every chunk on an allocation, a statistic or a trim) shows as a time per
 * GiB that rises with the pool size.
 *
 * <h2>Memory is mapped, never touched</h2>
 * Nothing is ever written into a buffer, and both allocators must take their
 * chunks without writing into them, so that a pool of 256 GiB runs on a
 * machine with a few GiB of memory: only the pages an allocator writes its own
 * headers into become resident.
 * <ul>
 *   <li>Slabwise on Java 22 or later, whose default chunk source maps every
 *       chunk with {@code mmap} (its Java 22 classes must be in the jar: build
 *       it on a JDK 22 or later). Its {@code maxMemory} is set above the
 *       pool.</li>
 *   <li>Netty's pooled allocator with direct buffers without a cleaner
 *       ({@code PlatformDependent.useDirectBufferNoCleaner()}), whose chunks
 *       come from {@code malloc} and are not zeroed; it needs
 *       {@code sun.misc.Unsafe} and the reflective access Netty asks for
 *       ({@code -Dio.netty.tryReflectionSetAccessible=true}, {@code --add-opens}
 *       of {@code java.nio} and {@code jdk.internal.misc}, and on Java 24 and
 *       later {@code --sun-misc-unsafe-memory-access=allow}), and
 *       {@code -XX:MaxDirectMemorySize} above the pool.</li>
 * </ul>
 * A run whose allocator would write its chunks (Netty's direct buffers with a
 * cleaner, whose memory the JDK zeroes; Slabwise's direct chunk source) is
 * refused above {@value #TOUCHED_LIMIT_GIB} GiB. The resident memory after
 * every fill is reported, to show that the chunks stayed untouched.
 *
 * <h2>What is measured, per allocator and buffer size</h2>
 * A fresh allocator; a warm-up fill of {@code --warmup-gib} GiB (default the
 * whole pool) on this thread, all released, repeated until at least
 * {@value #MIN_WARMUP_BUFFERS} buffers were allocated (one fill of a small
 * pool is too few operations for the JIT: a 1 GiB fill of 64 KiB buffers took
 * 3-6 times as long after one warm-up fill as after ten); then the measured fill: live
 * buffers of {@code directBuffer(size, size)} until they hold the pool's
 * {@code --pool-gib} GiB, with the time at every GiB. Then:
 * <ul>
 *   <li>{@code msPerGiB}: the median time of the last three GiB of the fill
 *       (with fewer than three GiB: the whole fill's time per GiB), beside the
 *       first GiB's time and the whole fill's;</li>
 *   <li>the heap the allocator added for the fill: heap used after a full
 *       collection (two {@link System#gc()} calls, then what the last
 *       collection left in the heap's pools), after the fill minus before it,
 *       per GiB and per live buffer; the array holding the buffers exists
 *       before the first reading, so it is not counted;</li>
 *   <li>the process's mappings (lines of {@code /proc/self/maps}) and resident
 *       memory ({@code VmRSS}) after the fill;</li>
 *   <li>after the fill of the first buffer size only (the probes; none with
 *       {@code --latency-sizes none}), with the pool still full: allocate+release latency of each
 *       {@code --latency-sizes} case, every operation timed on its own
 *       (p50, p99, p99.9, max, nearest rank) after a warm-up of a tenth as
 *       many operations; a case is a size in bytes or {@code mixed}, sizes
 *       from 96 to 448 KiB drawn at random (above the largest size a thread
 *       cache keeps, so that an allocation reaches the arena: one size over
 *       and over is served by Slabwise's large slot, a one-entry cache above
 *       the cached sizes);</li>
 *   <li>then the time of a statistics read (Slabwise: {@code stats()}; Netty:
 *       {@code metric().usedDirectMemory()} and every direct arena's
 *       {@code numActiveAllocations()} and {@code numActiveBytes()}) and of a
 *       trim with nothing idle (Slabwise: {@code trim()}; Netty:
 *       {@code trimCurrentThreadCache()}), each the median of
 *       {@value #REPEATS} calls; the release of the older half of the
 *       buffers; {@code close()} with the other half live (Slabwise only:
 *       Netty's pooled allocator has none); and the release of that other
 *       half in the closed pool.</li>
 * </ul>
 * With {@code --holes}, every fill ends instead by releasing the buffers of
 * every other chunk's worth (in the order they were allocated), so that every
 * other chunk goes back and the mappings of the chunks, which the kernel
 * merges while they are adjacent, are cut apart: the number of mappings a
 * pool of that many chunks can come to, and what the allocator does when
 * the kernel refuses one more ({@code vm.max_map_count}).
 *
 * With {@code --threads N} (N above 1), a fill of 256 KiB buffers by N
 * threads together, each filling its share of the pool, on an allocator with
 * N arenas (Slabwise: {@code arenas(N)} and {@code arenaSpreadBytes(0)}, so
 * every thread has an arena from its first allocation; Netty:
 * {@code nDirectArena} N): time per GiB of the whole pool, measured as for one
 * thread, after a warm-up fill of the same threads' kind.
 *
 * <h2>Allocators</h2>
 * {@code slabwise}: {@link SlabwiseAllocator} with {@code chunkSize(--chunk-size)}
 * and {@code maxMemory} of the pool plus an eighth (at least 1 GiB), its other
 * settings the defaults. {@code pooled}: {@code PooledByteBufAllocator} with
 * direct buffers preferred, the chunk size of {@code --chunk-size} (its
 * {@code maxOrder}), Netty's defaults otherwise, and thread caches on every
 * thread ({@code useCacheForAllThreads}), as in the other benchmarks, since
 * these threads are plain ones.
 *
 * <h2>Output</h2>
 * One line per result, {@code key=value} pairs after a kind: {@code env}
 * (the JVM, Netty, whether Netty has direct buffers without a cleaner, the
 * kernel's mapping limit), {@code fill}, {@code latency}, {@code ops}, and
 * {@code failed} for a step that threw (the mapping count then, and the
 * exception; its stack trace goes to standard error). The exit status is 1
 * if any step failed, 2 for a refused command line.
 *
 * <pre>
 * java -Xmx4g -XX:MaxDirectMemorySize=22g --enable-native-access=ALL-UNNAMED \
 *     --sun-misc-unsafe-memory-access=allow -Dio.netty.tryReflectionSetAccessible=true \
 *     --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.misc=ALL-UNNAMED \
 *     -Dio.netty.leakDetection.level=disabled \
 *     -cp benchmarks/target/benchmarks.jar io.slabwise.benchmarks.poolsize.PoolSizeBenchmark \
 *     --pool-gib 16 [--allocators slabwise,pooled] [--sizes 262144,65536,4096] [--warmup-gib G]
 *     [--chunk-size BYTES] [--threads 8] [--latency-sizes 16384,262144,mixed] [--latency-ops 100000] [--holes]
 * </pre>
 * {@code benchmarks/run-pool-size.sh} runs it at several pool sizes over
 * several rounds and prints the tables.
 */
public final class PoolSizeBenchmark {

    private static final Set<String> OPTIONS = Set.of("pool-gib", "allocators", "sizes", "warmup-gib", "chunk-size",
            "threads", "latency-sizes", "latency-ops", "holes", "help");
    private static final Set<String> FLAGS = Set.of("holes", "help");
    private static final long GIB = 1L << 30;
    private static final double MIB = 1024.0 * 1024.0;
    /** The largest pool a run whose allocator writes its chunks may ask for. */
    private static final int TOUCHED_LIMIT_GIB = 2;
    /** Calls of a statistics read or a trim whose median is reported. */
    private static final int REPEATS = 5;
    /** Buffers the warm-up allocates at least, in as many fills as that takes (at least one). */
    private static final long MIN_WARMUP_BUFFERS = 250_000;
    /** The buffer size of the fill by several threads. */
    private static final int PARALLEL_SIZE = 256 * 1024;
    /** The latency case of sizes the thread cache does not keep, drawn at random, so that its one large slot rarely serves. */
    private static final String MIXED = "mixed";
    /** The sizes of {@link #MIXED}: above the largest cached size (64 KiB), below Slabwise's dedicated regions (512 KiB). */
    private static final int[] MIXED_SIZES = {96 << 10, 128 << 10, 160 << 10, 192 << 10, 256 << 10, 320 << 10, 384 << 10,
        448 << 10};
    private static final Path MAPS = Path.of("/proc/self/maps");
    private static final Path STATUS = Path.of("/proc/self/status");

    private final int poolGiB;
    private final int warmupGiB;
    private final int chunkSize;
    private final String[] latencySizes;
    private final int latencyOps;
    /** Whether the fills end by releasing every other chunk's buffers (see {@link #punchHoles}), instead of the probes. */
    private final boolean holes;
    private boolean failed;

    private PoolSizeBenchmark(int poolGiB, int warmupGiB, int chunkSize, String[] latencySizes, int latencyOps,
                              boolean holes) {
        this.holes = holes;
        this.poolGiB = poolGiB;
        this.warmupGiB = warmupGiB;
        this.chunkSize = chunkSize;
        this.latencySizes = latencySizes;
        this.latencyOps = latencyOps;
    }

    /** Entry point; see the class comment for the options. */
    public static void main(String[] args) throws Exception {
        Map<String, String> options;
        try {
            options = CommandLine.parse(args, OPTIONS, FLAGS);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        if (options.containsKey("help") || !options.containsKey("pool-gib")) {
            System.out.println("options: --pool-gib G [--allocators slabwise,pooled] [--sizes 262144,65536,4096]"
                    + " [--warmup-gib W (default G)] [--chunk-size BYTES (4194304)] [--threads N (0: no parallel fill)]"
                    + " [--latency-sizes 16384,262144,mixed (none: no probes)] [--latency-ops 100000] [--holes]");
            System.exit(options.containsKey("help") ? 0 : 2);
        }
        int poolGiB = Integer.parseInt(options.get("pool-gib"));
        int warmupGiB = Integer.parseInt(options.getOrDefault("warmup-gib", String.valueOf(poolGiB)));
        int chunkSize = Integer.parseInt(options.getOrDefault("chunk-size", String.valueOf(4 << 20)));
        int threads = Integer.parseInt(options.getOrDefault("threads", "0"));
        int latencyOps = Integer.parseInt(options.getOrDefault("latency-ops", "100000"));
        String[] allocators = options.getOrDefault("allocators", "slabwise,pooled").split(",");
        int[] sizes = sizes(options.getOrDefault("sizes", "262144,65536"));
        String latency = options.getOrDefault("latency-sizes", "16384,262144," + MIXED);
        String[] latencySizes = latency.equals("none") ? new String[0] : latency.split(",");
        for (String size : latencySizes) {
            if (!size.equals(MIXED) && Integer.parseInt(size) < 1) {
                throw new IllegalArgumentException("a latency size is positive or " + MIXED + ": " + size);
            }
        }
        if (poolGiB < 1 || warmupGiB < 0 || warmupGiB > poolGiB || threads < 0 || latencyOps < 100
                || Integer.bitCount(chunkSize) != 1 || (threads > 1 && GIB / PARALLEL_SIZE * poolGiB % threads != 0)) {
            System.err.println("refused: --pool-gib at least 1, --warmup-gib from 0 to it, --chunk-size a power of two,"
                    + " --latency-ops at least 100, --threads dividing the pool's 256 KiB buffers");
            System.exit(2);
        }
        for (String allocator : allocators) {
            if (!allocator.equals("slabwise") && !allocator.equals("pooled")) {
                System.err.println("refused: unknown allocator " + allocator + " (slabwise or pooled)");
                System.exit(2);
            }
        }

        PoolSizeBenchmark benchmark = new PoolSizeBenchmark(poolGiB, warmupGiB, chunkSize, latencySizes, latencyOps,
                options.containsKey("holes"));
        System.out.println("env java=" + Runtime.version() + " vm=" + System.getProperty("java.vm.name").replace(' ', '_')
                + " netty=" + nettyVersion() + " noCleaner=" + PlatformDependent.useDirectBufferNoCleaner()
                + " unsafe=" + PlatformDependent.hasUnsafe() + " maxDirectGiB=" + gib(PlatformDependent.maxDirectMemory())
                + " heapMaxGiB=" + gib(Runtime.getRuntime().maxMemory()) + " maxMapCount=" + maxMapCount()
                + " maps=" + mappings() + " poolGiB=" + poolGiB + " warmupGiB=" + warmupGiB + " chunkSize=" + chunkSize
                + " slabwiseChunkSource=" + slabwiseChunkSource());
        for (String allocator : allocators) {
            benchmark.refuseTouchedMemory(allocator);
            if (allocator.equals("slabwise")) {
                warmUpClose();
            }
        }
        for (String allocator : allocators) {
            for (int i = 0; i < sizes.length; i++) {
                benchmark.fillOneThread(allocator, sizes[i], i == 0 && latencySizes.length > 0);
            }
            if (threads > 1) {
                benchmark.fillThreads(allocator, threads);
            }
        }
        System.exit(benchmark.failed ? 1 : 0);
    }

    /** Exits with 2 when {@code allocator} would write every chunk it takes and the pool is more than a few GiB. */
    private void refuseTouchedMemory(String allocator) {
        if (poolGiB <= TOUCHED_LIMIT_GIB) {
            return;
        }
        String why = null;
        if (allocator.equals("pooled") && !PlatformDependent.useDirectBufferNoCleaner()) {
            why = "Netty's direct buffers have a cleaner here, and the JDK zeroes their memory: run with"
                    + " -Dio.netty.tryReflectionSetAccessible=true --add-opens java.base/java.nio=ALL-UNNAMED"
                    + " --add-opens java.base/jdk.internal.misc=ALL-UNNAMED (and --sun-misc-unsafe-memory-access=allow"
                    + " on Java 24 and later)";
        } else if (allocator.equals("slabwise")) {
            String source = slabwiseChunkSource();
            if (!source.equals("mapped")) {
                why = "Slabwise's chunk source here is '" + source + "', which zeroes its chunks: run on Java 22 or later"
                        + " with a jar built there (its Java 22 classes map chunks), on Linux x86-64 or AArch64";
            }
        }
        if (why != null) {
            System.err.println("refused: a pool of " + poolGiB + " GiB would be written to memory. " + why);
            System.exit(2);
        }
    }

    /** The chunk source a Slabwise pool has by default here: {@code mapped} on Java 22 and later (Linux). */
    private static String slabwiseChunkSource() {
        SlabwiseAllocator probe = SlabwiseAllocator.builder().maxMemory(GIB).build();
        String source = String.valueOf(probe.pool().config().chunkSource());
        probe.close();
        return source;
    }

    /**
     * Closes a small pool with a buffer live, once, so that the warning such a
     * close logs has set up the JVM's logging before a measured close: the
     * first record logged in a JVM takes tens of milliseconds, once.
     */
    private static void warmUpClose() {
        SlabwiseAllocator small = SlabwiseAllocator.builder().maxMemory(GIB).build();
        ByteBuf buffer = small.directBuffer(1024, 1024);
        small.close();
        buffer.release();
    }

    /** A fresh allocator of {@code kind}; with {@code arenas} above 0, that many arenas, every one in use. */
    private ByteBufAllocator create(String kind, int arenas) {
        if (kind.equals("slabwise")) {
            SlabwiseAllocator.Builder builder = SlabwiseAllocator.builder().chunkSize(chunkSize)
                    .maxMemory(poolGiB * GIB + Math.max(GIB, poolGiB * GIB / 8));
            if (arenas > 0) {
                builder.arenas(arenas).arenaSpreadBytes(0);
            }
            return builder.build();
        }
        int pageSize = PooledByteBufAllocator.defaultPageSize();
        int maxOrder = Integer.numberOfTrailingZeros(Math.max(1, chunkSize / pageSize));
        return new PooledByteBufAllocator(true, PooledByteBufAllocator.defaultNumHeapArena(),
                arenas > 0 ? arenas : PooledByteBufAllocator.defaultNumDirectArena(), pageSize, maxOrder,
                PooledByteBufAllocator.defaultSmallCacheSize(), PooledByteBufAllocator.defaultNormalCacheSize(), true);
    }

    /** The fill by this thread of buffers of {@code size}, and the probes at full size if {@code probes}. */
    private void fillOneThread(String kind, int size, boolean probes) throws InterruptedException {
        ByteBufAllocator allocator = create(kind, 0);
        ByteBuf[] live = new ByteBuf[(int) (poolGiB * (GIB / size))];
        String what = "allocator=" + kind + " poolGiB=" + poolGiB + " size=" + size + " threads=1";
        Fill fill = new Fill(live, size);
        try {
            long warmup = System.nanoTime();
            int warmupBuffers = live.length / poolGiB * warmupGiB;
            for (int round = warmupRounds(warmupBuffers); round > 0; round--) {
                fill.run(allocator, warmupBuffers, null);
                fill.releaseAll();
            }
            warmup = System.nanoTime() - warmup;
            long heapBefore = heapAfterGc();
            int mapsBefore = mappings();
            long[] stamps = new long[poolGiB + 1];
            fill.run(allocator, live.length, stamps);
            report(what, allocator, stamps, warmup, heapBefore, mapsBefore, live.length);
            if (holes) {
                punchHoles(what, allocator, live, size);
            } else if (probes) {
                probe(what, allocator, live);
            }
        } catch (Throwable t) {
            fail(what, "fill", fill.filled * (double) size / GIB, t);
        } finally {
            fill.releaseAll();
            close(allocator);
        }
    }

    /** The fill by {@code threads} threads together, each on an arena of its own. */
    private void fillThreads(String kind, int threads) throws InterruptedException {
        ByteBufAllocator allocator = create(kind, threads);
        int share = (int) (poolGiB * (GIB / PARALLEL_SIZE) / threads);
        Fill[] fills = new Fill[threads];
        for (int t = 0; t < threads; t++) {
            fills[t] = new Fill(new ByteBuf[share], PARALLEL_SIZE);
        }
        String what = "allocator=" + kind + " poolGiB=" + poolGiB + " size=" + PARALLEL_SIZE + " threads=" + threads;
        try {
            long warmup = System.nanoTime();
            int warmupShare = share / poolGiB * warmupGiB;
            for (int round = warmupRounds((long) warmupShare * threads); round > 0; round--) {
                together(allocator, fills, warmupShare, null);
                for (Fill fill : fills) {
                    fill.releaseAll();
                }
            }
            warmup = System.nanoTime() - warmup;
            long heapBefore = heapAfterGc();
            int mapsBefore = mappings();
            long[] stamps = new long[poolGiB + 1];
            together(allocator, fills, share, stamps);
            report(what, allocator, stamps, warmup, heapBefore, mapsBefore, (long) share * threads);
        } catch (Throwable t) {
            long filled = 0;
            for (Fill fill : fills) {
                filled += fill.filled;
            }
            fail(what, "fill", filled * (double) PARALLEL_SIZE / GIB, t);
        } finally {
            for (Fill fill : fills) {
                fill.releaseAll();
            }
            close(allocator);
        }
    }

    /**
     * Runs the fills on one new thread each, started together; the first
     * failure of any is thrown here. The stamps, if any, are of the whole
     * pool's GiB as the threads reach them together.
     */
    private static void together(ByteBufAllocator allocator, Fill[] fills, int count, long[] stamps) throws Throwable {
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong total = new AtomicLong();
        Thread[] threads = new Thread[fills.length];
        for (int t = 0; t < fills.length; t++) {
            Fill fill = fills[t];
            threads[t] = new Thread(() -> {
                try {
                    start.await();
                    fill.runCounted(allocator, count, stamps == null ? null : new Shared(total, stamps));
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "fill-" + t);
            threads[t].start();
        }
        if (stamps != null) {
            stamps[0] = System.nanoTime();
        }
        start.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
        if (failure.get() != null) {
            throw failure.get();
        }
    }

    /**
     * The probes at full size: latencies, a statistics read, a trim, the
     * release of the older half of the buffers, close, and the release of the
     * other half in the closed pool.
     */
    private void probe(String what, ByteBufAllocator allocator, ByteBuf[] live) {
        for (String latency : latencySizes) {
            try {
                long[] p = allocateRelease(allocator, latency);
                System.out.println("latency " + what.replace(" size=", " fillSize=") + " size=" + latency + " ops=" + latencyOps
                        + " p50=" + p[0] + " p99=" + p[1] + " p999=" + p[2] + " max=" + p[3]);
            } catch (Throwable t) {
                fail(what, "latency-" + latency, poolGiB, t);
            }
        }
        StringBuilder line = new StringBuilder("ops ").append(what);
        try {
            line.append(" statsUs=").append(micros(medianNanos(() -> statistics(allocator))));
            line.append(" trimUs=").append(micros(medianNanos(() -> trim(allocator))));
            line.append(" chunks=").append(allocator instanceof SlabwiseAllocator ? ((SlabwiseAllocator) allocator).stats().chunks()
                    : nettyChunks((PooledByteBufAllocator) allocator));
            int half = live.length / 2;
            line.append(" releaseHalfOpenMs=").append(millis(release(live, 0, half)));
            if (allocator instanceof SlabwiseAllocator) {
                long start = System.nanoTime();
                ((SlabwiseAllocator) allocator).close();
                line.append(" closeUs=").append(micros(System.nanoTime() - start));
                line.append(" releaseHalfClosedMs=").append(millis(release(live, half, live.length)));
            } else {
                line.append(" closeUs=NA releaseHalfClosedMs=NA");
                release(live, half, live.length);
            }
            System.out.println(line);
        } catch (Throwable t) {
            System.out.println(line);
            fail(what, "ops", poolGiB, t);
        }
    }

    /**
     * Releases the buffers of every other chunk's worth (groups of
     * {@code chunkSize / size} buffers, in the order they were allocated), so
     * that every other chunk goes back to the operating system and the
     * chunks' mappings, merged into a few while they were adjacent, are cut
     * apart: the most mappings a pool of this many chunks can need.
     */
    private void punchHoles(String what, ByteBufAllocator allocator, ByteBuf[] live, int size) {
        int group = Math.max(1, chunkSize / size);
        long released = 0;
        try {
            for (int first = 0; first < live.length; first += 2 * group) {
                for (int i = first; i < Math.min(first + group, live.length); i++) {
                    ByteBuf buffer = live[i];
                    live[i] = null;
                    buffer.release();
                    released++;
                }
            }
            System.out.println("holes " + what + " chunkSize=" + chunkSizeOf(allocator) + String.format(Locale.ROOT,
                    " releasedGiB=%.2f", released * (double) size / GIB) + " maps=" + mappings()
                    + " rssMiB=" + Math.round(status("VmRSS:") / MIB));
        } catch (Throwable t) {
            fail(what, "holes", released * (double) size / GIB, t);
        }
    }

    /** Releases the buffers from {@code from} to {@code to}; returns the time taken in ns. */
    private static long release(ByteBuf[] live, int from, int to) {
        long start = System.nanoTime();
        for (int i = from; i < to; i++) {
            live[i].release();
            live[i] = null;
        }
        return System.nanoTime() - start;
    }

    /**
     * Allocate+release of a latency case (a size in bytes, or {@value #MIXED}),
     * each operation timed: {p50, p99, p99.9, max} in ns, after a warm-up of a
     * tenth as many operations.
     */
    private long[] allocateRelease(ByteBufAllocator allocator, String latency) {
        int[] sizes = new int[1024];
        if (latency.equals(MIXED)) {
            SplittableRandom random = new SplittableRandom(42);
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = MIXED_SIZES[random.nextInt(MIXED_SIZES.length)];
            }
        } else {
            Arrays.fill(sizes, Integer.parseInt(latency));
        }
        for (int i = 0; i < latencyOps / 10; i++) {
            int size = sizes[i & (sizes.length - 1)];
            allocator.directBuffer(size, size).release();
        }
        long[] nanos = new long[latencyOps];
        for (int i = 0; i < nanos.length; i++) {
            int size = sizes[i & (sizes.length - 1)];
            long start = System.nanoTime();
            ByteBuf buffer = allocator.directBuffer(size, size);
            buffer.release();
            nanos[i] = System.nanoTime() - start;
        }
        Arrays.sort(nanos);
        return new long[] {rank(nanos, 0.50), rank(nanos, 0.99), rank(nanos, 0.999), nanos[nanos.length - 1]};
    }

    /** The value at percentile {@code p} of sorted values, nearest rank. */
    private static long rank(long[] sorted, double p) {
        return sorted[Math.max(0, (int) Math.ceil(p * sorted.length) - 1)];
    }

    /** A statistics read: what a metrics scrape asks of the allocator. */
    private static long statistics(ByteBufAllocator allocator) {
        if (allocator instanceof SlabwiseAllocator) {
            PoolStats stats = ((SlabwiseAllocator) allocator).stats();
            return stats.committedBytes() + stats.reservedBytes();
        }
        PooledByteBufAllocatorMetric metric = ((PooledByteBufAllocator) allocator).metric();
        long sum = metric.usedDirectMemory();
        for (PoolArenaMetric arena : metric.directArenas()) {
            sum += arena.numActiveAllocations() + arena.numActiveBytes();
        }
        return sum;
    }

    private static long trim(ByteBufAllocator allocator) {
        if (allocator instanceof SlabwiseAllocator) {
            return ((SlabwiseAllocator) allocator).trim();
        }
        return ((PooledByteBufAllocator) allocator).trimCurrentThreadCache() ? 1 : 0;
    }

    /** Netty's chunks in its direct arenas. */
    private static long nettyChunks(PooledByteBufAllocator allocator) {
        long chunks = 0;
        for (PoolArenaMetric arena : allocator.metric().directArenas()) {
            for (var list : arena.chunkLists()) {
                for (var ignored : list) {
                    chunks++;
                }
            }
        }
        return chunks;
    }

    /**
     * The warm-up fills of {@code buffersPerFill} buffers each that allocate at
     * least {@value #MIN_WARMUP_BUFFERS} buffers: at least one, and exactly
     * one when a fill allocates nothing ({@code --warmup-gib 0}).
     */
    private static int warmupRounds(long buffersPerFill) {
        return buffersPerFill <= 0 ? 1 : (int) Math.max(1, (MIN_WARMUP_BUFFERS + buffersPerFill - 1) / buffersPerFill);
    }

    /** What a timed operation returns, so that its work is used. */
    private interface Operation {
        long run();
    }

    private static long sink;

    /** The median time of {@value #REPEATS} runs of {@code operation}, in ns. */
    private static long medianNanos(Operation operation) {
        long[] nanos = new long[REPEATS];
        for (int i = 0; i < REPEATS; i++) {
            long start = System.nanoTime();
            sink += operation.run();
            nanos[i] = System.nanoTime() - start;
        }
        Arrays.sort(nanos);
        return nanos[REPEATS / 2];
    }

    /** Prints the line of a fill: its times, the heap it added, the mappings and resident memory after it. */
    private static void report(String what, ByteBufAllocator allocator, long[] stamps, long warmupNanos, long heapBefore,
                               int mapsBefore, long buffers) throws InterruptedException {
        int rss = (int) Math.round(status("VmRSS:") / MIB);
        int maps = mappings();
        long heapAfter = heapAfterGc();
        int gibs = stamps.length - 1;
        long[] perGiB = new long[gibs];
        for (int g = 0; g < gibs; g++) {
            perGiB[g] = stamps[g + 1] - stamps[g];
        }
        double msPerGiB;
        if (gibs >= 3) {
            long[] last = Arrays.copyOfRange(perGiB, gibs - 3, gibs);
            Arrays.sort(last);
            msPerGiB = last[1] / 1e6;
        } else {
            msPerGiB = (stamps[gibs] - stamps[0]) / 1e6 / gibs;
        }
        long growth = heapAfter - heapBefore;
        System.out.println("fill " + what + " chunkSize=" + chunkSizeOf(allocator)
                + String.format(Locale.ROOT, " msPerGiB=%.1f firstGiBMs=%.1f fillMs=%.0f warmupMs=%.0f", msPerGiB,
                        perGiB[0] / 1e6, (stamps[gibs] - stamps[0]) / 1e6, warmupNanos / 1e6)
                + " buffers=" + buffers + String.format(Locale.ROOT, " heapMiB=%.1f heapKiBPerGiB=%.1f heapBytesPerBuffer=%.1f",
                        growth / MIB, growth / 1024.0 / gibs, growth / (double) buffers)
                + " mapsBefore=" + mapsBefore + " maps=" + maps + " rssMiB=" + rss);
    }

    private static int chunkSizeOf(ByteBufAllocator allocator) {
        if (allocator instanceof SlabwiseAllocator) {
            return ((SlabwiseAllocator) allocator).pool().config().chunkSize();
        }
        return ((PooledByteBufAllocator) allocator).metric().chunkSize();
    }

    private void fail(String what, String step, double atGiB, Throwable t) {
        failed = true;
        StringBuilder error = new StringBuilder();
        for (Throwable cause = t; cause != null; cause = cause.getCause()) {
            error.append(error.length() == 0 ? "" : " <- ").append(cause.getClass().getName()).append(": ")
                    .append(cause.getMessage());
        }
        System.out.println("failed " + what + " step=" + step + String.format(Locale.ROOT, " atGiB=%.2f", atGiB)
                + " maps=" + mappings() + " error=" + error.toString().replace('\n', ' '));
        System.err.println("failed " + what + " step=" + step + ":");
        t.printStackTrace();
    }

    private static void close(ByteBufAllocator allocator) {
        if (allocator instanceof SlabwiseAllocator) {
            ((SlabwiseAllocator) allocator).close();
        } else {
            ((PooledByteBufAllocator) allocator).trimCurrentThreadCache();
        }
    }

    /** Buffers of one size filled into an array by one thread; {@link #filled} of them are live. */
    private static final class Fill {
        final ByteBuf[] live;
        final int size;
        volatile int filled;

        Fill(ByteBuf[] live, int size) {
            this.live = live;
            this.size = size;
        }

        /**
         * Fills the first {@code count} slots; with {@code stamps}, the time at
         * every GiB of this fill at [1..], after the start at [0].
         */
        void run(ByteBufAllocator allocator, int count, long[] stamps) {
            int perGiB = (int) (GIB / size);
            if (stamps != null) {
                stamps[0] = System.nanoTime();
            }
            for (int i = 0; i < count; i++) {
                live[i] = allocator.directBuffer(size, size);
                filled = i + 1;
                if (stamps != null && (i + 1) % perGiB == 0) {
                    stamps[(i + 1) / perGiB] = System.nanoTime();
                }
            }
        }

        /** Fills the first {@code count} slots, counting into {@code shared} (if any), which stamps the pool's GiB. */
        void runCounted(ByteBufAllocator allocator, int count, Shared shared) {
            for (int i = 0; i < count; i++) {
                live[i] = allocator.directBuffer(size, size);
                filled = i + 1;
                if (shared != null) {
                    shared.add(size);
                }
            }
        }

        void releaseAll() {
            for (int i = 0; i < filled; i++) {
                if (live[i] != null) {
                    live[i].release();
                    live[i] = null;
                }
            }
            filled = 0;
        }
    }

    /** The bytes several threads filled together, and the time each GiB of them was reached. */
    private static final class Shared {
        private final AtomicLong total;
        private final long[] stamps;

        Shared(AtomicLong total, long[] stamps) {
            this.total = total;
            this.stamps = stamps;
        }

        void add(int bytes) {
            long after = total.addAndGet(bytes);
            if (after % GIB == 0) { // sizes divide a GiB: exactly one add reaches each GiB
                stamps[(int) (after / GIB)] = System.nanoTime();
            }
        }
    }

    /**
     * Heap used after a full collection: two {@link System#gc()} calls, then
     * what the last collection left in the heap's pools.
     */
    private static long heapAfterGc() throws InterruptedException {
        System.gc();
        Thread.sleep(50);
        System.gc();
        long used = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            MemoryUsage left = pool.getType() == MemoryType.HEAP ? pool.getCollectionUsage() : null;
            if (left != null) {
                used += left.getUsed();
            }
        }
        return used > 0 ? used : ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** The process's mappings: lines of {@code /proc/self/maps}; -1 where it cannot be read. */
    private static int mappings() {
        try (Stream<String> lines = Files.lines(MAPS, StandardCharsets.US_ASCII)) {
            return (int) lines.count();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static String maxMapCount() {
        try {
            return Files.readAllLines(Path.of("/proc/sys/vm/max_map_count"), StandardCharsets.US_ASCII).get(0).trim();
        } catch (IOException | RuntimeException e) {
            return "NA";
        }
    }

    /** A field of {@code /proc/self/status} in bytes; -1 where it cannot be read. */
    private static long status(String name) {
        try {
            for (String line : Files.readAllLines(STATUS, StandardCharsets.US_ASCII)) {
                if (line.startsWith(name)) {
                    return Long.parseLong(line.substring(name.length()).trim().split("\\s+")[0]) * 1024;
                }
            }
            return -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static int[] sizes(String list) {
        List<Integer> sizes = new ArrayList<>();
        for (String size : list.split(",")) {
            int bytes = Integer.parseInt(size.trim());
            if (Integer.bitCount(bytes) != 1 || bytes > GIB) {
                throw new IllegalArgumentException("a buffer size is a power of two up to 1 GiB: " + size);
            }
            sizes.add(bytes);
        }
        return sizes.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Netty's version: every module has the same, and the shaded jar keeps the entry of one of them only. */
    private static String nettyVersion() {
        for (Version version : Version.identify().values()) {
            return version.artifactVersion();
        }
        return "unknown";
    }

    private static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.1f", bytes / (double) GIB);
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
    }

    private static String micros(long nanos) {
        return String.format(Locale.ROOT, "%.1f", nanos / 1e3);
    }
}
