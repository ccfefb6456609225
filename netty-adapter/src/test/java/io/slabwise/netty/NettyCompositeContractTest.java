package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

/** The contract suite on Netty's composites of pooled buffers, the reference for composite buffers. */
class NettyCompositeContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        CompositeByteBuf composite = PooledByteBufAllocator.DEFAULT.compositeDirectBuffer();
        int half = capacity / 2;
        for (int part : new int[] {half, capacity - half}) {
            if (part > 0) {
                ByteBuf component = PooledByteBufAllocator.DEFAULT.directBuffer(part);
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
}
