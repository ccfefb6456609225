package io.slabwise.netty;

import io.netty.buffer.ByteBufAllocator;
import io.slabwise.Allocation;
import io.slabwise.Allocator;

/**
 * A {@link SlabwiseDirectByteBuf} that never reports a memory address, even
 * where Netty's own direct buffers report theirs without native access
 * ({@link NativeAccess#ADDRESS_WITHOUT_IT}): made by an allocator built with
 * {@code memoryAddress(false)}. Code that asks {@code hasMemoryAddress()}
 * then takes its {@code ByteBuffer} path: Netty's native transports and
 * OpenSSL get the same memory's address from a direct NIO view of it instead
 * of from {@link #memoryAddress()}. Its slices and duplicates follow it, since
 * they ask it. Everything else is the parent class's NIO access.
 */
final class SlabwiseNoAddressDirectByteBuf extends SlabwiseDirectByteBuf {

    /** See {@link SlabwiseDirectByteBuf#SlabwiseDirectByteBuf()}. */
    SlabwiseNoAddressDirectByteBuf() {
    }

    /** See {@link SlabwiseDirectByteBuf#SlabwiseDirectByteBuf(ByteBufAllocator, Allocator, Allocation, int)}. */
    SlabwiseNoAddressDirectByteBuf(ByteBufAllocator allocator, Allocator source, Allocation allocation,
                                   int maxCapacity) {
        super(allocator, source, allocation, maxCapacity);
    }

    @Override
    public boolean hasMemoryAddress() {
        return false;
    }

    /** Throws {@link UnsupportedOperationException}, or, once released, {@link io.netty.util.IllegalReferenceCountException}. */
    @Override
    public long memoryAddress() {
        ensureAccessible();
        throw new UnsupportedOperationException("the allocator reports no memory address: read the bytes through nioBuffer()");
    }
}
