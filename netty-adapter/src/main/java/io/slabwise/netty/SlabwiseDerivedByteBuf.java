package io.slabwise.netty;

import io.netty.buffer.AbstractByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ByteProcessor;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ScatteringByteChannel;

/**
 * A slice or a duplicate of a {@link SlabwiseDirectByteBuf}: a window on the
 * parent's bytes that shares its memory and its reference count.
 *
 * <pre>
 *  parent     [ 0 ......... adjustment ............... adjustment + capacity() ....... parent.capacity() )
 *  slice                    [ 0 ...................... capacity() )
 *  duplicate  [ 0 ..................................................................... capacity() )
 * </pre>
 *
 * <p>Every access is checked twice: against this window, then, because it goes
 * through the parent's public methods, against the parent's capacity at that
 * moment. Netty's own derived buffers check their window and then call the
 * parent's unchecked {@code _get}/{@code _set} methods, which is enough while
 * the parent keeps its size; but a slice taken before the parent shrank, and
 * so perhaps moved, would go on writing where the old memory was, which by
 * then belongs to other buffers. Here such an access throws
 * {@link IndexOutOfBoundsException}. {@link #memoryAddress()} is checked the
 * same way, since callers copy up to {@code capacity()} bytes from it.
 *
 * <p>Deriving again (a slice of a slice, a duplicate of a slice) derives from
 * the parent, so chains never grow; a window past the parent's current
 * capacity throws {@link IndexOutOfBoundsException}, as with Netty's pooled
 * and unpooled buffers (whose pooled ones skip the check only for a retained
 * buffer derived from a retained one). Reference counting is the parent's:
 * {@code retain()} and {@code release()} act on it, as with Netty's unpooled
 * derived buffers. Every NIO view a derived buffer hands out is a new one, so
 * derived buffers on different threads never share a view.
 *
 * <p><b>Retained slices and duplicates share the count too.</b> Netty's
 * pooled ones have a count of their own, start at 1, and release the parent
 * once when it reaches 0 (the parent's count differs only once a derived
 * buffer is itself retained). That cannot be matched here: Netty's leak-aware wrapper takes every derived
 * buffer but its own pooled ones for a sharer of the parent's leak tracker,
 * and closes that tracker when the derived buffer's {@code release()} returns
 * true. A count of its own would close it while the parent lives: a parent
 * dropped afterwards would go unreported, and the parent's own release would
 * fail the wrapper's {@code assert}.
 */
abstract class SlabwiseDerivedByteBuf extends AbstractByteBuf {

    final SlabwiseDirectByteBuf parent;
    /** Where this buffer's byte 0 is in the parent. */
    final int adjustment;

    SlabwiseDerivedByteBuf(SlabwiseDirectByteBuf parent, int adjustment, int maxCapacity) {
        super(maxCapacity);
        this.parent = parent;
        this.adjustment = adjustment;
    }

    /** The parent's index of this buffer's {@code index}. */
    final int idx(int index) {
        return adjustment + index;
    }

    /** A window of fixed length that cannot change its capacity. */
    static final class Slice extends SlabwiseDerivedByteBuf {

        private final int length;

        Slice(SlabwiseDirectByteBuf parent, int index, int length) {
            super(parent, index, length);
            this.length = length;
            writerIndex(length);
        }

        @Override
        public int capacity() {
            return length;
        }

        @Override
        public ByteBuf capacity(int newCapacity) {
            throw new UnsupportedOperationException("sliced buffer");
        }

        @Override
        public ByteBuf slice(int index, int length) {
            checkIndex(index, length);
            return parent.slice(idx(index), length);
        }

        @Override
        public ByteBuf duplicate() {
            return slice(0, length).setIndex(readerIndex(), writerIndex());
        }
    }

    /** The whole parent, with indexes of its own; its capacity is the parent's. */
    static final class Duplicate extends SlabwiseDerivedByteBuf {

        Duplicate(SlabwiseDirectByteBuf parent) {
            super(parent, 0, parent.maxCapacity());
        }

        @Override
        public int capacity() {
            return parent.capacity();
        }

        @Override
        public ByteBuf capacity(int newCapacity) {
            parent.capacity(newCapacity);
            return this;
        }

