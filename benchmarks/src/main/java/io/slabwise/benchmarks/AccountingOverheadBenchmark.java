package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
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
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * What category accounting costs: allocate+release of a 1 KiB direct buffer
 * through the allocator itself (its default category), through a
 * {@code forCategory} view, and through a category with a quota (whose
 * reserved bytes are tracked exactly with one atomic update per allocation and
 * per release).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class AccountingOverheadBenchmark {

    /** How the buffer is allocated. */
    @Param({"bare", "category", "quota"})
    public String path;

    /** The buffer size in bytes. */
    @Param({"1024"})
    public int size;

    private ByteBufAllocator alloc;

    /** Makes a fresh allocator for the trial. */
    @Setup(Level.Trial)
    public void setUp() {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().quota("bounded", Long.MAX_VALUE).build();
        switch (path) {
            case "bare":
                alloc = allocator;
                break;
            case "category":
                alloc = allocator.forCategory("replication");
                break;
            default:
                alloc = allocator.forCategory("bounded");
        }
    }

    /** Allocates and releases one buffer. */
    @Benchmark
    public int allocateRelease() {
        ByteBuf buf = alloc.directBuffer(size);
        int capacity = buf.capacity();
        buf.release();
        return capacity;
    }
}
