package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

/** The contract suite on slices of Slabwise's direct buffers without native access. */
class SlabwiseNoAddressSliceContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        ByteBuf parent = SlabwiseContractFixture.NO_ADDRESS.directBuffer(capacity + 24);
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
