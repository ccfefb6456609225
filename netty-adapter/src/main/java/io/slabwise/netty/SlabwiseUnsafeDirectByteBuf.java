package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.internal.PlatformDependent;
import io.slabwise.Allocation;
import io.slabwise.Allocator;

/**
 * A {@link SlabwiseDirectByteBuf} that reads and writes its bytes with native
 * loads and stores through Netty's {@link PlatformDependent}, and exposes its
 * {@link #memoryAddress()}. Made only where
 * {@link NativeAccess#AVAILABLE} holds: Netty has
 * {@code sun.misc.Unsafe} and the platform takes unaligned accesses.
 *
 * <p>Copies to and from another buffer that has an address go address to
 * address; anything else takes the NIO paths of the parent class, which never
 * hand a copy back to the other buffer.
 */
final class SlabwiseUnsafeDirectByteBuf extends SlabwiseDirectByteBuf {

    private static final boolean NATIVE_BIG_ENDIAN = PlatformDependent.BIG_ENDIAN_NATIVE_ORDER;

    /** See {@link SlabwiseDirectByteBuf#SlabwiseDirectByteBuf()}. */
    SlabwiseUnsafeDirectByteBuf() {
    }

    /** See {@link SlabwiseDirectByteBuf#SlabwiseDirectByteBuf(ByteBufAllocator, Allocator, Allocation, int)}. */
    SlabwiseUnsafeDirectByteBuf(ByteBufAllocator allocator, Allocator source, Allocation allocation,
                                int maxCapacity) {
        super(allocator, source, allocation, maxCapacity);
    }

    @Override
    public boolean hasMemoryAddress() {
        return true;
    }

    @Override
    public long memoryAddress() {
        ensureAccessible();
        return address;
    }

    // ---- primitive access -------------------------------------------------------------------

    @Override
    protected byte _getByte(int index) {
        return PlatformDependent.getByte(address + index);
    }

    @Override
    protected short _getShort(int index) {
        short v = PlatformDependent.getShort(address + index);
        return NATIVE_BIG_ENDIAN ? v : Short.reverseBytes(v);
    }

    @Override
    protected int _getInt(int index) {
        int v = PlatformDependent.getInt(address + index);
        return NATIVE_BIG_ENDIAN ? v : Integer.reverseBytes(v);
    }

    @Override
    protected long _getLong(int index) {
        long v = PlatformDependent.getLong(address + index);
        return NATIVE_BIG_ENDIAN ? v : Long.reverseBytes(v);
    }

    @Override
    protected void _setByte(int index, int value) {
        PlatformDependent.putByte(address + index, (byte) value);
    }

    @Override
    protected void _setShort(int index, int value) {
        PlatformDependent.putShort(address + index, NATIVE_BIG_ENDIAN ? (short) value : Short.reverseBytes((short) value));
    }

    @Override
    protected void _setInt(int index, int value) {
        PlatformDependent.putInt(address + index, NATIVE_BIG_ENDIAN ? value : Integer.reverseBytes(value));
    }

    @Override
    protected void _setLong(int index, long value) {
        PlatformDependent.putLong(address + index, NATIVE_BIG_ENDIAN ? value : Long.reverseBytes(value));
    }

    // ---- bulk copies ------------------------------------------------------------------------

    @Override
    void copyTo(int index, byte[] dst, int dstIndex, int length) {
        PlatformDependent.copyMemory(address + index, dst, dstIndex, length);
    }

    @Override
    void copyFrom(int index, byte[] src, int srcIndex, int length) {
        PlatformDependent.copyMemory(src, srcIndex, address + index, length);
    }

    @Override
    void copyTo(int index, ByteBuf dst, int dstIndex, int length) {
        if (dst.hasMemoryAddress()) {
            PlatformDependent.copyMemory(address + index, dst.memoryAddress() + dstIndex, length);
        } else {
            super.copyTo(index, dst, dstIndex, length);
        }
    }

    @Override
    void copyFrom(int index, ByteBuf src, int srcIndex, int length) {
        if (src.hasMemoryAddress()) {
            PlatformDependent.copyMemory(src.memoryAddress() + srcIndex, address + index, length);
        } else {
            super.copyFrom(index, src, srcIndex, length);
        }
    }

    @Override
    public ByteBuf setZero(int index, int length) {
        if (length == 0) {
            return this;
        }
        checkIndex(index, length);
        PlatformDependent.setMemory(address + index, length, (byte) 0);
        return this;
    }
}
