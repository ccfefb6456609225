package io.slabwise.netty;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.CompositeByteBuf;
import io.slabwise.Allocator;
import io.netty.buffer.UnpooledHeapByteBuf;
import io.slabwise.ChunkSource;
import io.slabwise.MemoryPool;
import io.slabwise.PoolConfig;
import io.slabwise.PoolStats;

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
 * <p>Thread safety: an allocator may be shared by any number of threads, and a
 * buffer may be released on a thread other than the one that allocated it.
 */
public final class SlabwiseAllocator extends AbstractByteBufAllocator implements ByteBufAllocatorMetricProvider {

    private final MemoryPool pool;
    private final Allocator defaultSource;
    private final boolean recycleBuffers;
    private final boolean preferDirect;
    private final ConcurrentHashMap<String, CategoryByteBufAllocator> views = new ConcurrentHashMap<>();
    /** Bytes of live heap buffers' arrays. */
    private final LongAdder heapBytes = new LongAdder();
    private final Metric metric = new Metric();

    private SlabwiseAllocator(Builder builder) {
        super(builder.preferDirect);
        this.pool = new MemoryPool(builder.pool.build());
        this.recycleBuffers = builder.recycleBuffers;
        this.preferDirect = builder.preferDirect;
        this.defaultSource = pool.allocator(pool.defaultCategory());
    }

    /** A builder; settings start from the {@code slabwise.*} system properties (see {@link PoolConfig}). */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        return toLeakAwareBuffer(SlabwiseDirectByteBuf.allocate(this, pool, defaultSource, initialCapacity, maxCapacity,
                recycleBuffers));
    }

    /** A pooled direct buffer from {@code source}, tracked by the leak detector; used by the views. */
    ByteBuf newDirectBuffer(ByteBufAllocator view, Allocator source, int initialCapacity, int maxCapacity) {
        return toLeakAwareBuffer(SlabwiseDirectByteBuf.allocate(view, pool, source, initialCapacity, maxCapacity,
                recycleBuffers));
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
        return new SequentialByteBufAllocator(this, (CategoryByteBufAllocator) forCategory(category),
                pool.sequential(category));
    }

    /**
     * A sequential allocator with a chosen number of stripes and largest request.
     *
     * @see io.slabwise.SequentialAllocator
     */
    public SequentialByteBufAllocator sequential(String category, int stripes, int maxRequest) {
        return new SequentialByteBufAllocator(this, (CategoryByteBufAllocator) forCategory(category),
                pool.sequential(category, stripes, maxRequest));
    }

    /** A block pool of 1 MiB blocks for the named category: payloads become composites of fixed blocks. */
    public BlockByteBufAllocator blocks(String category) {
        return new BlockByteBufAllocator(this, (CategoryByteBufAllocator) forCategory(category), pool.blocks(category));
    }

    /** A block pool with a chosen block size (a power of two, 8 KiB to the chunk size) and stripe count. */
    public BlockByteBufAllocator blocks(String category, int blockSize, int stripes) {
        return new BlockByteBufAllocator(this, (CategoryByteBufAllocator) forCategory(category),
                pool.blocks(category, blockSize, stripes));
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        return toLeakAwareBuffer(new CountedHeapByteBuf(initialCapacity, maxCapacity));
    }

    @Override
    public boolean isDirectBufferPooled() {
        return true;
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

    /** Builds a {@link SlabwiseAllocator}. */
    public static final class Builder {

        private final PoolConfig.Builder pool = PoolConfig.builder();
        private boolean preferDirect = true;
        private boolean recycleBuffers = Boolean.getBoolean("slabwise.recycleBuffers");

        private Builder() {
        }

        /** The chunk size: a power of two from 64 KiB to 256 MiB (default 4 MiB). */
        public Builder chunkSize(int bytes) {
            pool.chunkSize(bytes);
            return this;
        }

        /** The number of arenas (default 2 x available processors). */
        public Builder arenas(int count) {
            pool.arenas(count);
            return this;
        }

        /** The largest buffer size thread caches keep (default 64 KiB); 0 turns thread caches off. */
        public Builder maxCachedSize(int bytes) {
            pool.maxCachedSize(bytes);
            return this;
        }

        /** How many bytes a thread cache keeps for one size class (default 1 MiB). */
        public Builder maxCachedBytesPerClass(int bytes) {
            pool.maxCachedBytesPerClass(bytes);
            return this;
        }

        /** How many buffers a thread cache keeps for one size class (default 256). */
        public Builder maxCachedEntriesPerClass(int entries) {
            pool.maxCachedEntriesPerClass(entries);
            return this;
        }

        /** How many idle chunks each arena keeps for reuse (default 1). */
        public Builder maxIdleChunksPerArena(int chunks) {
            pool.maxIdleChunksPerArena(chunks);
            return this;
        }

        /** Where native memory comes from (default: direct byte buffers). */
        public Builder chunkSource(ChunkSource source) {
            pool.chunkSource(source);
            return this;
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
         * {@link io.netty.util.IllegalReferenceCountException}.
         */
        public Builder recycleBuffers(boolean recycle) {
            this.recycleBuffers = recycle;
            return this;
        }

        /** Builds the allocator. */
        public SlabwiseAllocator build() {
            return new SlabwiseAllocator(this);
        }
    }
}
