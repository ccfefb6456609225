package io.slabwise.benchmarks.threads;

import io.slabwise.benchmarks.CommandLine;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PoolChunkListMetric;
import io.netty.buffer.PoolChunkMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.Version;
import io.slabwise.benchmarks.AllocatorKind;
import io.slabwise.netty.SlabwiseAllocator;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.management.ObjectName;

/**
 * Thread churn: what an allocator costs when the threads that use it are many
 * and short-lived, rather than a few long-lived event loops. One scenario per
 * JVM, one allocator per JVM, one parseable line of results.
 *
 * <h2>Scenarios</h2>
 * <ul>
 *   <li>{@code virtual}: N virtual threads (default 100,000), one per task
 *       of {@code Executors.newVirtualThreadPerTaskExecutor()}, each allocate
 *       one 1 KiB direct buffer, fill it, release it and end. Measured: the
 *       wall time from the first submission until the executor has
 *       terminated, the heap used after a full GC before and after, the
 *       process's resident memory before and after (and its peak), and the
 *       direct memory the allocator holds before and after. Needs Java 21;
 *       on an older JVM it prints that it was skipped and exits with 0. The
 *       executor is looked up by reflection because the module is compiled
 *       for Java 17.</li>
 *   <li>{@code platform}: M platform threads (default 20,000), started
 *       {@code --batch} at a time (default 200) and joined before the next
 *       batch, so no more than a few hundred are alive at once. Each
 *       allocates one 1 KiB direct buffer, fills it, stores it in a slot of
 *       a shared array (kept live) and dies. Measured: the heap used after a
 *       full GC minus the baseline, in total and per dead thread, and the wall
 *       time of all batches. The per-thread figure includes the live buffer's
 *       own objects (one to two hundred bytes on every allocator); the rest
 *       is what the allocator keeps for threads that are gone. Then every buffer is
 *       released, and the direct memory the allocator still holds is
 *       reported.</li>
 *   <li>{@code platform-live}: many live threads at once, as a broker with
 *       big thread pools runs. M platform threads (default 1,000) are
 *       started and held at a latch until every one has started; then they
 *       are released together, and each allocates and releases {@code --ops}
 *       direct buffers (default 1,000), 1 KiB and 64 KiB in turn, writing
 *       the first and last eight bytes of each, then waits, still alive, at
 *       a second latch. Measured: the wall time from the release to the
 *       last thread done, and that over every operation (an allocation and
 *       its release); while all the threads are alive at the second latch,
 *       the allocator's direct memory and the bytes its caches hold, the
 *       time one reading of those figures takes, and the heap used after a
 *       full GC; then the threads end, and the same figures are read at once,
 *       and again after Slabwise's {@code stats()} and {@code trim()} and a
 *       full GC (for every allocator): what caches keep for threads that
 *       are gone.</li>
 *   <li>{@code virtual-live}: the same with virtual threads, one per task
 *       of {@code Executors.newVirtualThreadPerTaskExecutor()}, by default
 *       as many and doing as much as in {@code platform-live}; needs Java 21.
 *       (100,000 of them held at once are more than Netty's pooled allocator
 *       with a cache on every thread fits in a 1 GiB heap: its thread cache
 *       measured about 88 KiB of heap each.)</li>
 * </ul>
 * The baseline of every scenario is taken after the allocator was made and
 * warmed by one allocation and release on the main thread, before any other
 * thread ran; the platform scenario's array of slots already exists then.
 * After the {@code virtual} scenario's threads have ended it also reports
 * the bytes in caches, and the direct memory and cached bytes after
 * Slabwise's {@code stats()} and {@code trim()} and a full GC, as the live
 * scenarios do.
 *
 * <h2>What the figures are</h2>
 * "Heap used after a full GC" is what the collector left in the heap's pools
 * ({@link MemoryPoolMXBean#getCollectionUsage()}), the least over
 * {@value #GC_ROUNDS} calls of {@link System#gc()} with short pauses between
 * them for reference processing and cleaners; resident
 * memory is {@code VmRSS} of {@code /proc/self/status} and covers the whole
 * JVM (the heap the JVM has committed, reported beside it, is part of it);
 * an allocator's direct memory is
 * {@code ByteBufAllocatorMetric.usedDirectMemory()}: for Slabwise its
 * committed bytes, for Netty the chunks its arenas hold. The bytes in caches
 * are read when no buffer is live: for Slabwise
 * {@code PoolStats.cachedBytes()} (thread caches and remote-free queues);
 * for Netty's pooled allocator what its direct arenas' chunks have handed
 * out ({@code chunkSize - freeBytes} over {@code PoolChunkMetric}s), that is
 * its thread caches and the subpages it keeps; Netty's adaptive allocator
 * exposes no such figure ({@code NA}). The JVM is cold: the
 * allocator's code is compiled while the threads run, as in a service that
 * has just started.
 *
 * <h2>The output line</h2>
 * {@code key=value} pairs: {@code millis} (wall time), {@code heapBeforeMiB},
 * {@code heapAfterMiB} and {@code heapGrowthMiB} (heap used after a full GC),
 * {@code bytesPerDeadThread} (platform: the growth over the thread count),
 * {@code rssBeforeMiB}, {@code rssAfterMiB}, {@code rssPeakMiB},
 * {@code heapCommittedMiB} (when the threads are done), {@code directBeforeMiB}
 * and {@code directAfterMiB}; the platform scenario adds
 * {@code heapReleasedMiB} and {@code directReleasedMiB} (after every buffer
 * was released) and {@code buffersHeld}; the virtual scenario adds
 * {@code cachedAfterMiB}, {@code directEndedMiB} and {@code cachedEndedMiB}.
 * The live scenarios print {@code ops}, {@code millis}, {@code nsPerOp},
 * {@code heapLiveGrowthMiB}, {@code directLiveMiB}, {@code cachedLiveMiB},
 * {@code threadCachesLive} (Netty pooled's {@code numThreadLocalCaches()},
 * else {@code NA}), {@code readMicros} (the least of five readings of the
 * direct and cached figures while the threads are alive), {@code rssLiveMiB},
 * {@code directJoinedMiB} and {@code cachedJoinedMiB} (once every thread has
 * ended), {@code directEndedMiB}, {@code cachedEndedMiB},
 * {@code threadCachesEnded} and {@code heapEndedGrowthMiB} (after the trim
 * and the GC), and {@code rssPeakMiB}. {@code failures} counts threads whose
 * allocation threw. A run with failures exits with 1.
 *
 * <h2>Running it</h2>
 * <pre>
 * java -Xmx256m --enable-native-access=ALL-UNNAMED -Dslabwise.noGlibcWarning=true \
 *     -cp benchmarks/target/benchmarks.jar io.slabwise.benchmarks.threads.ThreadChurnBenchmark \
 *     --allocator slabwise|pooled|adaptive|pooled-default --scenario virtual|platform|platform-live|virtual-live
 *     [--threads N] [--batch B] [--ops N] [--histogram ROWS] [--pause-at-end]
 * </pre>
 * {@code --histogram ROWS} prints the top rows of a live-object class
 * histogram (as {@code jcmd PID GC.class_histogram}) at the end of the
 * scenario, while the platform scenario's buffers are still live, and
 * again after the platform scenario released them;
 * {@code --pause-at-end} waits there for a line on standard input, so that
 * {@code jmap} or {@code jcmd} can look at the process.
 *
 * <h2>Allocators</h2>
 * Those of {@link AllocatorKind}, where {@code pooled} has thread caches on
 * every thread ({@code useCacheForAllThreads=true}), virtual threads included:
 * each thread then makes a full {@code PoolThreadCache}, which a live buffer
 * keeps reachable and which is freed only by finalization once its thread is
 * gone. {@code pooled-default} is the pooled allocator with Netty's defaults
 * ({@code useCacheForAllThreads=false} unless
 * {@code -Dio.netty.allocator.useCacheForAllThreads=true}): threads that are
 * neither {@code FastThreadLocalThread}s nor event loops get no cache.
 * {@code benchmarks/run-thread-churn.sh} runs
 * every scenario for all three allocators, each in its own JVM, over several
 * rounds, and prints medians and ratios.
 */
