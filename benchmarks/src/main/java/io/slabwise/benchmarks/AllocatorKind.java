package io.slabwise.benchmarks;

import io.netty.buffer.AdaptiveByteBufAllocator;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;

/**
 * The allocators every benchmark compares, each in its best realistic setting.
 *
 * <ul>
 *   <li>{@code slabwise}: {@link SlabwiseAllocator} with its defaults; thread
 *       caches work on every thread.</li>
 *   <li>{@code slabwise_recycle}: {@link SlabwiseAllocator} with
 *       {@code recycleBuffers(true)}, otherwise its defaults: released buffer
 *       objects are reused instead of made anew for every allocation.</li>
 *   <li>{@code slabwise_noaddress}: {@link SlabwiseAllocator} with
 *       {@code memoryAddress(false)}, otherwise its defaults: where its
 *       buffers have no native access (Netty 4.2 on JDK 24 and later) they
 *       report no memory address, so native transports take it from a direct
 *       NIO view of the buffer; elsewhere the same as {@code slabwise}.</li>
 *   <li>{@code pooled}: Netty's {@link PooledByteBufAllocator} preferring direct
 *       buffers, with {@code useCacheForAllThreads=true}: by default Netty gives
 *       thread caches only to its own {@code FastThreadLocalThread}s, so on a
 *       plain thread it would run uncached, which no Netty server does.</li>
 *   <li>{@code adaptive}: Netty's {@link AdaptiveByteBufAllocator} (the Netty 4.2
 *       default), preferring direct buffers. It gives a thread magazines of its
 *       own only on a {@code FastThreadLocalThread}.</li>
 *   <li>{@code unpooled}: Netty's {@link UnpooledByteBufAllocator}, for scale.</li>
 * </ul>
 *
 * A fresh allocator is made for every trial. The JMH benchmarks run their
 * threads as {@code FastThreadLocalThread}s (see {@link FastThreadLocalExecutor}),
 * as a server's event loops are, so both Netty allocators take their fastest
 * path.
 */
public enum AllocatorKind {
    /** Slabwise with its defaults. */
    slabwise {
        @Override
        public ByteBufAllocator create() {
            return SlabwiseAllocator.builder().build();
        }
    },
    /** Slabwise with {@code recycleBuffers(true)}. */
    slabwise_recycle {
        @Override
        public ByteBufAllocator create() {
            return SlabwiseAllocator.builder().recycleBuffers(true).build();
        }
    },
    /** Slabwise with {@code memoryAddress(false)}. */
    slabwise_noaddress {
        @Override
        public ByteBufAllocator create() {
            return SlabwiseAllocator.builder().memoryAddress(false).build();
        }
    },
    /** Netty's pooled allocator with thread caches on all threads. */
    pooled {
        @Override
        public ByteBufAllocator create() {
            return new PooledByteBufAllocator(true, PooledByteBufAllocator.defaultNumHeapArena(),
                    PooledByteBufAllocator.defaultNumDirectArena(), PooledByteBufAllocator.defaultPageSize(),
                    PooledByteBufAllocator.defaultMaxOrder(), PooledByteBufAllocator.defaultSmallCacheSize(),
                    PooledByteBufAllocator.defaultNormalCacheSize(), true);
        }
    },
    /** Netty's adaptive allocator. */
    adaptive {
        @Override
        public ByteBufAllocator create() {
            return new AdaptiveByteBufAllocator(true, true);
        }
    },
    /** Netty's unpooled allocator. */
    unpooled {
        @Override
        public ByteBufAllocator create() {
            return new UnpooledByteBufAllocator(true);
        }
    };

    /** A new allocator of this kind. */
    public abstract ByteBufAllocator create();
}
