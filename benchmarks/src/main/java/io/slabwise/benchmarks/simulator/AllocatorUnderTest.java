package io.slabwise.benchmarks.simulator;

import io.netty.buffer.AdaptiveByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PooledByteBufAllocator;
import io.slabwise.LimitPolicy;
import io.slabwise.MemoryLimitException;
import io.slabwise.netty.BlockByteBufAllocator;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;

/**
 * The allocators the simulator compares. A fresh instance is made for every
 * (workload, allocator) run.
 *
 * <ul>
 *   <li>{@code slabwise}: log buffers from the sequential allocator (category
 *       {@code log_cache}), block buffers from the block pool ({@code block_cache}),
 *       general buffers from the general pool ({@code network}).</li>
 *   <li>{@code pooled}: Netty's {@code PooledByteBufAllocator}, direct, thread
 *       caches on all threads (the workload threads are also
 *       {@code FastThreadLocalThread}s).</li>
 *   <li>{@code adaptive}: Netty's {@code AdaptiveByteBufAllocator}, direct.</li>
 * </ul>
 */
enum AllocatorUnderTest {
    /** Slabwise, each workload on its dedicated strategy. */
    slabwise,
    /** Netty's pooled allocator. */
    pooled,
    /** Netty's adaptive allocator. */
    adaptive;

    /** A new source of this kind with no ceiling. */
    BufferSource create() {
        return create(Long.MAX_VALUE);
    }

    /**
     * A new source; for Slabwise, {@code maxMemory} is its ceiling (caches get
     * null at the ceiling and evict, network buffers wait).
     */
    BufferSource create(long maxMemory) {
        switch (this) {
            case slabwise:
                return new SlabwiseSource(maxMemory);
            case pooled:
                return new NettySource(new PooledByteBufAllocator(true, PooledByteBufAllocator.defaultNumHeapArena(),
                        PooledByteBufAllocator.defaultNumDirectArena(), PooledByteBufAllocator.defaultPageSize(),
                        PooledByteBufAllocator.defaultMaxOrder(), PooledByteBufAllocator.defaultSmallCacheSize(),
                        PooledByteBufAllocator.defaultNormalCacheSize(), true));
            default:
                return new NettySource(new AdaptiveByteBufAllocator(true, true));
        }
    }

    /** Slabwise with a strategy per kind of buffer. */
    private static final class SlabwiseSource implements BufferSource {
        private final SlabwiseAllocator allocator;
        private final SequentialByteBufAllocator log;
        private final BlockByteBufAllocator blocks;

        SlabwiseSource(long maxMemory) {
            SlabwiseAllocator.Builder builder = SlabwiseAllocator.builder();
            if (maxMemory != Long.MAX_VALUE) {
                builder.maxMemory(maxMemory)
                        .categoryPolicy("log_cache", LimitPolicy.RETURN_NULL)
                        .categoryPolicy("block_cache", LimitPolicy.RETURN_NULL)
                        .limitPolicy(LimitPolicy.WAIT);
            }
            allocator = builder.build();
            log = allocator.sequential("log_cache");
            blocks = allocator.blocks("block_cache");
        }

        @Override
        public ByteBuf logBuffer(int size) {
            return log.allocate(size);
        }

        @Override
        public ByteBuf blockBuffer(int size) {
            return blocks.allocate(size);
        }

        @Override
        public ByteBuf generalBuffer(int size) {
            try {
                return allocator.directBuffer(size);
            } catch (MemoryLimitException e) {
                return null;
            }
        }

        @Override
        public long committedBytes() {
            return allocator.pool().committedBytes();
        }

        @Override
        public long reservedBytes() {
            return allocator.pool().reservedBytes();
        }

        @Override
        public boolean trim() {
            log.trim();
            blocks.trim();
            allocator.trim();
            return true;
        }

        @Override
        public String report() {
            return allocator.stats().report() + "  " + log.stats() + "\n  " + blocks.stats() + "\n";
        }
    }

    /** One of Netty's allocators, the same for every kind of buffer. */
    private static final class NettySource implements BufferSource {
        private final ByteBufAllocator allocator;

        NettySource(ByteBufAllocator allocator) {
            this.allocator = allocator;
        }

        @Override
        public ByteBuf logBuffer(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public ByteBuf blockBuffer(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public ByteBuf generalBuffer(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public long committedBytes() {
            return ((ByteBufAllocatorMetricProvider) allocator).metric().usedDirectMemory();
        }

        @Override
        public long reservedBytes() {
            return -1;
        }

        @Override
        public boolean trim() {
            if (allocator instanceof PooledByteBufAllocator) {
                return ((PooledByteBufAllocator) allocator).trimCurrentThreadCache();
            }
            return false;
        }

        @Override
        public String report() {
            return "";
        }
    }
}
