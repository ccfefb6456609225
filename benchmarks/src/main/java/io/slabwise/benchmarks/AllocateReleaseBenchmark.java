package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
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
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * Allocate and release one direct buffer on one thread: the hot path of a
 * server that allocates a buffer per read or write.
 *
 * <p>{@link #allocateRelease} measures the allocator alone.
 * {@link #touchRelease} also writes one byte per 4 KiB page of the buffer, so
 * an allocator that hands out cold memory (freshly mapped pages) pays for it.
 * {@link #burstRelease} holds {@value #BURST} buffers at once before releasing
 * them in the order they came, as a request that takes a header, a body and a
 * response does: only the first allocation can take what the previous release
 * left at hand, the others go to the cache or the pool behind it.
 * Sizes include ones just past a size class and half a page ({@code 4097}), just
 * past a page ({@code 8193}), runs above the thread-cached sizes (128 KiB) and
 * at Slabwise's dedicated threshold (512 KiB), a large one (1 MiB), where
 * Netty's pooled allocator is known to take and drop a chunk per cycle, and a
 * whole 4 MiB chunk. {@code unpooled} is there for scale.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class AllocateReleaseBenchmark {

    /** The allocator under test. */
    @Param({"slabwise", "pooled", "adaptive", "unpooled"})
    public AllocatorKind allocator;

    /** The buffer size in bytes. */
    @Param({"64", "1024", "4097", "8193", "65536", "131072", "524288", "1048576", "4194304"})
    public int size;

    /** Buffers {@link #burstRelease} holds at once. */
    public static final int BURST = 4;

    private ByteBufAllocator alloc;
    private final ByteBuf[] burst = new ByteBuf[BURST];

    /** Makes a fresh allocator for the trial. */
    @Setup(Level.Trial)
    public void setUp() {
        alloc = allocator.create();
    }

    /** Allocates and releases one buffer. */
    @Benchmark
    public int allocateRelease() {
        ByteBuf buf = alloc.directBuffer(size);
        int capacity = buf.capacity();
        buf.release();
        return capacity;
    }

    /** Allocates a buffer, writes a byte in each 4 KiB page, and releases it. */
    @Benchmark
    public int touchRelease() {
        ByteBuf buf = alloc.directBuffer(size);
        for (int i = 0; i < size; i += 4096) {
            buf.setByte(i, i);
        }
        buf.setByte(size - 1, 1);
        int last = buf.getByte(size - 1);
        buf.release();
        return last;
    }

    /** Allocates {@value #BURST} buffers, then releases them oldest first; the time is for all of them. */
    @Benchmark
    public int burstRelease() {
        ByteBuf[] held = burst;
        for (int i = 0; i < held.length; i++) {
            held[i] = alloc.directBuffer(size);
        }
        int capacity = 0;
        for (int i = 0; i < held.length; i++) {
            capacity += held[i].capacity();
            held[i].release();
            held[i] = null;
        }
        return capacity;
    }
}
