package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

/** The contract suite on slices of Slabwise's direct buffers (a slice cannot change its capacity). */
class SlabwiseSliceContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        ByteBuf parent = SlabwiseContractFixture.ALLOCATOR.directBuffer(capacity + 24);
        return parent.slice(11, capacity).clear();
    }

    @Override
    protected boolean canGrow() {
        return false;
    }

    @Override
    protected void afterBuffersReleased() {
        SlabwiseContractFixture.assertNothingLive();
    }
}