public final class ThreadChurnBenchmark {

    private static final Set<String> OPTIONS = Set.of("allocator", "scenario", "threads", "batch", "ops",
            "histogram", "pause-at-end", "help");
    private static final Set<String> FLAGS = Set.of("pause-at-end", "help");
    /** Netty's pooled allocator with Netty's own defaults, unlike {@link AllocatorKind#pooled}. */
    private static final String POOLED_DEFAULT = "pooled-default";
    private static final int DEFAULT_VIRTUAL_THREADS = 100_000;
    private static final int DEFAULT_PLATFORM_THREADS = 20_000;
    private static final int DEFAULT_BATCH = 200;
    private static final int DEFAULT_LIVE_THREADS = 1_000;
    private static final int DEFAULT_LIVE_OPS = 1_000;
    private static final int BUFFER_SIZE = 1024;
    /** The live scenarios' sizes, taken in turn. */
    private static final int[] LIVE_SIZES = {1024, 64 * 1024};
    /** Readings of the allocator's figures while the live threads wait, whose least time is reported. */
    private static final int READS = 5;
    /** Calls of {@link System#gc()} whose results heap use is the least of. */
    private static final int GC_ROUNDS = 5;
    private static final long GC_PAUSE_MILLIS = 50;
    private static final double MIB = 1024.0 * 1024.0;
    /** What every buffer is filled with: one full write of its capacity. */
    private static final byte[] PAYLOAD = payload();

