package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;

/** The contract suite on composites of three Slabwise direct buffers. */
class SlabwiseCompositeContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        CompositeByteBuf composite = SlabwiseContractFixture.ALLOCATOR.compositeDirectBuffer();
        int first = capacity / 3;
        int second = capacity / 3;
        int[] parts = {first, second, capacity - first - second};
        for (int part : parts) {
            if (part > 0) {
                ByteBuf component = SlabwiseContractFixture.ALLOCATOR.directBuffer(part);
                component.writerIndex(part);
                composite.addComponent(false, component);
            }
        }
        return composite;
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
