package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.slabwise.netty.BlockByteBufAllocator;
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
 * The block-cache pattern: 32 live payloads of 1 to 8 MiB (log-uniform, a
 * fixed sequence); each operation releases the payload in a slot picked from
 * a fixed pseudo-random sequence (an LRU cache under skewed reads evicts in no
 * simple order) and loads a new payload there, writing its first and last
 * byte. {@code slabwise} uses its block pool ({@code blocks("block_cache")},
 * a composite of 1 MiB blocks and smaller slots); Netty's allocators their
 * general path, where sizes above their chunk size are allocated from the OS
 * and freed every time.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-XX:MaxDirectMemorySize=2g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class BlockPayloadBenchmark {

    private static final int LIVE = 32;
    private static final int SEQUENCE = 1 << 12;
    private static final int MIN = 1 << 20;
    private static final int MAX = 8 << 20;

    /** The allocator under test. */
    @Param({"slabwise", "pooled", "adaptive"})
    public AllocatorKind allocator;

    private ByteBufAllocator created;
    private BlockByteBufAllocator blocks;
    private final ByteBuf[] live = new ByteBuf[LIVE];
    private final int[] sizes = new int[SEQUENCE];
    private final int[] slots = new int[SEQUENCE];
    private int next;

    /** Makes a fresh allocator and loads the first payloads. */
    @Setup(Level.Trial)
    public void setUp() {
        created = allocator.create();
        if (created instanceof SlabwiseAllocator) {
            blocks = ((SlabwiseAllocator) created).blocks("block_cache");
        }
        Random random = new Random(11);
        for (int i = 0; i < SEQUENCE; i++) {
            sizes[i] = (int) Math.exp(Math.log(MIN) + random.nextDouble() * (Math.log(MAX) - Math.log(MIN)));
            slots[i] = random.nextInt(LIVE);
        }
        for (int i = 0; i < LIVE; i++) {
            live[i] = load(sizes[SEQUENCE - 1 - i]);
        }
    }

    private ByteBuf load(int size) {
        ByteBuf buf = blocks != null ? blocks.allocate(size) : created.directBuffer(size, size);
        buf.setByte(0, 1);
        buf.setByte(size - 1, 1);
        return buf;
    }

    /** Evicts one payload and loads another in its place. */
    @Benchmark
    public int evictAndLoad() {
        int i = next & (SEQUENCE - 1);
        int slot = slots[i];
        live[slot].release();
        ByteBuf buf = load(sizes[i]);
        live[slot] = buf;
        next++;
        return buf.capacity();
    }

    /** Releases the live payloads. */
    @TearDown(Level.Trial)
    public void tearDown() {
        for (ByteBuf buf : live) {
            buf.release();
        }
    }
}
