package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.concurrent.FastThreadLocalThread;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The latency distribution of allocate+release, every operation timed on its
 * own: the tail that an average hides (a young-GC pause or a slow refill of a
 * thread cache falls on one operation in many).
 *
 * <p>On one thread, a plain platform thread ({@code --thread plain}, the
 * default) or a Netty {@code FastThreadLocalThread} ({@code --thread netty}, as
 * an event loop is: Netty's adaptive allocator gives only such threads
 * magazines of their own, and its pooled allocator takes a faster path there),
 * the program allocates and releases one direct buffer at a time, reading {@link System#nanoTime()}
 * before and after each, and keeps every duration; after {@code --ops}
 * operations it sorts them and prints p50, p90, p99, p99.9, p99.99 and the
 * maximum. Before that the same loop runs {@code --warmup-rounds} times of
 * {@code --warmup-ops} operations, untimed in the result, so that the loop is
 * compiled and the allocator's caches are filled.
 *
 * <p>Every duration includes one {@code nanoTime} call's cost; the program
 * measures that the same way (two calls back to back, {@code --ops} times)
 * and prints it as the {@code timer} line, which is the floor under every
 * figure. It also prints the garbage the measured loop made per operation
 * (this thread's allocated bytes, {@code com.sun.management.ThreadMXBean}) and
 * the collections during it.
 *
 * <pre>
 * java -Dio.netty.leakDetection.level=disabled -cp benchmarks.jar io.slabwise.benchmarks.TailLatencyBenchmark \
 *     --allocator slabwise --size 1024 --ops 3000000
 * </pre>
 *
 * One line of {@code key=value} fields per figure set, for
 * {@code run-tail-latency.sh}, which runs each allocator in a fresh JVM.
 */
public final class TailLatencyBenchmark {

    /** The percentiles, in thousandths of a percent: whole numbers, so that a rank is exact. */
    private static final long[] PERCENTILES = {50_000, 90_000, 99_000, 99_900, 99_990};
    private static final String[] NAMES = {"p50", "p90", "p99", "p99.9", "p99.99"};

    private TailLatencyBenchmark() {
    }

    /** See the class comment; {@code --help} lists the options. */
    public static void main(String[] args) {
        Map<String, String> options = CommandLine.parse(args,
                Set.of("allocator", "size", "ops", "warmup-ops", "warmup-rounds", "thread"), Set.of("help"));
        if (options.containsKey("help")) {
            System.out.println("options: --allocator slabwise|slabwise_recycle|pooled|adaptive|unpooled [--size 1024]"
                    + " [--ops 3000000] [--warmup-ops 200000] [--warmup-rounds 10] [--thread plain|netty]");
            return;
        }
        String thread = options.getOrDefault("thread", "plain");
        if (!thread.equals("plain") && !thread.equals("netty")) {
            throw new IllegalArgumentException("--thread must be plain or netty: " + thread);
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable measure = () -> {
            try {
                measure(options, thread);
            } catch (Throwable t) {
                failure.set(t);
            }
        };
        Thread runner = thread.equals("netty") ? new FastThreadLocalThread(measure, "tail-latency") : new Thread(measure, "tail-latency");
        runner.start();
        try {
            runner.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        if (failure.get() != null) {
            throw new IllegalStateException("the measurement failed", failure.get());
        }
    }

    /** The warm-up and the measured loop, on the calling thread; prints the figures. */
    private static void measure(Map<String, String> options, String thread) {
        String kind = options.getOrDefault("allocator", "slabwise");
        int size = Integer.parseInt(options.getOrDefault("size", "1024"));
        int ops = Integer.parseInt(options.getOrDefault("ops", "3000000"));
        int warmupOps = Integer.parseInt(options.getOrDefault("warmup-ops", "200000"));
        int warmupRounds = Integer.parseInt(options.getOrDefault("warmup-rounds", "10"));
        ByteBufAllocator alloc = AllocatorKind.valueOf(kind).create();

        long[] warmup = new long[warmupOps];
        for (int round = 0; round < warmupRounds; round++) {
            timeAllocateRelease(alloc, size, warmup);
            timeTimer(warmup);
        }

        long[] timer = new long[ops];
        timeTimer(timer);

        long[] durations = new long[ops];
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long collectionsBefore = collections();
        long collectionMillisBefore = collectionMillis();
        long allocatedBefore = threads.getCurrentThreadAllocatedBytes();
        long started = System.nanoTime();
        int sum = timeAllocateRelease(alloc, size, durations);
        long elapsed = System.nanoTime() - started;
        long allocated = threads.getCurrentThreadAllocatedBytes() - allocatedBefore;
        long collections = collections() - collectionsBefore;
        long collectionMillis = collectionMillis() - collectionMillisBefore;

        String common = "allocator=" + kind + " size=" + size + " ops=" + ops + " thread=" + thread;
        System.out.println("java=" + System.getProperty("java.version") + " leakDetection=" + ResourceLeakDetector.getLevel()
                + " gc=" + collectorNames() + " checksum=" + sum);
        System.out.println("figures=timer " + common + " " + percentiles(timer));
        System.out.println("figures=allocateRelease " + common + " " + percentiles(durations)
                + String.format(" meanNs=%.1f bytesPerOp=%.1f gcCount=%d gcMillis=%d", (double) elapsed / ops,
                        (double) allocated / ops, collections, collectionMillis));
    }

    /** Allocates and releases {@code durations.length} buffers, one at a time, and records how long each took. */
    private static int timeAllocateRelease(ByteBufAllocator alloc, int size, long[] durations) {
        int sum = 0;
        for (int i = 0; i < durations.length; i++) {
            long start = System.nanoTime();
            ByteBuf buf = alloc.directBuffer(size);
            sum += buf.capacity();
            buf.release();
            durations[i] = System.nanoTime() - start;
        }
        return sum;
    }

    /** Records {@code durations.length} times what two {@code nanoTime} calls back to back measure. */
    private static void timeTimer(long[] durations) {
        for (int i = 0; i < durations.length; i++) {
            long start = System.nanoTime();
            durations[i] = System.nanoTime() - start;
        }
    }

    /** The percentiles (nearest rank) and the maximum of {@code durations}, which it sorts. */
    private static String percentiles(long[] durations) {
        Arrays.sort(durations);
        StringBuilder line = new StringBuilder();
        for (int i = 0; i < PERCENTILES.length; i++) {
            // the nearest rank, ceil(p * n): p99.9 of 3,000,000 is the 2,997,000th duration
            int rank = (int) ((PERCENTILES[i] * durations.length + 99_999) / 100_000);
            line.append(NAMES[i]).append('=').append(durations[Math.max(0, rank - 1)]).append(' ');
        }
        return line.append("max=").append(durations[durations.length - 1]).toString();
    }

    private static long collections() {
        long total = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, gc.getCollectionCount());
        }
        return total;
    }

    private static long collectionMillis() {
        long total = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, gc.getCollectionTime());
        }
        return total;
    }

    private static String collectorNames() {
        StringBuilder names = new StringBuilder();
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            names.append(names.length() == 0 ? "" : ",").append(gc.getName().replace(' ', '_'));
        }
        return names.toString();
    }
}
