package io.slabwise.benchmarks.pressure;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.slabwise.LimitPolicy;
import io.slabwise.MemoryLimitException;
import io.slabwise.PressureConfig;
import io.slabwise.benchmarks.AllocatorKind;
import io.slabwise.benchmarks.FastThreadLocalExecutor;
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

import java.util.concurrent.TimeUnit;

/**
 * The cost of a network allocation that needs shrinking at the ceiling
 * against one that does not: allocate and release one direct buffer of
 * {@code size} bytes, timed one by one ({@code SampleTime}: p50 to max).
 *
 * <ul>
 *   <li>{@code slabwise}: a pool of {@link #CEILING} whose log cache (a
 *       sequential allocator of 64 KiB records, registered as a
 *       {@link io.slabwise.Shrinker}) holds every chunk but the network's: the
 *       allocation finds no free chunk, the pool asks the log cache inline
 *       (as on an event loop: {@code waitAllowed} false), the cache drops its
 *       oldest 4 MiB, the pool gives that chunk back and takes a new one for
 *       the buffer.</li>
 *   <li>{@code slabwise_headroom}: the same pool and cache filled to the same
 *       committed bytes, with 8 MiB of room under the ceiling: the allocation
 *       takes a new chunk without shrinking. The difference is what shrinking
 *       adds.</li>
 *   <li>{@code slabwise_warm}, {@code pooled}, {@code adaptive}: the everyday
 *       case, for scale: no ceiling, the buffer from the thread's cache or a
 *       chunk already held (Netty's allocators as {@link AllocatorKind} makes
 *       them).</li>
 * </ul>
 *
 * Chunks stand alone ({@code -Dslabwise.noRegionGroups=true}): in 32 MiB
 * region groups the pool's committed bytes reach the ceiling with free chunks
 * left in the last group, and the allocation would take one of them without
 * shrinking. The two ceiling cases run no background work (their scheduler is never
 * advanced): the background check would shrink the cache to the low
 * watermark and leave room, which is not the case measured. Before every
 * invocation ({@code Level.Invocation}, not timed) the two
 * ceiling cases give back the network's empty chunk and this thread's cache
 * ({@code trim()}) and refill the log cache until the pool's committed bytes
 * are within a chunk of their target, so every timed allocation starts from
 * the same state; the teardown prints how many allocations shrank per
 * invocation and how many were refused (timed and counted, not thrown). {@code -prof gc}'s bytes per operation count the refill's
 * buffers too (64 records per shrinking invocation).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-Dslabwise.noGlibcWarning=true", "--enable-native-access=ALL-UNNAMED",
        "-Dslabwise.noRegionGroups=true", FastThreadLocalExecutor.EXECUTOR, FastThreadLocalExecutor.EXECUTOR_CLASS})
public class PressureAllocationBenchmark {

    /** The ceiling of the pool of the {@code slabwise} case; its cache fills it. */
    static final long CEILING = 64L << 20;
    /** The room under the ceiling in the {@code slabwise_headroom} case. */
    static final long HEADROOM = 8L << 20;
    private static final int RECORD = 64 * 1024;

    /** {@code slabwise} (at the ceiling, shrinking), {@code slabwise_headroom}, {@code slabwise_warm}, {@code pooled}, {@code adaptive}. */
    @Param({"slabwise", "slabwise_headroom", "slabwise_warm", "pooled", "adaptive"})
    public String allocator;

    /** The network buffer's size in bytes. */
    @Param({"65536"})
    public int size;

    private ByteBufAllocator network;
    private SlabwiseAllocator slabwise;
    private LogCache log;
    private long fillTo;
    private long invocations;
    private long shrinksBefore;
    private long refused;

    /** Makes the allocator and, for the ceiling cases, the full cache. */
    @Setup(Level.Trial)
    public void setUp() {
        switch (allocator) {
            case "slabwise":
            case "slabwise_headroom":
                boolean headroom = allocator.equals("slabwise_headroom");
                slabwise = SlabwiseAllocator.builder().maxMemory(CEILING + (headroom ? HEADROOM : 0))
                        .limitPolicy(LimitPolicy.FAIL).categoryPolicy(PressureSetup.LOG_CACHE, LimitPolicy.RETURN_NULL)
                        .pressure(PressureConfig.defaults()).waitAllowed(() -> false)
                        .scheduler(new StepScheduler()).build(); // never advanced: no background shrinking or decay
                SequentialByteBufAllocator records = slabwise.sequential(PressureSetup.LOG_CACHE);
                log = new LogCache(records::allocate, Long.MAX_VALUE);
                slabwise.setShrinker(PressureSetup.LOG_CACHE, log);
                network = slabwise.forCategory(PressureSetup.NETWORK);
                fillTo = CEILING;
                refill();
                shrinksBefore = slabwise.pool().pressureStats().limitShrinksServed();
                break;
            case "slabwise_warm":
                network = AllocatorKind.slabwise.create();
                break;
            case "pooled":
                network = AllocatorKind.pooled.create();
                break;
            case "adaptive":
                network = AllocatorKind.adaptive.create();
                break;
            default:
                throw new IllegalArgumentException("unknown allocator " + allocator);
        }
    }

    /** Before each invocation of a ceiling case: the network's chunk given back, the cache refilled. */
    @Setup(Level.Invocation)
    public void refill() {
        if (slabwise == null) {
            return;
        }
        invocations++;
        slabwise.trim();
        long chunk = slabwise.pool().config().chunkSize();
        while (slabwise.pool().committedBytes() + chunk <= fillTo) {
            log.append(RECORD);
        }
    }

    /** Allocates and releases one network buffer; a refusal is counted (and timed), and the teardown prints the count. */
    @Benchmark
    public int allocateRelease() {
        ByteBuf buf;
        try {
            buf = network.directBuffer(size);
        } catch (MemoryLimitException e) {
            refused++;
            return 0;
        }
        int capacity = buf.capacity();
        buf.release();
        return capacity;
    }

    /** Prints how many allocations shrank per invocation, and ends the allocator. */
    @TearDown(Level.Trial)
    public void tearDown() {
        if (slabwise != null) {
            long served = slabwise.pool().pressureStats().limitShrinksServed() - shrinksBefore;
            System.out.printf("%n%s: %d allocations served after shrinking in %d invocations (%.3f each), %d refused; %s%n",
                    allocator, served, invocations, served / (double) Math.max(1, invocations), refused,
                    slabwise.pool().pressureStats());
            log.clear();
            slabwise.close();
        } else if (network instanceof AutoCloseable) {
            try {
                ((AutoCloseable) network).close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
