package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.slabwise.netty.SequentialByteBufAllocator;
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
import org.openjdk.jmh.annotations.Warmup;

import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The log-cache pattern: a ring of 4096 live buffers of mixed sizes (64 B to
 * 64 KiB, log-uniform, a fixed sequence); each operation allocates a new
 * buffer and releases the oldest, so memory is freed in the order it was
 * allocated. {@code slabwise} uses its sequential allocator; Netty's
 * allocators their general path.
 *
 * <p>{@link #appendAndEvict} writes one byte of each new buffer: it measures
 * the allocators, and favours one that hands back the memory it freed last
 * (whose first line is still in the CPU cache) over one that bumps into memory
 * untouched for a lap of the ring. {@link #appendWriteAndEvict} copies a whole
 * record into each buffer, as a log cache does when it appends a record batch.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class SequentialFifoBenchmark {

    private static final int RING = 4096;
    private static final int SIZES = 1 << 16;

    /** The allocator under test. */
    @Param({"slabwise", "pooled", "adaptive"})
    public AllocatorKind allocator;

    private SequentialByteBufAllocator sequential;
    private ByteBufAllocator general;
    private final ByteBuf[] ring = new ByteBuf[RING];
    private final int[] sizes = new int[SIZES];
    /** The bytes every appended record copies (the largest record). */
    private final byte[] record = new byte[64 * 1024];
    private int next;

    /** Makes a fresh allocator and fills the ring. */
    @Setup(Level.Trial)
    public void setUp() {
        ByteBufAllocator created = allocator.create();
        if (created instanceof SlabwiseAllocator) {
            sequential = ((SlabwiseAllocator) created).sequential("log_cache");
        } else {
            general = created;
        }
        Random random = new Random(7);
        random.nextBytes(record);
        for (int i = 0; i < SIZES; i++) {
            sizes[i] = (int) Math.exp(Math.log(64) + random.nextDouble() * (Math.log(64 * 1024) - Math.log(64)));
        }
        for (int i = 0; i < RING; i++) {
            ring[i] = allocate(sizes[i]);
        }
    }

    private ByteBuf allocate(int size) {
        return sequential != null ? sequential.allocate(size) : general.directBuffer(size);
    }

    /** Allocates a new buffer and releases the oldest. */
    @Benchmark
    public int appendAndEvict() {
        ByteBuf buf = replaceOldest();
        buf.setByte(0, 1);
        return buf.capacity();
    }

    /** Allocates a new buffer, copies a whole record into it, and releases the oldest. */
    @Benchmark
    public int appendWriteAndEvict() {
        ByteBuf buf = replaceOldest();
        buf.writeBytes(record, 0, buf.capacity());
        return buf.writerIndex();
    }

    /** Releases the oldest buffer of the ring and puts a new one of the next size in its slot. */
    private ByteBuf replaceOldest() {
        int slot = next & (RING - 1);
        ring[slot].release();
        ByteBuf buf = allocate(sizes[next & (SIZES - 1)]);
        ring[slot] = buf;
        next++;
        return buf;
    }

    /** Releases the ring. */
    @TearDown(Level.Trial)
    public void tearDown() {
        for (ByteBuf buf : ring) {
            buf.release();
        }
    }
}
