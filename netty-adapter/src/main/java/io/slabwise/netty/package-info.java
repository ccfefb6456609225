/**
 * Slabwise for Netty: {@link io.slabwise.netty.SlabwiseAllocator}, a drop-in
 * {@link io.netty.buffer.ByteBufAllocator} over the Slabwise memory engine.
 *
 * <h2>Threads</h2>
 * The allocator is shared by all threads. A buffer is owned by whoever holds
 * a reference count on it; the thread that drops the count to zero returns its
 * memory to the pool, through its own thread cache when the memory belongs to
 * its arena and through the owning arena's remote-free queue otherwise.
 *
 * <p>As with Netty's own buffers, a buffer's indexes, its writes and its
 * capacity changes belong to one thread at a time, while absolute reads
 * ({@code getBytes} to arrays, buffers, streams and channels, including through
 * slices and duplicates) may run on several threads at once: each such read
 * uses a NIO view of its own. Only {@code internalNioBuffer}, the relative
 * {@code readBytes} to channels and the writes from channels reuse a buffer's
 * one internal view, as Netty's {@code PooledByteBuf} does.
 */
package io.slabwise.netty;
