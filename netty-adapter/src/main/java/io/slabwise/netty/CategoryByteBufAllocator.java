package io.slabwise.netty;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.slabwise.Allocator;
import io.slabwise.Category;

/**
 * A view of a {@link SlabwiseAllocator} whose direct buffers are accounted to
 * one category. It shares the pool, the thread caches and the limits of its
 * allocator; only the accounting bucket differs. Buffers derived from its
 * buffers ({@code copy()}, growth) stay in the same category, because their
 * {@code alloc()} is this view. Heap buffers are the allocator's plain heap
 * buffers.
 */
final class CategoryByteBufAllocator extends AbstractByteBufAllocator implements ByteBufAllocatorMetricProvider {

    private final SlabwiseAllocator parent;
    private final Allocator source;

    CategoryByteBufAllocator(SlabwiseAllocator parent, Allocator source, boolean preferDirect) {
        super(preferDirect);
        this.parent = parent;
        this.source = source;
    }

    /** The category of this view. */
    Category category() {
        return source.category();
    }

    SlabwiseAllocator parent() {
        return parent;
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        return parent.newDirectBuffer(this, source, initialCapacity, maxCapacity);
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        return parent.heapBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public boolean isDirectBufferPooled() {
        return true;
    }

    /** The allocator's growth policy: Netty's, within the largest buffer the pool serves. */
    @Override
    public int calculateNewCapacity(int minNewCapacity, int maxCapacity) {
        return parent.calculateNewCapacity(minNewCapacity, maxCapacity);
    }

    @Override
    public ByteBufAllocatorMetric metric() {
        return parent.metric();
    }

    @Override
    public String toString() {
        return "SlabwiseAllocator.forCategory(" + category() + ')';
    }
}
