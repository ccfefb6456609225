package io.slabwise;

import io.slabwise.internal.EngineAccess;

import java.nio.ByteBuffer;

/**
 * The engine's side of {@link EngineAccess}: what the Netty adapter may do
 * beyond the public API, each a direct call into the part that does it.
 * Registered by {@link Allocation}'s static initializer, so it exists
 * whenever an allocation can.
 */
final class AdapterAccess implements EngineAccess.Engine {

    @Override
    public ByteBuffer chunkMemory(Allocation allocation) {
        return allocation.chunkMemory();
    }

    @Override
    public Allocation allocateStashed(Category category, int requested, boolean returnNullAtLimit) {
        return category.allocator.allocateStashed(requested, returnNullAtLimit);
    }

    @Override
    public Object attachment(Allocation allocation) {
        return allocation.attachment;
    }

    @Override
    public void attach(Allocation allocation, Object attachment) {
        allocation.attachment = attachment;
    }

    @Override
    public boolean isBlockPart(Allocation allocation) {
        return BlockPool.isPart(allocation);
    }

    @Override
    public boolean resizeInPlace(Allocation allocation, int newRequested) {
        return allocation.category().allocator.resizeInPlace(allocation, newRequested);
    }

    @Override
    public Allocator generalAllocator(Category category) {
        return category.allocator;
    }

    @Override
    public MemoryLimitException limitException(Category category, int requested) {
        return category.allocator.limitException(requested);
    }
}
