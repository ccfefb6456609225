package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocatorMetric;
import io.slabwise.PoolStats;
import io.slabwise.netty.SlabwiseAllocator;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * What a metrics scraper costs the allocation path: the latency distribution
 * of allocate+release of a 1 KiB direct buffer on two threads sharing one
 * allocator, with and without a third thread reading the allocator's
 * statistics at a fixed rate.
 *
 * <p>The requirement is that a snapshot never makes an allocating thread wait,
 * so the tail (p99.9) with a 100 Hz reader must stay within 10% of the tail
 * without one. Run in {@link Mode#SampleTime}: every sampled invocation is
 * timed on its own, so a stall of one operation shows in the percentiles
 * instead of vanishing in an average.
 *
 * <pre>
 *   benchmark thread 1 ──alloc/release──alloc/release──alloc/release── ...
 *   benchmark thread 2 ──alloc/release──alloc/release──alloc/release── ...
 *                                 │             │             │
 *   reader (daemon)     ──park────read──park────read──park────read──── ...
 *                             (every 1/rate seconds, on a fixed schedule)
 * </pre>
 *
 * What the reader reads, per allocator:
 * <ul>
 *   <li>{@code slabwise}: {@link SlabwiseAllocator#stats()}, the full
 *       snapshot (every thread's counters, every arena's chunks).</li>
 *   <li>{@code pooled}: {@code metric().usedDirectMemory()} and
 *       {@code numActiveAllocations()} of every direct arena, as Micrometer's
 *       Netty binder reads them.</li>
 *   <li>{@code adaptive} (and {@code unpooled}):
 *       {@code metric().usedDirectMemory()}.</li>
 * </ul>
 *
 * <p>The machine this was written for has two cores, so the reader, when it
 * wakes, takes a core from a benchmark thread whichever allocator it reads;
 * compare each allocator's ratio with the other allocators' ratios, not with
 * 1.0 alone. Leak detection is off so that its sampling does not dominate the
 * tail. At teardown the fork prints how many reads the reader made and how
 * long they took: a reader that waits for a core falls behind its rate, and
 * skips the reads it missed instead of making them in a burst.
 *
 * <p>By default Slabwise makes a new buffer object per allocation (about
 * 144 B/op in {@code gc.alloc.rate.norm}), so its tail also holds young-GC
 * pauses that Netty's recycled buffer objects avoid; add
 * {@code -jvmArgs -Dslabwise.recycleBuffers=true} to take them out.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Threads(2)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        "-Dio.netty.leakDetection.level=disabled",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class StatsReaderBenchmark {

    private static final int SIZE = 1024;

    /** The allocator under test. */
    @Param({"slabwise", "pooled", "adaptive"})
    public AllocatorKind allocator;

    /** How often the reader thread reads the statistics: {@code none}, or a rate such as {@code 100hz}. */
    @Param({"none", "100hz", "1000hz"})
    public String reader;

    private ByteBufAllocator alloc;
    private StatsReader statsReader;

    /** Makes a fresh allocator for the trial and starts the reader, if any. */
    @Setup(Level.Trial)
    public void setUp() {
        alloc = allocator.create();
        int hertz = hertz(reader);
        if (hertz > 0) {
            statsReader = new StatsReader(alloc, hertz);
            statsReader.start();
        }
    }

    /** Stops the reader and says how often it read and how long a read took. */
    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        if (statsReader != null) {
            statsReader.finish();
            System.out.println(statsReader.summary());
            statsReader = null;
        }
    }

    /** Allocates and releases one 1 KiB direct buffer. */
    @Benchmark
    public int allocateRelease() {
        ByteBuf buf = alloc.directBuffer(SIZE);
        int capacity = buf.capacity();
        buf.release();
        return capacity;
    }

    /** The rate a {@link #reader} parameter names: 0 for {@code none}, n for {@code <n>hz}. */
    static int hertz(String reader) {
        String name = reader.toLowerCase(Locale.ROOT);
        if (name.equals("none")) {
            return 0;
        }
        if (name.endsWith("hz")) {
            try {
                int hertz = Integer.parseInt(name.substring(0, name.length() - 2));
                if (hertz > 0) {
                    return hertz;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
        }
        throw new IllegalArgumentException("reader must be none or <n>hz, such as 100hz: " + reader);
    }

    /**
     * Reads what a metrics scraper reads from {@code alloc} and returns a
     * figure from it, so the read cannot be optimised away.
     */
    static long readStats(ByteBufAllocator alloc) {
        if (alloc instanceof SlabwiseAllocator) {
            PoolStats stats = ((SlabwiseAllocator) alloc).stats();
            return stats.reservedBytes() + stats.liveAllocations();
        }
        if (alloc instanceof PooledByteBufAllocator) {
            PooledByteBufAllocatorMetric metric = ((PooledByteBufAllocator) alloc).metric();
            long sum = metric.usedDirectMemory();
            for (PoolArenaMetric arena : metric.directArenas()) {
                sum += arena.numActiveAllocations();
            }
            return sum;
        }
        return ((ByteBufAllocatorMetricProvider) alloc).metric().usedDirectMemory();
    }

    /**
     * A daemon thread that reads the statistics on a fixed schedule (each
     * deadline one period after the last, not after the read ended) until
     * {@link #finish} is called.
     */
    private static final class StatsReader extends Thread {

        private final ByteBufAllocator alloc;
        private final int hertz;
        private final long periodNanos;
        private volatile boolean running = true;
        /** The last figure read; volatile so that no read is dead code. */
        private volatile long lastFigure;
        // written by the reader thread, read after join()
        private long reads;
        private long readNanos;
        private long longestReadNanos;
        private long startNanos;
        private long endNanos;

        StatsReader(ByteBufAllocator alloc, int hertz) {
            super("stats-reader-" + hertz + "hz");
            this.alloc = alloc;
            this.hertz = hertz;
            this.periodNanos = TimeUnit.SECONDS.toNanos(1) / hertz;
            setDaemon(true);
        }

        @Override
        public void run() {
            startNanos = System.nanoTime();
            long deadline = startNanos;
            while (running) {
                deadline += periodNanos;
                long now;
                while (running && (now = System.nanoTime()) - deadline < 0) {
                    LockSupport.parkNanos(deadline - now);
                }
                if (!running) {
                    break;
                }
                long before = System.nanoTime();
                lastFigure = readStats(alloc);
                long took = System.nanoTime() - before;
                reads++;
                readNanos += took;
                longestReadNanos = Math.max(longestReadNanos, took);
                if (System.nanoTime() - deadline > periodNanos) {
                    // fell a whole period behind (the reader was not scheduled): do not catch up in a burst
                    deadline = System.nanoTime();
                }
            }
            endNanos = System.nanoTime();
        }

        void finish() throws InterruptedException {
            running = false;
            LockSupport.unpark(this);
            join();
        }

        String summary() {
            double seconds = (endNanos - startNanos) / 1e9;
            return String.format(Locale.ROOT,
                    "stats reader, %d Hz asked: %d reads in %.1f s (%.1f Hz), mean read %.1f us, longest %.1f us"
                            + " (last figure %d)",
                    hertz, reads, seconds, reads / seconds, reads == 0 ? 0.0 : readNanos / 1e3 / reads,
                    longestReadNanos / 1e3, lastFigure);
        }
    }
}