    private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();

    private final String allocatorName;
    private final ByteBufAllocator allocator;
    private final AtomicInteger failures = new AtomicInteger();
    private final AtomicReference<Throwable> firstFailure = new AtomicReference<>();

    private ThreadChurnBenchmark(String allocatorName) {
        this.allocatorName = allocatorName;
        this.allocator = allocatorName.equals(POOLED_DEFAULT) ? new PooledByteBufAllocator(true)
                : AllocatorKind.valueOf(allocatorName).create();
    }

    /** Entry point; see the class comment for the options. */
    public static void main(String[] args) throws Exception {
        Map<String, String> options = parse(args);
        if (options.containsKey("help") || !options.containsKey("allocator") || !options.containsKey("scenario")) {
            System.out.println("options: --allocator slabwise|pooled|adaptive|pooled-default"
                    + " --scenario virtual|platform|platform-live|virtual-live"
                    + " [--threads N] [--batch B] [--ops N] [--histogram ROWS] [--pause-at-end]");
            System.exit(options.containsKey("help") ? 0 : 2);
        }
        String allocatorName = options.get("allocator");
        String scenario = options.get("scenario");
        int histogramRows = Integer.parseInt(options.getOrDefault("histogram", "0"));
        boolean pause = options.containsKey("pause-at-end");
        boolean virtual = scenario.equals("virtual") || scenario.equals("virtual-live");
        if (!virtual && !scenario.equals("platform") && !scenario.equals("platform-live")) {
            throw new IllegalArgumentException("unknown scenario: " + scenario
                    + " (virtual, platform, platform-live or virtual-live)");
        }
        Method virtualExecutor = virtual ? virtualThreadPerTaskExecutor() : null;
        if (virtual && virtualExecutor == null) {
            System.out.println("scenario=" + scenario + " allocator=" + allocatorName + " java=" + Runtime.version().feature()
                    + " skipped=no-virtual-threads-before-java-21");
            return;
        }

        ThreadChurnBenchmark benchmark = new ThreadChurnBenchmark(allocatorName);
        String result;
        if (scenario.equals("virtual")) {
            int threads = Integer.parseInt(options.getOrDefault("threads", String.valueOf(DEFAULT_VIRTUAL_THREADS)));
            result = benchmark.runVirtual(virtualExecutor, threads, histogramRows, pause);
        } else if (scenario.equals("platform")) {
            int threads = Integer.parseInt(options.getOrDefault("threads", String.valueOf(DEFAULT_PLATFORM_THREADS)));
            int batch = Integer.parseInt(options.getOrDefault("batch", String.valueOf(DEFAULT_BATCH)));
            result = benchmark.runPlatform(threads, batch, histogramRows, pause);
        } else {
            int threads = Integer.parseInt(options.getOrDefault("threads", String.valueOf(DEFAULT_LIVE_THREADS)));
            int ops = Integer.parseInt(options.getOrDefault("ops", String.valueOf(DEFAULT_LIVE_OPS)));
            result = benchmark.runLive(scenario, virtualExecutor, threads, ops, histogramRows, pause);
        }
        System.out.println(result);
        Throwable failure = benchmark.firstFailure.get();
        if (failure != null) {
            System.err.println(benchmark.failures.get() + " threads failed; the first failure:");
            failure.printStackTrace();
            System.exit(1);
        }
    }

