package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

/** The contract suite on duplicates of Slabwise's direct buffers. */
class SlabwiseDuplicateContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return SlabwiseContractFixture.ALLOCATOR.directBuffer(capacity, maxCapacity).duplicate();
    }

    @Override
    protected boolean isDuplicate() {
        return true;
    }

    @Override
    protected void afterBuffersReleased() {
        SlabwiseContractFixture.assertNothingLive();
    }
}
