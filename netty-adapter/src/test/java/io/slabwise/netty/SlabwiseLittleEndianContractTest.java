package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

import java.nio.ByteOrder;

/** The contract suite on little-endian views of Slabwise's direct buffers. */
class SlabwiseLittleEndianContractTest extends AbstractByteBufContract {
    @Override
    @SuppressWarnings("deprecation") // ByteBuf.order(ByteOrder) is how Netty 4.1 users get little-endian views
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return SlabwiseContractFixture.ALLOCATOR.directBuffer(capacity, maxCapacity).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    protected ByteOrder order() {
        return ByteOrder.LITTLE_ENDIAN;
    }

    @Override
    protected void afterBuffersReleased() {
        SlabwiseContractFixture.assertNothingLive();
    }
}