    /**
     * The virtual scenario: {@code threads} virtual threads, each allocating,
     * filling and releasing one buffer.
     */
    private String runVirtual(Method newExecutor, int threads, int histogramRows, boolean pause) throws Exception {
        warmUp();
        long heapBefore = heapUsedAfterGc();
        long rssBefore = Resident.current();
        long directBefore = usedDirectMemory();

        long start = System.nanoTime();
        ExecutorService executor = (ExecutorService) newExecutor.invoke(null);
        for (int i = 0; i < threads; i++) {
            executor.execute(this::allocateFillRelease);
        }
        executor.shutdown();
        boolean done = executor.awaitTermination(10, TimeUnit.MINUTES);
        long nanos = System.nanoTime() - start;
        if (!done) {
            fail(new IllegalStateException("the virtual threads did not finish within 10 minutes"));
        }
        executor = null; // unreachable before heap use is read

        long directAfter = usedDirectMemory();
        long cachedAfter = cachedBytes();
        long rssAfter = Resident.current();
        long heapCommitted = MEMORY.getHeapMemoryUsage().getCommitted();
        long heapAfter = heapUsedAfterGc();
        trimIfSlabwise();
        String line = line("virtual", threads) + " millis=" + millis(nanos) + heap(heapBefore, heapAfter)
                + resident(rssBefore, rssAfter, heapCommitted) + direct(directBefore, directAfter)
                + " cachedAfterMiB=" + mib(cachedAfter) + " directEndedMiB=" + mib(usedDirectMemory())
                + " cachedEndedMiB=" + mib(cachedBytes()) + " failures=" + failures.get();
        endOfScenario(histogramRows, pause);
        return line;
    }

    /**
     * The platform scenario: {@code threads} platform threads, {@code batch}
     * at a time, each leaving one live buffer behind.
     */
    private String runPlatform(int threads, int batch, int histogramRows, boolean pause) throws Exception {
        if (batch < 1) {
            throw new IllegalArgumentException("--batch must be at least 1");
        }
        ByteBuf[] live = new ByteBuf[threads];
        warmUp();
        long heapBefore = heapUsedAfterGc();
        long rssBefore = Resident.current();
        long directBefore = usedDirectMemory();

        long start = System.nanoTime();
        Thread[] running = new Thread[batch];
        for (int first = 0; first < threads; first += batch) {
            int count = Math.min(batch, threads - first);
            for (int i = 0; i < count; i++) {
                int slot = first + i;
                running[i] = new Thread(() -> live[slot] = allocateAndFill(), "churn-" + slot);
                running[i].start();
            }
            for (int i = 0; i < count; i++) {
                running[i].join(); // orders the thread's store into live[] before our reads
                running[i] = null;
            }
        }
        long nanos = System.nanoTime() - start;

        long directAfter = usedDirectMemory();
        long rssAfter = Resident.current();
        long heapCommitted = MEMORY.getHeapMemoryUsage().getCommitted();
        long heapAfter = heapUsedAfterGc();
        long bytesPerThread = Math.round((heapAfter - heapBefore) / (double) threads);
        endOfScenario(histogramRows, pause);

        int held = 0;
        for (int i = 0; i < live.length; i++) {
            if (live[i] != null) {
                live[i].release();
                live[i] = null;
                held++;
            }
        }
        long heapReleased = heapUsedAfterGc();
        long directReleased = usedDirectMemory();
        if (histogramRows > 0) {
            System.out.println("# after every buffer was released:");
            System.out.print(classHistogram(histogramRows));
        }
        return line("platform", threads) + " batch=" + batch + " millis=" + millis(nanos)
                + heap(heapBefore, heapAfter) + " bytesPerDeadThread=" + bytesPerThread
                + resident(rssBefore, rssAfter, heapCommitted) + direct(directBefore, directAfter)
                + " heapReleasedMiB=" + mib(heapReleased) + " directReleasedMiB=" + mib(directReleased)
                + " buffersHeld=" + held + " failures=" + failures.get();
    }

