package io.slabwise.netty;

import io.netty.buffer.ByteBuf;

/**
 * The contract suite on Slabwise's direct buffers without native access: what
 * Netty 4.2 gets on JDK 24 and later, where {@code sun.misc.Unsafe} is off and
 * {@code hasMemoryAddress()} is false. Runs on any JVM.
 */
class SlabwiseNoAddressContractTest extends AbstractByteBufContract {
    @Override
    protected ByteBuf newBuffer(int capacity, int maxCapacity) {
        return SlabwiseContractFixture.NO_ADDRESS.directBuffer(capacity, maxCapacity);
    }

    @Override
    protected void afterBuffersReleased() {
        SlabwiseContractFixture.assertNothingLive();
    }
}