        @Override
        public ByteBuf slice(int index, int length) {
            checkIndex(index, length);
            return parent.slice(index, length);
        }

        @Override
        public ByteBuf duplicate() {
            return parent.duplicate().setIndex(readerIndex(), writerIndex());
        }
    }

    // ---- what the parent is ---------------------------------------------------------------------

    @Override
    public ByteBuf unwrap() {
        return parent;
    }

    @Override
    public ByteBufAllocator alloc() {
        return parent.alloc();
    }

    @Override
    @SuppressWarnings("deprecation")
    public ByteOrder order() {
        return ByteOrder.BIG_ENDIAN;
    }

    @Override
    public boolean isDirect() {
        return true;
    }

    @Override
    public boolean isContiguous() {
        return true;
    }

    @Override
    public boolean hasArray() {
        return false;
    }

    @Override
    public byte[] array() {
        throw new UnsupportedOperationException("direct buffer");
    }

    @Override
    public int arrayOffset() {
        throw new UnsupportedOperationException("direct buffer");
    }

    @Override
    public boolean hasMemoryAddress() {
        return parent.hasMemoryAddress();
    }

    /**
     * The parent's address plus this window's start.
     *
     * @throws IndexOutOfBoundsException when the window no longer lies inside the parent
     */
    @Override
    public long memoryAddress() {
        long base = parent.memoryAddress();
        int end = idx(capacity());
        if (end > parent.capacity()) {
            throw new IndexOutOfBoundsException("window [" + adjustment + ", " + end + ") is past the parent's capacity "
                    + parent.capacity());
        }
        return base + adjustment;
    }

    // ---- reference counting: the parent's ------------------------------------------------------

    @Override
    public int refCnt() {
        return parent.refCnt();
    }

    @Override
    public ByteBuf retain() {
        parent.retain();
        return this;
    }

    @Override
    public ByteBuf retain(int increment) {
        parent.retain(increment);
        return this;
    }

    @Override
    public ByteBuf touch() {
        parent.touch();
        return this;
    }

    @Override
    public ByteBuf touch(Object hint) {
        parent.touch(hint);
        return this;
    }

    @Override
    public boolean release() {
        return parent.release();
    }

    @Override
    public boolean release(int decrement) {
        return parent.release(decrement);
    }

    // ---- primitive access, through the parent's checked methods ----------------------------------

    @Override
    protected byte _getByte(int index) {
        return parent.getByte(idx(index));
    }

    @Override
    protected short _getShort(int index) {
        return parent.getShort(idx(index));
    }

    @Override
    protected short _getShortLE(int index) {
        return parent.getShortLE(idx(index));
    }

    @Override
    protected int _getUnsignedMedium(int index) {
        return parent.getUnsignedMedium(idx(index));
    }

    @Override
    protected int _getUnsignedMediumLE(int index) {
        return parent.getUnsignedMediumLE(idx(index));
    }

    @Override
    protected int _getInt(int index) {
        return parent.getInt(idx(index));
    }

    @Override
    protected int _getIntLE(int index) {
        return parent.getIntLE(idx(index));
    }

    @Override
    protected long _getLong(int index) {
        return parent.getLong(idx(index));
    }

    @Override
    protected long _getLongLE(int index) {
        return parent.getLongLE(idx(index));
    }

    @Override
    protected void _setByte(int index, int value) {
        parent.setByte(idx(index), value);
    }

    @Override
    protected void _setShort(int index, int value) {
        parent.setShort(idx(index), value);
    }

    @Override
    protected void _setShortLE(int index, int value) {
        parent.setShortLE(idx(index), value);
    }

    @Override
    protected void _setMedium(int index, int value) {
        parent.setMedium(idx(index), value);
    }

    @Override
    protected void _setMediumLE(int index, int value) {
        parent.setMediumLE(idx(index), value);
    }

    @Override
    protected void _setInt(int index, int value) {
        parent.setInt(idx(index), value);
    }

    @Override
    protected void _setIntLE(int index, int value) {
        parent.setIntLE(idx(index), value);
    }

    @Override
    protected void _setLong(int index, long value) {
        parent.setLong(idx(index), value);
    }

