package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

/** The contract suite on Slabwise's pooled direct buffers. */
class SlabwiseDirectContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return SlabwiseContractFixture.ALLOCATOR.directBuffer(capacity, maxCapacity);
    }

    @Override
    protected void afterBuffersReleased() {
        SlabwiseContractFixture.assertNothingLive();
    }
}
