/**
 * Slabwise for Netty: {@link io.slabwise.netty.SlabwiseAllocator}, a drop-in
 * {@link io.netty.buffer.ByteBufAllocator} over the Slabwise memory engine.
 *
 * <h2>Threads</h2>
 * The allocator is shared by all threads. A buffer is owned by whoever holds
 * a reference count on it; the thread that drops the count to zero returns its
 * memory to the pool, through its own thread cache when the memory belongs to
 * its arena and through the owning arena's remote-free queue otherwise.
 */
package io.slabwise.netty;