    @Override
    protected void _setLongLE(int index, long value) {
        parent.setLongLE(idx(index), value);
    }

    // ---- bulk access ------------------------------------------------------------------------

    @Override
    public ByteBuf getBytes(int index, ByteBuf dst, int dstIndex, int length) {
        checkIndex(index, length);
        parent.getBytes(idx(index), dst, dstIndex, length);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, byte[] dst, int dstIndex, int length) {
        checkIndex(index, length);
        parent.getBytes(idx(index), dst, dstIndex, length);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, ByteBuffer dst) {
        checkIndex(index, dst.remaining());
        parent.getBytes(idx(index), dst);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, OutputStream out, int length) throws IOException {
        checkIndex(index, length);
        parent.getBytes(idx(index), out, length);
        return this;
    }

    @Override
    public int getBytes(int index, GatheringByteChannel out, int length) throws IOException {
        checkIndex(index, length);
        return parent.getBytes(idx(index), out, length);
    }

    @Override
    public int getBytes(int index, FileChannel out, long position, int length) throws IOException {
        checkIndex(index, length);
        return parent.getBytes(idx(index), out, position, length);
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuf src, int srcIndex, int length) {
        checkIndex(index, length);
        parent.setBytes(idx(index), src, srcIndex, length);
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, byte[] src, int srcIndex, int length) {
        checkIndex(index, length);
        parent.setBytes(idx(index), src, srcIndex, length);
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuffer src) {
        checkIndex(index, src.remaining());
        parent.setBytes(idx(index), src);
        return this;
    }

    @Override
    public int setBytes(int index, InputStream in, int length) throws IOException {
        checkIndex(index, length);
        return parent.setBytes(idx(index), in, length);
    }

    // a new view for each read from a channel, not the parent's reused one: two slices of one buffer may be
    // filled from channels on two threads at once; the parent's nioBuffer makes it after checking the window
    // against the parent's current capacity, as every other access here is checked

    @Override
    public int setBytes(int index, ScatteringByteChannel in, int length) throws IOException {
        checkIndex(index, length);
        return ForeignCode.readFrom(in, parent.nioBuffer(idx(index), length));
    }

    @Override
    public int setBytes(int index, FileChannel in, long position, int length) throws IOException {
        checkIndex(index, length);
        return ForeignCode.readFrom(in, parent.nioBuffer(idx(index), length), position);
    }

    @Override
    public ByteBuf setZero(int index, int length) {
        if (length == 0) {
            return this;
        }
        checkIndex(index, length);
        parent.setZero(idx(index), length);
        return this;
    }

    @Override
    public ByteBuf copy(int index, int length) {
        checkIndex(index, length);
        return parent.copy(idx(index), length);
    }

    @Override
    public int forEachByte(ByteProcessor processor) {
        return forEachByte(readerIndex(), readableBytes(), processor);
    }

    @Override
    public int forEachByteDesc(ByteProcessor processor) {
        return forEachByteDesc(readerIndex(), readableBytes(), processor);
    }

    @Override
    public int forEachByte(int index, int length, ByteProcessor processor) {
        checkIndex(index, length);
        return fromParent(parent.forEachByte(idx(index), length, processor));
    }

    @Override
    public int forEachByteDesc(int index, int length, ByteProcessor processor) {
        checkIndex(index, length);
        return fromParent(parent.forEachByteDesc(idx(index), length, processor));
    }

    /** This buffer's index of a parent's index, or -1 for -1. */
    private int fromParent(int parentIndex) {
        return parentIndex < 0 ? -1 : parentIndex - adjustment;
    }

    // ---- NIO views: a new one every time -------------------------------------------------------

    @Override
    public int nioBufferCount() {
        return 1;
    }

    @Override
    public ByteBuffer nioBuffer(int index, int length) {
        checkIndex(index, length);
        return parent.nioBuffer(idx(index), length);
    }

    @Override
    public ByteBuffer[] nioBuffers(int index, int length) {
        return new ByteBuffer[] {nioBuffer(index, length)};
    }

    @Override
    public ByteBuffer internalNioBuffer(int index, int length) {
        return nioBuffer(index, length);
    }
}
