package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

/** The contract suite on Netty's own pooled direct buffers: proof that the suite encodes Netty's behaviour. */
class NettyPooledDirectContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return PooledByteBufAllocator.DEFAULT.directBuffer(capacity, maxCapacity);
    }
}
