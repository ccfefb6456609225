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
 * Buffers allocated on one thread and released on another, as when an event
 * loop allocates a response that a worker pool releases: the path where a
 * pool must take memory back from a thread that does not own it.
 *
 * <p>A producer allocates and hands each buffer through a bounded
 * single-producer single-consumer queue to a consumer that releases it. Every
 * operation on either side moves exactly one buffer: the producer spins while
 * the queue is full and the consumer while it is empty, each giving up only
 * when JMH ends the iteration. The {@code crossThread} group score is
 * therefore the time per buffer handed over, whichever side is slower; the
 * two side scores say which side that is.
 */
@State(Scope.Group)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class CrossThreadReleaseBenchmark {

    /** The allocator under test. */
    @Param({"slabwise", "pooled", "adaptive"})
    public AllocatorKind allocator;

    /** The buffer size in bytes. */
    @Param({"256", "4096", "65536"})
    public int size;

    private ByteBufAllocator alloc;
    private SpscArrayQueue<ByteBuf> handoff;

    /** Makes a fresh allocator and queue for the trial. */
    @Setup(Level.Trial)
    public void setUp() {
        alloc = allocator.create();
        handoff = new SpscArrayQueue<>(1024);
    }

    /** Releases what is left in the queue. */
    @TearDown(Level.Trial)
    public void tearDown() {
        ByteBuf left;
        while ((left = handoff.poll()) != null) {
            left.release();
        }
    }

    /** Allocates a buffer and hands it to the consumer, waiting for room in the queue. */
    @Benchmark
    @Group("crossThread")
    @GroupThreads(1)
    public boolean produce(Control control) {
        ByteBuf buf = alloc.directBuffer(size);
        buf.setByte(0, 1);
        while (!handoff.offer(buf)) {
            if (control.stopMeasurement) {
                buf.release();
                return false;
            }
            Thread.onSpinWait();
        }
        return true;
    }

    /** Releases the next buffer the producer allocated, waiting for one. */
    @Benchmark
    @Group("crossThread")
    @GroupThreads(1)
    public boolean consume(Control control) {
        ByteBuf buf;
        while ((buf = handoff.poll()) == null) {
            if (control.stopMeasurement) {
                return false;
            }
            Thread.onSpinWait();
        }
        return buf.release();
    }
}