    /**
     * The live scenarios: {@code threads} threads, platform ones or virtual
     * ones from {@code newVirtualExecutor}, started and held at a latch,
     * released together, each allocating and releasing {@code ops} buffers
     * and then waiting, alive, while the allocator's figures are read; then
     * they end and the figures are read again.
     */
    private String runLive(String scenario, Method newVirtualExecutor, int threads, int ops, int histogramRows,
                           boolean pause) throws Exception {
        if (ops < 1) {
            throw new IllegalArgumentException("--ops must be at least 1");
        }
        warmUp();
        long heapBefore = heapUsedAfterGc();
        long rssBefore = Resident.current();
        long directBefore = usedDirectMemory();

        CountDownLatch started = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(threads);
        CountDownLatch end = new CountDownLatch(1);
        Runnable task = () -> {
            started.countDown();
            if (await(go)) {
                allocateRelease(ops);
            }
            done.countDown();
            await(end);
        };
        Thread[] platform = null;
        ExecutorService executor = null;
        if (newVirtualExecutor != null) {
            executor = (ExecutorService) newVirtualExecutor.invoke(null);
            for (int i = 0; i < threads; i++) {
                executor.execute(task);
            }
            executor.shutdown();
        } else {
            platform = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                platform[i] = new Thread(task, "live-" + i);
                platform[i].setDaemon(true); // a failed main thread must not leave the JVM waiting for them
                platform[i].start();
            }
        }
        started.await();
        long start = System.nanoTime();
        go.countDown();
        done.await();
        long nanos = System.nanoTime() - start;

        // every thread is alive, waiting at the second latch, and holds no buffer
        long directLive = usedDirectMemory();
        long cachedLive = cachedBytes();
        int cachesLive = threadCaches();
        long readNanos = Long.MAX_VALUE;
        for (int i = 0; i < READS; i++) {
            long t0 = System.nanoTime();
            usedDirectMemory();
            cachedBytes();
            readNanos = Math.min(readNanos, System.nanoTime() - t0);
        }
        long rssLive = Resident.current();
        long heapLive = heapUsedAfterGc();
        endOfScenario(histogramRows, pause);

