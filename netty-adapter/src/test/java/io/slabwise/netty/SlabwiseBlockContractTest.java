package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

/** The contract suite on block-pool composites (16 KiB blocks, so most buffers span several). */
class SlabwiseBlockContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return SlabwiseContractFixture.BLOCKS.allocate(capacity);
    }

    @Override
    protected boolean isComposite() {
        return true;
    }

    @Override
    protected void afterBuffersReleased() {
        SlabwiseContractFixture.assertNothingLive();
    }
}
