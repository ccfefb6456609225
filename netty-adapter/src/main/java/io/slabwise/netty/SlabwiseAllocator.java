package io.slabwise.netty;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.CompositeByteBuf;
import io.slabwise.Allocator;
import io.slabwise.BlockPool;
import io.slabwise.CompactionStats;
import io.netty.buffer.UnpooledHeapByteBuf;
import io.slabwise.LimitPolicy;
import io.slabwise.MemoryPool;
import io.slabwise.PoolConfig;
import io.slabwise.PoolStats;
import io.slabwise.SequentialAllocator;
import io.slabwise.Shrinker;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * A Netty {@link io.netty.buffer.ByteBufAllocator} whose direct buffers come
 * from a Slabwise {@link MemoryPool}: chunks carved into runs and subpages,
 * thread caches on every thread, exact accounting of requested, reserved and
 * committed bytes.
 *
 * <pre>{@code
 * SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(4 << 20).build();
 * new ServerBootstrap()
 *         .option(ChannelOption.ALLOCATOR, allocator)
 *         .childOption(ChannelOption.ALLOCATOR, allocator);
 * }</pre>
 *
 * <p>Buffers behave as Netty's own: {@code capacity()} is exactly what was
 * asked for, {@code maxCapacity} is honoured, capacity changes reallocate
 * through the pool, slices and duplicates share the reference count, and
 * Netty's {@link io.netty.util.ResourceLeakDetector} tracks them. Heap buffers
 * are plain (unpooled) Java arrays, left to the garbage collector; composite
 * buffers are Netty's {@code CompositeByteBuf} over pooled components.
 *
 * <p>Direct buffers use native loads and stores, and report a memory address,
 * where Netty has {@code sun.misc.Unsafe}; elsewhere (Netty 4.2 on JDK 24 and
 * later, by default) they work through NIO, and report their address where
 * Netty's own direct buffers do, so that native transports and OpenSSL hand it
 * to native code ({@link Builder#memoryAddress(boolean)} turns the reporting off).
 * Copies between any two buffers work either way. Unlike Netty's own
 * buffers, a slice or duplicate never reaches past its parent's current
 * capacity: after the parent shrinks, such an access throws
 * {@link IndexOutOfBoundsException} instead of touching memory that now belongs
 * to another buffer. And unlike Netty's pooled buffers, whose retained slices
 * and duplicates count their own references, a retained slice or duplicate
 * shares its parent's count, as Netty's unpooled buffers' do: its
 * {@code refCnt()} is the parent's, and its {@code release()} returns true
 * only when the parent's memory goes back. Netty's leak detector supports
 * derived buffers with counts of their own only for its own pooled buffers.
 *
 * <p>Lifecycle: {@link #close()} closes the pool (see {@link MemoryPool#close()}):
 * new buffers are refused with {@link IllegalStateException}, idle memory goes
 * back at once, and each chunk goes back as soon as its last buffer is
 * released. Close it after the event loops that use it have shut down.
 *
 * <p>Thread safety: an allocator may be shared by any number of threads, and a
 * buffer may be released on a thread other than the one that allocated it.
 */
public final class SlabwiseAllocator extends AbstractByteBufAllocator
        implements ByteBufAllocatorMetricProvider, AutoCloseable {

    private final MemoryPool pool;
    private final Allocator defaultSource;
    private final boolean recycleBuffers;
    /** The class of the direct buffers: native access or NIO, an address reported or not. */
    private final DirectBufferKind bufferKind;
    private final boolean preferDirect;
    private final ConcurrentHashMap<String, CategoryByteBufAllocator> views = new ConcurrentHashMap<>();
    /** Bytes of live heap buffers' arrays. */
    private final LongAdder heapBytes = new LongAdder();
    private final Metric metric = new Metric();

    private SlabwiseAllocator(Builder builder) {
        super(builder.preferDirect);
        this.pool = new MemoryPool(builder.poolConfig());
        this.recycleBuffers = builder.recycleBuffers;
        this.bufferKind = DirectBufferKind.of(builder.nativeAccess, builder.memoryAddress);
        this.preferDirect = builder.preferDirect;
        this.defaultSource = pool.allocator(pool.defaultCategory());
    }

    /** A builder; settings start from the {@code slabwise.*} system properties (see {@link PoolConfig}). */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        return newDirectBuffer(this, defaultSource, initialCapacity, maxCapacity);
    }

    /**
     * A pooled direct buffer from {@code general}, the general pool of one of
     * the pool's categories, for Netty's API, which cannot return null: a
     * refusal under {@link LimitPolicy#RETURN_NULL} throws as under
     * {@link LimitPolicy#FAIL}. Used by the views too.
     */
    ByteBuf newDirectBuffer(ByteBufAllocator view, Allocator general, int initialCapacity, int maxCapacity) {
        SlabwiseDirectByteBuf buf = DirectBuffers.allocateGeneral(view, general, initialCapacity, maxCapacity,
                recycleBuffers, bufferKind, false);
        if (buf == null) {
            throw pool.limitException(general.category(), initialCapacity);
        }
        return tracked(buf);
    }

    /** A pooled direct buffer from {@code source}, or null when refused at a limit under RETURN_NULL. */
    ByteBuf tryNewDirectBuffer(ByteBufAllocator view, Allocator source, int initialCapacity, int maxCapacity) {
        SlabwiseDirectByteBuf buf = DirectBuffers.allocate(view, source, initialCapacity, maxCapacity, bufferKind);
        return buf == null ? null : toLeakAwareBuffer(buf);
    }

    /**
     * A direct buffer in the default category, or null instead of an exception
     * when the memory ceiling or the category's quota refuses it (whatever the
     * configured policy; it never waits). For callers that shed load
     * themselves, like Kafka's {@code MemoryPool.tryAllocate}.
     *
     * @throws IllegalArgumentException for a negative capacity or {@code maxCapacity < initialCapacity}
     */
    public ByteBuf tryDirectBuffer(int initialCapacity, int maxCapacity) {
        validate(initialCapacity, maxCapacity);
        SlabwiseDirectByteBuf buf = DirectBuffers.allocateGeneral(this, defaultSource, initialCapacity,
                maxCapacity, recycleBuffers, bufferKind, true);
        return buf == null ? null : tracked(buf);
    }

    /** {@link #tryDirectBuffer(int, int)} with no limit on growth. */
    public ByteBuf tryDirectBuffer(int initialCapacity) {
        return tryDirectBuffer(initialCapacity, Integer.MAX_VALUE);
    }

    /**
     * Changes a category's quota on reserved bytes at run time; the category
     * must have been given a quota in the builder.
     *
     * @see MemoryPool#setQuota(String, long)
     */
    public void setQuota(String category, long bytes) {
        pool.setQuota(category, bytes);
    }

    private static void validate(int initialCapacity, int maxCapacity) {
        if (initialCapacity < 0) {
            throw new IllegalArgumentException("initialCapacity: " + initialCapacity + " (expected: 0+)");
        }
        if (initialCapacity > maxCapacity) {
            throw new IllegalArgumentException(String.format(
                    "initialCapacity: %d (expected: not greater than maxCapacity(%d)", initialCapacity, maxCapacity));
        }
    }

    /** The class of this allocator's direct buffers. */
    DirectBufferKind bufferKind() {
        return bufferKind;
    }

    /**
     * Hands a new general-pool buffer to the leak detector. One it chooses to
     * track is not recycled: its holder, which a thread's cache keeps
     * reachable, must not keep it reachable too, or a leaked buffer would
     * never be collected and reported.
     */
    private static ByteBuf tracked(SlabwiseDirectByteBuf buf) {
        ByteBuf aware = toLeakAwareBuffer(buf);
        if (aware != buf) {
            buf.stopRecycling();
        }
        return aware;
    }

    /** Tracks a buffer with the leak detector; for buffers made outside the allocation paths (relocated copies). */
    static ByteBuf leakAware(ByteBuf buffer) {
        return toLeakAwareBuffer(buffer);
    }

    /** Tracks a composite buffer with the leak detector; used by the views. */
    static CompositeByteBuf leakAware(CompositeByteBuf composite) {
        return toLeakAwareBuffer(composite);
    }

    /**
     * A {@link ByteBufAllocator} whose buffers are accounted to the named
     * category (created on first use; the same view for the same name). Use one
     * per subsystem, e.g. {@code forCategory("network")} for the bootstrap and
     * {@code forCategory("replication")} for a replica fetcher.
     *
     * @throws IllegalArgumentException for an invalid category name
     */
    public ByteBufAllocator forCategory(String name) {
        CategoryByteBufAllocator view = views.get(name);
        if (view == null) {
            view = views.computeIfAbsent(name, n -> new CategoryByteBufAllocator(this, pool.allocator(n), preferDirect));
        }
        return view;
    }

    /**
     * A sequential allocator (FIFO slab) for the named category, with one stripe
     * per available processor: slices carved from whole chunks by bumping an
     * offset, for data freed roughly in the order it was written (a log cache).
     */
    public SequentialByteBufAllocator sequential(String category) {
        return sequential(category, pool.sequential(category));
    }

    /**
     * A sequential allocator with a chosen number of stripes and largest request.
     *
     * @see io.slabwise.SequentialAllocator
     */
    public SequentialByteBufAllocator sequential(String category, int stripes, int maxRequest) {
        return sequential(category, pool.sequential(category, stripes, maxRequest));
    }

    /** The view of an allocator the pool made: its arguments checked first, so a refused one creates no category. */
    private SequentialByteBufAllocator sequential(String category, SequentialAllocator sequential) {
        return new SequentialByteBufAllocator(this, (CategoryByteBufAllocator) forCategory(category), sequential);
    }

    /** A block pool of 1 MiB blocks for the named category: payloads become composites of fixed blocks. */
    public BlockByteBufAllocator blocks(String category) {
        return blocks(category, pool.blocks(category));
    }

    /** A block pool with a chosen block size (a power of two, 8 KiB to the chunk size) and stripe count. */
    public BlockByteBufAllocator blocks(String category, int blockSize, int stripes) {
        return blocks(category, pool.blocks(category, blockSize, stripes));
    }

    /** The view of a block pool the pool made: its arguments checked first, so a refused one creates no category. */
    private BlockByteBufAllocator blocks(String category, BlockPool blocks) {
        return new BlockByteBufAllocator(this, (CategoryByteBufAllocator) forCategory(category), blocks);
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        return toLeakAwareBuffer(new CountedHeapByteBuf(initialCapacity, maxCapacity));
    }

    @Override
    public boolean isDirectBufferPooled() {
        return true;
    }

    /**
     * Netty's growth policy, kept within the largest buffer the pool serves
     * ({@link MemoryPool#maxRequest()}, 8 KiB under 2 GiB with 8 KiB pages).
     * Past 4 MiB Netty grows in 4 MiB steps and answers {@code maxCapacity}
     * once a step would come within 4 MiB of it: for a buffer without a bound,
     * {@link Integer#MAX_VALUE} for any {@code minNewCapacity} from 2 GiB - 4 MiB,
     * which Netty's own allocators serve but this pool cannot. Where the
     * answer is past the largest request and {@code minNewCapacity} is not,
     * the answer is the largest request, so such a buffer grows as Netty's
     * does instead of failing with {@link IllegalArgumentException}.
     */
    @Override
    public int calculateNewCapacity(int minNewCapacity, int maxCapacity) {
        int newCapacity = super.calculateNewCapacity(minNewCapacity, maxCapacity);
        int largest = pool.maxRequest();
        return newCapacity > largest && minNewCapacity <= largest ? largest : newCapacity;
    }

    /**
     * Closes the pool behind this allocator; idempotent. Buffers still live stay
     * valid and give their memory back when released; new ones are refused.
     */
    @Override
    public void close() {
        pool.close();
    }

    /**
     * Registers the {@link BufferRelocator} of a category, the owner of its
     * buffers, which moves them when a compaction asks; null removes it. Only
     * buffers of a category with a relocator ever move, and only by it.
     *
     * @see MemoryPool#setRelocator(String, io.slabwise.Relocator)
     */
    public void setRelocator(String category, BufferRelocator relocator) {
        pool.setRelocator(category, relocator == null ? null
                : evacuation -> relocator.relocate(new BufferEvacuation(evacuation, this)));
    }

    /**
     * Registers the {@link Shrinker} of a category: the owner of a
     * cache that drops its coldest buffers when the pool asks, before anyone
     * is refused at the ceiling and in the background above the high
     * watermark; null removes it. Event loops shrink inline, within the
     * bounds of {@link io.slabwise.PressureConfig#inlineBytes()}, and never wait.
     *
     * @return the shrinker it replaced, or null
     * @see MemoryPool#setShrinker(String, Shrinker)
     */
    public Shrinker setShrinker(String category, Shrinker shrinker) {
        return pool.setShrinker(category, shrinker);
    }

    /**
     * Empties chunks at most half used by having the relocators move the
     * buffers in them; see {@link MemoryPool#compact(double, long)}.
     */
    public CompactionStats compact() {
        return pool.compact();
    }

    /** The engine behind this allocator. */
    public MemoryPool pool() {
        return pool;
    }

    /** A snapshot of the pool's accounting and chunks. */
    public PoolStats stats() {
        return pool.stats();
    }

    /**
     * Gives idle memory back to the operating system now: caches of dead
     * threads, this thread's cache, idle chunks; live threads flush their
     * caches at their next allocation or release.
     *
     * @return the number of chunks given back
     */
    public int trim() {
        return pool.trim();
    }

    @Override
    public ByteBufAllocatorMetric metric() {
        return metric;
    }

    @Override
    public String toString() {
        return "SlabwiseAllocator(" + pool.config() + ')';
    }

    /** A heap buffer whose array size is counted while it is live. */
    private final class CountedHeapByteBuf extends UnpooledHeapByteBuf {
        CountedHeapByteBuf(int initialCapacity, int maxCapacity) {
            super(SlabwiseAllocator.this, initialCapacity, maxCapacity);
        }

        @Override
        protected byte[] allocateArray(int initialCapacity) {
            byte[] array = super.allocateArray(initialCapacity);
            heapBytes.add(array.length);
            return array;
        }

        @Override
        protected void freeArray(byte[] array) {
            heapBytes.add(-array.length);
            super.freeArray(array);
        }
    }

    /**
     * Netty's view of the allocator's memory: direct memory is what the pool
     * has committed; heap memory is the size of the arrays of live heap buffers.
     */
    private final class Metric implements ByteBufAllocatorMetric {
        @Override
        public long usedHeapMemory() {
            return heapBytes.sum();
        }

        @Override
        public long usedDirectMemory() {
            return pool.committedBytes();
        }

        @Override
        public String toString() {
            return "SlabwiseAllocatorMetric(usedDirectMemory=" + usedDirectMemory() + ')';
        }
    }

    /**
     * Builds a {@link SlabwiseAllocator}: every setting of the pool (see
     * {@link PoolConfig.Settings}, each also a system property), and the
     * Netty-specific ones below. Under {@link LimitPolicy#WAIT} an allocation
     * never waits on a Netty event-loop thread: it fails at once there, since
     * that thread may be the one that would free the memory.
     */
    public static final class Builder extends PoolConfig.Settings<Builder> {

        private boolean preferDirect = true;
        private boolean recycleBuffers = Boolean.getBoolean("slabwise.recycleBuffers");
        private boolean nativeAccess = NativeAccess.AVAILABLE;
        private boolean memoryAddress = !"false".equalsIgnoreCase(System.getProperty("slabwise.memoryAddress"));

        private Builder() {
            waitAllowed(() -> io.netty.util.internal.ThreadExecutorMap.currentExecutor() == null);
        }

        @Override
        protected Builder self() {
            return this;
        }

        /** The pool's configuration, validated. */
        PoolConfig poolConfig() {
            return buildConfig();
        }

        /** Whether {@code buffer()} and {@code ioBuffer()} prefer direct buffers (default true). */
        public Builder preferDirect(boolean preferDirect) {
            this.preferDirect = preferDirect;
            return this;
        }

        /**
         * Whether released buffer objects are reused for later allocations
         * (default false; system property {@code slabwise.recycleBuffers}).
         * Recycling saves one small object per allocation, but a reference kept
         * past {@code release()} may then reach a later buffer, as with Netty's
         * pooled allocator. Without it, such a reference only ever sees
         * {@link io.netty.util.IllegalReferenceCountException}. An object is
         * reused when it is released on the thread that allocated it, kept
         * with its allocation holder in that thread's cache (a few per
         * thread); a virtual thread's goes with its holder to the cache its
         * arena's virtual threads share, and the next virtual thread there may
         * take it, as Netty's adaptive allocator reuses its buffer objects
         * across virtual threads. Buffers of sequential allocators and block
         * pools are not recycled, nor are those Netty's leak detector tracks
         * (all of them at its paranoid level), so a leaked one is reported.
         */
        public Builder recycleBuffers(boolean recycle) {
            this.recycleBuffers = recycle;
            return this;
        }

        /**
         * Whether direct buffers without native access report their memory's
         * address (default true; system property
         * {@code slabwise.memoryAddress}). Such buffers are what Netty 4.2
         * gets on JDK 24 and later, where {@code sun.misc.Unsafe} is off; they
         * report their address where Netty's own direct buffers report theirs
         * there, and native transports (epoll, io_uring) and OpenSSL hand it
         * to native code, as they do Netty's buffers. With false they never
         * report one, and code that asks {@code hasMemoryAddress()} takes its
         * {@code ByteBuffer} path instead. That changes the route, not what
         * native code reaches: Netty's transports and OpenSSL then take the
         * same memory's address from the buffer's direct NIO view (a view and
         * a lookup more per read or write). It is there to compare the two
         * routes, and for code that must not be given the address as a
         * number. Buffers with native access (where Netty has {@code Unsafe})
         * keep their address whatever this says, since Java's own reads and
         * writes use it. Slices and duplicates follow their buffer.
         */
        public Builder memoryAddress(boolean memoryAddress) {
            this.memoryAddress = memoryAddress;
            return this;
        }

        /**
         * Whether buffers read and write with native loads and stores and
         * report a memory address (default: wherever Netty has
         * {@code sun.misc.Unsafe} and the platform takes unaligned accesses,
         * so not on Netty 4.2 with JDK 24 and later). Asking for it where it is
         * not available changes nothing. Package-private: tests turn it off to
         * run the no-address paths on any JVM.
         */
        Builder nativeAccess(boolean nativeAccess) {
            this.nativeAccess = nativeAccess && NativeAccess.AVAILABLE;
            return this;
        }

        /** Builds the allocator. */
        public SlabwiseAllocator build() {
            return new SlabwiseAllocator(this);
        }
    }
}
