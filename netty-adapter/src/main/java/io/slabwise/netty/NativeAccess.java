package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.internal.PlatformDependent;

/**
 * What this JVM and Netty allow a buffer to do with its memory's address,
 * decided once: native loads and stores ({@link SlabwiseUnsafeDirectByteBuf}),
 * and reporting the address without them.
 */
final class NativeAccess {

    /**
     * Whether buffers can use native loads and stores here: Netty has
     * {@code Unsafe} and the platform takes unaligned accesses. An allocator
     * may still choose buffers without native access (its builder's
     * package-private {@code nativeAccess(false)}, for tests).
     */
    static final boolean AVAILABLE = PlatformDependent.hasUnsafe() && PlatformDependent.isUnaligned();

    /**
     * Whether Netty's own direct buffers report their memory's address where
     * Netty has no {@code Unsafe} (Netty 4.2 does, Netty 4.1 does not): a
     * buffer without native access then reports its address too, so that
     * native transports and OpenSSL hand it to native code as they do
     * Netty's buffers, instead of going through a {@code ByteBuffer} view.
     * Java code still reads and writes through the buffer's checked paths.
     * An allocator built with {@code memoryAddress(false)} makes buffers that
     * report none all the same.
     * Asked of Netty once, by making and releasing one unpooled buffer.
     */
    static final boolean ADDRESS_WITHOUT_IT = nettyReportsAddressesWithoutUnsafe();

    private NativeAccess() {
    }

    private static boolean nettyReportsAddressesWithoutUnsafe() {
        if (PlatformDependent.hasUnsafe()) {
            return false; // Netty's buffers there have native access, and so do ours where the platform allows
        }
        ByteBuf probe = new UnpooledByteBufAllocator(false, true).directBuffer(1);
        try {
            return probe.hasMemoryAddress();
        } finally {
            probe.release();
        }
    }
}