        end.countDown();
        if (executor != null) {
            if (!executor.awaitTermination(10, TimeUnit.MINUTES)) {
                fail(new IllegalStateException("the virtual threads did not end within 10 minutes"));
            }
            executor = null;
        } else {
            for (int i = 0; i < threads; i++) {
                platform[i].join();
                platform[i] = null;
            }
        }
        long directJoined = usedDirectMemory();
        long cachedJoined = cachedBytes();
        trimIfSlabwise();
        long heapEnded = heapUsedAfterGc();
        long directEnded = usedDirectMemory();
        long cachedEnded = cachedBytes();
        int cachesEnded = threadCaches();
        return line(scenario, threads) + " ops=" + ops + " millis=" + millis(nanos)
                + " nsPerOp=" + String.format(Locale.ROOT, "%.1f", nanos / ((double) threads * ops))
                + " heapLiveGrowthMiB=" + signedMib(heapLive - heapBefore)
                + " directBeforeMiB=" + mib(directBefore) + " directLiveMiB=" + mib(directLive)
                + " cachedLiveMiB=" + mib(cachedLive) + " threadCachesLive=" + count(cachesLive)
                + " readMicros=" + String.format(Locale.ROOT, "%.1f", readNanos / 1e3)
                + " rssBeforeMiB=" + mib(rssBefore) + " rssLiveMiB=" + mib(rssLive)
                + " directJoinedMiB=" + mib(directJoined) + " cachedJoinedMiB=" + mib(cachedJoined)
                + " directEndedMiB=" + mib(directEnded) + " cachedEndedMiB=" + mib(cachedEnded)
                + " threadCachesEnded=" + count(cachesEnded) + " heapEndedGrowthMiB=" + signedMib(heapEnded - heapBefore)
                + " rssPeakMiB=" + mib(Math.max(Resident.peak(), rssLive)) + " failures=" + failures.get();
    }

    /** Waits for {@code latch}; false, with the failure counted, if the thread was interrupted. */
    private boolean await(CountDownLatch latch) {
        try {
            latch.await();
            return true;
        } catch (InterruptedException e) {
            fail(e);
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** {@code ops} direct buffers of the live sizes in turn, each written at both ends and released. */
    private void allocateRelease(int ops) {
        try {
            for (int i = 0; i < ops; i++) {
                int size = LIVE_SIZES[i % LIVE_SIZES.length];
                ByteBuf buffer = allocator.directBuffer(size);
                buffer.setLong(0, i);
                buffer.setLong(size - Long.BYTES, i);
                buffer.release();
            }
        } catch (Throwable t) {
            fail(t);
        }
    }

    /** One allocation and release on the main thread, so that the allocator has made its first chunk. */
    private void warmUp() {
        allocateAndFill().release();
    }

    private void allocateFillRelease() {
        ByteBuf buffer = allocateAndFill();
        if (buffer != null) {
            buffer.release();
        }
    }

    /** A 1 KiB direct buffer written full, or null (counted as a failure) if the allocation failed. */
    private ByteBuf allocateAndFill() {
        try {
            ByteBuf buffer = allocator.directBuffer(BUFFER_SIZE);
            buffer.writeBytes(PAYLOAD);
            return buffer;
        } catch (Throwable t) {
            fail(t);
            return null;
        }
    }

    private void fail(Throwable t) {
        failures.incrementAndGet();
        firstFailure.compareAndSet(null, t);
    }

    private long usedDirectMemory() {
        if (allocator instanceof ByteBufAllocatorMetricProvider) {
            return ((ByteBufAllocatorMetricProvider) allocator).metric().usedDirectMemory();
        }
        return -1;
    }

    /**
     * Bytes released buffers left in the allocator's caches, read when no
     * buffer is live (see the class comment); -1 where the allocator does
     * not say.
     */
    private long cachedBytes() {
        if (allocator instanceof SlabwiseAllocator) {
            return ((SlabwiseAllocator) allocator).stats().cachedBytes();
        }
        if (allocator instanceof PooledByteBufAllocator) {
            long handedOut = 0;
            for (PoolArenaMetric arena : ((PooledByteBufAllocator) allocator).metric().directArenas()) {
                for (PoolChunkListMetric list : arena.chunkLists()) {
                    for (PoolChunkMetric chunk : list) {
                        handedOut += chunk.chunkSize() - chunk.freeBytes();
                    }
                }
            }
            return handedOut;
        }
        return -1;
    }

    /** Netty pooled's count of thread caches; -1 for the other allocators, which do not say. */
    private int threadCaches() {
        if (allocator instanceof PooledByteBufAllocator) {
            return ((PooledByteBufAllocator) allocator).metric().numThreadLocalCaches();
        }
        return -1;
    }

    /** What an operator does once threads have ended: Slabwise's {@code stats()} then {@code trim()}. */
    private void trimIfSlabwise() {
        if (allocator instanceof SlabwiseAllocator) {
            SlabwiseAllocator slabwise = (SlabwiseAllocator) allocator;
            slabwise.stats();
            slabwise.trim();
        }
    }

    private String line(String scenario, int threads) {
        return "scenario=" + scenario + " allocator=" + allocatorName + " java=" + Runtime.version().feature()
                + " netty=" + nettyVersion() + " threads=" + threads;
    }

    private static String heap(long before, long after) {
        return " heapBeforeMiB=" + mib(before) + " heapAfterMiB=" + mib(after) + " heapGrowthMiB=" + mib(after - before);
    }

    private static String resident(long before, long after, long heapCommitted) {
        return " rssBeforeMiB=" + mib(before) + " rssAfterMiB=" + mib(after)
                + " rssPeakMiB=" + mib(Math.max(Resident.peak(), after)) + " heapCommittedMiB=" + mib(heapCommitted);
    }

    private static String direct(long before, long after) {
        return " directBeforeMiB=" + mib(before) + " directAfterMiB=" + mib(after);
    }

    /** What to do once the scenario's threads are done, before anything is released. */
    private static void endOfScenario(int histogramRows, boolean pause) throws Exception {
        if (histogramRows > 0) {
            System.out.println("# at the end of the scenario:");
            System.out.print(classHistogram(histogramRows));
        }
        if (pause) {
            System.err.println("paused at the end of the scenario: pid " + ProcessHandle.current().pid()
                    + "; e.g. jcmd " + ProcessHandle.current().pid() + " GC.class_histogram; press Enter to go on");
            InputStream in = System.in;
            int c;
            do {
                c = in.read();
            } while (c != -1 && c != '\n');
        }
    }

    /**
     * The first {@code rows} classes of a live-object histogram, as
     * {@code jcmd PID GC.class_histogram} prints it (it runs a full GC), each
     * line prefixed with {@code #}.
     */
    private static String classHistogram(int rows) throws Exception {
        Object text = ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcClassHistogram",
                new Object[] {new String[0]}, new String[] {String[].class.getName()});
        String[] lines = String.valueOf(text).split("\n");
        StringBuilder sb = new StringBuilder();
        int keep = Math.min(lines.length, rows + 2); // the header and its rule
        for (int i = 0; i < keep; i++) {
            sb.append("# ").append(lines[i]).append('\n');
        }
        sb.append("# ").append(lines[lines.length - 1]).append('\n'); // the total
        return sb.toString();
    }

    /**
     * Heap used after a full collection: the least, over {@value #GC_ROUNDS}
     * calls of {@link System#gc()} with pauses between them for reference
     * processing and cleaners, of what the collector left in the heap's
     * pools ({@link MemoryPoolMXBean#getCollectionUsage()}). Not the heap's
     * current use: a background thread (an allocator's decay thread, say)
     * may allocate megabytes of garbage between the end of the collection and
     * the reading.
     */
    private static long heapUsedAfterGc() throws InterruptedException {
        long least = Long.MAX_VALUE;
        for (int i = 0; i < GC_ROUNDS; i++) {
            System.gc();
            least = Math.min(least, heapLeftByLastCollection());
            Thread.sleep(GC_PAUSE_MILLIS);
        }
        return least;
    }

    private static long heapLeftByLastCollection() {
        long used = 0;
        boolean known = false;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            MemoryUsage afterCollection = pool.getType() == MemoryType.HEAP ? pool.getCollectionUsage() : null;
            if (afterCollection != null) {
                used += afterCollection.getUsed();
                known = true;
            }
        }
        return known ? used : MEMORY.getHeapMemoryUsage().getUsed();
    }

    /** {@code Executors.newVirtualThreadPerTaskExecutor()}, or null before Java 21. */
    private static Method virtualThreadPerTaskExecutor() {
        try {
            return Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** Netty's version: every module has the same, and the shaded jar keeps the entry of one of them only. */
    private static String nettyVersion() {
        for (Version version : Version.identify().values()) {
            return version.artifactVersion();
        }
        return "unknown";
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
    }

    private static String count(int n) {
        return n < 0 ? "NA" : String.valueOf(n);
    }

    /** A difference of bytes in MiB, which may be negative. */
    private static String signedMib(long bytes) {
        return String.format(Locale.ROOT, "%.2f", bytes / MIB);
    }

    private static String mib(long bytes) {
        return bytes < 0 ? "NA" : String.format(Locale.ROOT, "%.2f", bytes / MIB);
    }

    private static byte[] payload() {
        byte[] bytes = new byte[BUFFER_SIZE];
        Arrays.fill(bytes, (byte) 0x5a);
        return bytes;
    }

    private static Map<String, String> parse(String[] args) {
        return CommandLine.parse(args, OPTIONS, FLAGS);
    }

    /** The process's resident memory from {@code /proc/self/status} (Linux); -1 where it cannot be read. */
    private static final class Resident {

        private static final Path STATUS = Path.of("/proc/self/status");

        private Resident() {
        }

        /** {@code VmRSS}: resident now. */
        static long current() {
            return field("VmRSS:");
        }

        /** {@code VmHWM}: the peak resident memory so far, as the kernel last updated it (it may lag VmRSS a little). */
        static long peak() {
            return field("VmHWM:");
        }

        private static long field(String name) {
            try {
                for (String line : Files.readAllLines(STATUS, StandardCharsets.US_ASCII)) {
                    if (line.startsWith(name)) {
                        String[] fields = line.substring(name.length()).trim().split("\\s+");
                        return Long.parseLong(fields[0]) * 1024; // the kernel reports kB
                    }
                }
                return -1;
            } catch (IOException | RuntimeException e) {
                return -1;
            }
        }
    }
}
