package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import org.jctools.queues.SpscArrayQueue;
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
import org.openjdk.jmh.infra.Control;

import java.util.concurrent.TimeUnit;

/**
 * How an allocator scales with the threads that share it: one allocator per
 * trial, shared by every benchmark thread, run with JMH's {@code -t 1}, 2, 4
 * and 8 ({@code run-scaling.sh}).
 *
 * <ul>
 *   <li>{@link #allocateRelease}: every thread allocates and releases its own
 *       buffers. Thread caches should keep the threads apart; what they share
 *       (arenas, size-class locks, counters) shows as time per operation that
 *       grows with the threads.</li>
 *   <li>{@code crossThread}: pairs of threads, one allocating and handing each
 *       buffer through its pair's bounded queue to the other, which releases
 *       it. With {@code -t N} JMH runs N / 2 pairs on the one allocator. The
 *       score is the time per buffer handed over in one pair. A side that
 *       waits spins briefly, then yields its core.</li>
 * </ul>
 *
 * With more threads than cores the time per operation grows for every
 * allocator alike; read the ratio of the allocators at each thread count.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class ScalingBenchmark {

    private static final int SPINS_BEFORE_YIELD = 100;

    /** The allocator every thread of the trial shares. */
    @State(Scope.Benchmark)
    public static class SharedAllocator {

        /** The allocator under test. */
        @Param({"slabwise", "pooled", "adaptive"})
        public AllocatorKind allocator;

        /** The buffer size in bytes. */
        @Param({"1024", "65536"})
        public int size;

        ByteBufAllocator alloc;

        /** Makes a fresh allocator for the trial. */
        @Setup(Level.Trial)
        public void setUp() {
            alloc = allocator.create();
        }
    }

    /** The queue between the two threads of one {@code crossThread} pair. */
    @State(Scope.Group)
    public static class Handoff {

        SpscArrayQueue<ByteBuf> queue;

        /** Makes an empty queue for the trial. */
        @Setup(Level.Trial)
        public void setUp() {
            queue = new SpscArrayQueue<>(1024);
        }

        /** Releases what is left in the queue. */
        @TearDown(Level.Trial)
        public void tearDown() {
            ByteBuf left;
            while ((left = queue.poll()) != null) {
                left.release();
            }
        }
    }

    /** Allocates and releases one buffer on the calling thread. */
    @Benchmark
    public int allocateRelease(SharedAllocator shared) {
        ByteBuf buf = shared.alloc.directBuffer(shared.size);
        int capacity = buf.capacity();
        buf.release();
        return capacity;
    }

    /** Allocates a buffer and hands it to the pair's other thread, waiting for room in the queue. */
    @Benchmark
    @Group("crossThread")
    @GroupThreads(1)
    public boolean produce(SharedAllocator shared, Handoff handoff, Control control) {
        ByteBuf buf = shared.alloc.directBuffer(shared.size);
        buf.setByte(0, 1);
        for (int spins = 0; !handoff.queue.offer(buf); spins++) {
            if (control.stopMeasurement) {
                buf.release();
                return false;
            }
            pause(spins);
        }
        return true;
    }

    /** Releases the next buffer the pair's other thread allocated, waiting for one. */
    @Benchmark
    @Group("crossThread")
    @GroupThreads(1)
    public boolean consume(Handoff handoff, Control control) {
        ByteBuf buf;
        for (int spins = 0; (buf = handoff.queue.poll()) == null; spins++) {
            if (control.stopMeasurement) {
                return false;
            }
            pause(spins);
        }
        return buf.release();
    }

    /**
     * Spins a little, then yields: with more pairs than cores the thread a
     * spinner waits for may have no core until the spinner gives its up.
     */
    private static void pause(int spins) {
        if (spins < SPINS_BEFORE_YIELD) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }
}
