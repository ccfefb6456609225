package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

/** The contract suite on slices of the sequential allocator. */
class SlabwiseSequentialContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return SlabwiseContractFixture.SEQUENTIAL.allocate(capacity, maxCapacity);
    }

    @Override
    protected void afterBuffersReleased() {
        SlabwiseContractFixture.assertNothingLive();
    }
}
