package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

/** The contract suite on duplicates of Netty's pooled buffers, the reference for duplicate views. */
class NettyPooledDuplicateContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return PooledByteBufAllocator.DEFAULT.directBuffer(capacity, maxCapacity).duplicate();
    }

    @Override
    protected boolean isDuplicate() {
        return true;
    }
}
