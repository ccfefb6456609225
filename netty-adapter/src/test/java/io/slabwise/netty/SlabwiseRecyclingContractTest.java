package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

/** The contract suite on Slabwise's direct buffers with buffer objects recycled. */
class SlabwiseRecyclingContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return SlabwiseContractFixture.RECYCLING.directBuffer(capacity, maxCapacity);
    }

    @Override
    protected void afterBuffersReleased() {
        SlabwiseContractFixture.assertNothingLive();
    }
}
