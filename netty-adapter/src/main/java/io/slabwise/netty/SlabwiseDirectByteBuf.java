package io.slabwise.netty;

import io.netty.buffer.AbstractReferenceCountedByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.slabwise.Allocator;
import io.netty.util.Recycler;
import io.netty.util.internal.PlatformDependent;
import io.slabwise.Allocation;
import io.slabwise.MemoryPool;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ScatteringByteChannel;

/**
 * A direct {@link ByteBuf} over one pool {@link Allocation}.
 *
 * <pre>
 *  chunk memory  [ ...... | 0 ........ capacity() ....... reserved | ...... ]
 *                          ^ memoryAddress() = chunk address + allocation offset
 * </pre>
 *
 * <p>{@code capacity()} is the capacity the caller asked for, never the size
 * class behind it. Bytes are read and written with native loads and stores
 * through Netty's {@link PlatformDependent} where it has {@code Unsafe} and
 * unaligned access, and through the chunk's {@link ByteBuffer} otherwise.
 * Growing past the size class moves the bytes to a new allocation from the
 * pool; shrinking or growing within it stays in place.
 *
 * <p>When the allocator recycles buffer objects, a released buffer object is
 * reused for a later allocation; otherwise every allocation gets a new object,
 * so that a reference kept past {@code release()} can only ever see
 * {@link io.netty.util.IllegalReferenceCountException}.
 */
final class SlabwiseDirectByteBuf extends AbstractReferenceCountedByteBuf {

    private static final boolean NATIVE_ACCESS = PlatformDependent.hasUnsafe() && PlatformDependent.isUnaligned();
    private static final boolean NATIVE_BIG_ENDIAN = PlatformDependent.BIG_ENDIAN_NATIVE_ORDER;
    private static final int STREAM_COPY_CHUNK = 8192;

    private static final Recycler<SlabwiseDirectByteBuf> RECYCLER = new Recycler<SlabwiseDirectByteBuf>() {
        @Override
        protected SlabwiseDirectByteBuf newObject(Handle<SlabwiseDirectByteBuf> handle) {
            return new SlabwiseDirectByteBuf(handle);
        }
    };

    private final Recycler.Handle<SlabwiseDirectByteBuf> recyclerHandle;
    private Allocation allocation = new Allocation();
    private ByteBufAllocator allocator;
    private MemoryPool pool;
    /** Where this buffer's memory comes from, and where it moves to when it must grow. */
    private Allocator source;
    private long address;
    private int offset;
    private int length;
    /** The chunk's buffer; {@code offset} is where this buffer starts in it. */
    private ByteBuffer memory;
    /** A duplicate of {@code memory} for internal NIO views, made on first use. */
    private ByteBuffer tmpNioBuffer;

    private SlabwiseDirectByteBuf(Recycler.Handle<SlabwiseDirectByteBuf> recyclerHandle) {
        super(0);
        this.recyclerHandle = recyclerHandle;
    }

    /**
     * Allocates a buffer of {@code capacity} bytes from {@code source}; the
     * caller has validated the capacities. Returns null when the source
     * refused at a limit under {@link io.slabwise.LimitPolicy#RETURN_NULL}.
     */
    static SlabwiseDirectByteBuf allocate(ByteBufAllocator allocator, MemoryPool pool, Allocator source, int capacity,
                                          int maxCapacity, boolean recycle) {
        SlabwiseDirectByteBuf buf = newInstance(recycle);
        if (!source.allocate(capacity, buf.allocation)) {
            return null;
        }
        buf.init(allocator, pool, source, maxCapacity);
        return buf;
    }

    /**
     * Allocates from the general pool of {@code source}'s category, returning
     * null at a limit whatever the policy, without waiting.
     */
    static SlabwiseDirectByteBuf tryAllocate(ByteBufAllocator allocator, MemoryPool pool, Allocator source, int capacity,
                                             int maxCapacity, boolean recycle) {
        SlabwiseDirectByteBuf buf = newInstance(recycle);
        if (!pool.tryAllocate(source.category(), capacity, buf.allocation, true)) {
            return null;
        }
        buf.init(allocator, pool, source, maxCapacity);
        return buf;
    }

    /**
     * A buffer over an allocation made elsewhere (a block of a block pool, say),
     * taking ownership of it; {@code growSource} serves it if it must grow.
     */
    static SlabwiseDirectByteBuf wrap(ByteBufAllocator allocator, MemoryPool pool, Allocator growSource,
                                      Allocation allocation, int maxCapacity) {
        SlabwiseDirectByteBuf buf = new SlabwiseDirectByteBuf(null);
        buf.allocation = allocation;
        buf.init(allocator, pool, growSource, maxCapacity);
        return buf;
    }

    private static SlabwiseDirectByteBuf newInstance(boolean recycle) {
        return recycle ? RECYCLER.get() : new SlabwiseDirectByteBuf(null);
    }

    private void init(ByteBufAllocator allocator, MemoryPool pool, Allocator source, int maxCapacity) {
        this.allocator = allocator;
        this.pool = pool;
        this.source = source;
        attach(allocation);
        maxCapacity(maxCapacity);
        if (recyclerHandle != null) {
            // a recycled object: a new object already has a reference count of 1 and every index at 0,
            // and resetting its count again would cost a second volatile store on every allocation
            resetRefCnt();
            setIndex(0, 0);
            markReaderIndex();
            markWriterIndex();
        }
    }

    private void attach(Allocation a) {
        ByteBuffer chunkMemory = a.memory();
        if (chunkMemory != memory) {
            memory = chunkMemory;
            tmpNioBuffer = null;
        }
        address = a.address();
        offset = a.offset();
        length = a.requestedBytes();
    }

    @Override
    protected void deallocate() {
        // allocator, pool and source stay: Netty may call alloc() on a released buffer before
        // the accessibility check (ensureWritable), which must then throw IllegalReferenceCountException
        pool.free(allocation);
        if (recyclerHandle != null) {
            recyclerHandle.recycle(this);
        } else {
            tmpNioBuffer = null;
        }
    }

    /** The pool allocation behind this buffer (for accounting and tests). */
    Allocation allocation() {
        return allocation;
    }

    @Override
    public int capacity() {
        return length;
    }

    @Override
    public ByteBuf capacity(int newCapacity) {
        checkNewCapacity(newCapacity);
        if (newCapacity == length) {
            return this;
        }
        if (!pool.resizeInPlace(allocation, newCapacity)) {
            Allocation moved = new Allocation();
            if (!source.allocate(newCapacity, moved)) {
                throw pool.limitException(source.category(), newCapacity);
            }
            int keep = Math.min(length, newCapacity);
            copy(address, moved.address(), memory, offset, moved.memory(), moved.offset(), keep);
            pool.free(allocation);
            allocation = moved;
        }
        int oldLength = length;
        attach(allocation);
        if (newCapacity < oldLength) {
            trimIndicesToCapacity(newCapacity);
        }
        return this;
    }

    private static void copy(long fromAddress, long toAddress, ByteBuffer from, int fromOffset, ByteBuffer to,
                             int toOffset, int bytes) {
        if (NATIVE_ACCESS) {
            PlatformDependent.copyMemory(fromAddress, toAddress, bytes);
        } else {
            to.duplicate().position(toOffset).put(from.duplicate().position(fromOffset).limit(fromOffset + bytes));
        }
    }

    @Override
    public ByteBufAllocator alloc() {
        return allocator;
    }

    @Override
    @SuppressWarnings("deprecation")
    public ByteOrder order() {
        return ByteOrder.BIG_ENDIAN;
    }

    @Override
    public ByteBuf unwrap() {
        return null;
    }

    @Override
    public boolean isDirect() {
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
        return NATIVE_ACCESS;
    }

    @Override
    public long memoryAddress() {
        ensureAccessible();
        if (!NATIVE_ACCESS) {
            throw new UnsupportedOperationException("native access is not available");
        }
        return address;
    }

    // ---- primitive access -------------------------------------------------------------------

    @Override
    protected byte _getByte(int index) {
        return NATIVE_ACCESS ? PlatformDependent.getByte(address + index) : memory.get(offset + index);
    }

    @Override
    protected short _getShort(int index) {
        if (NATIVE_ACCESS) {
            short v = PlatformDependent.getShort(address + index);
            return NATIVE_BIG_ENDIAN ? v : Short.reverseBytes(v);
        }
        return memory.getShort(offset + index);
    }

    @Override
    protected short _getShortLE(int index) {
        return Short.reverseBytes(_getShort(index));
    }

    @Override
    protected int _getUnsignedMedium(int index) {
        return (_getByte(index) & 0xff) << 16 | (_getShort(index + 1) & 0xffff);
    }

    @Override
    protected int _getUnsignedMediumLE(int index) {
        return (_getByte(index) & 0xff) | (_getShortLE(index + 1) & 0xffff) << 8;
    }

    @Override
    protected int _getInt(int index) {
        if (NATIVE_ACCESS) {
            int v = PlatformDependent.getInt(address + index);
            return NATIVE_BIG_ENDIAN ? v : Integer.reverseBytes(v);
        }
        return memory.getInt(offset + index);
    }

    @Override
    protected int _getIntLE(int index) {
        return Integer.reverseBytes(_getInt(index));
    }

    @Override
    protected long _getLong(int index) {
        if (NATIVE_ACCESS) {
            long v = PlatformDependent.getLong(address + index);
            return NATIVE_BIG_ENDIAN ? v : Long.reverseBytes(v);
        }
        return memory.getLong(offset + index);
    }

    @Override
    protected long _getLongLE(int index) {
        return Long.reverseBytes(_getLong(index));
    }

    @Override
    protected void _setByte(int index, int value) {
        if (NATIVE_ACCESS) {
            PlatformDependent.putByte(address + index, (byte) value);
        } else {
            memory.put(offset + index, (byte) value);
        }
    }

    @Override
    protected void _setShort(int index, int value) {
        if (NATIVE_ACCESS) {
            PlatformDependent.putShort(address + index, NATIVE_BIG_ENDIAN ? (short) value : Short.reverseBytes((short) value));
        } else {
            memory.putShort(offset + index, (short) value);
        }
    }

    @Override
    protected void _setShortLE(int index, int value) {
        _setShort(index, Short.reverseBytes((short) value));
    }

    @Override
    protected void _setMedium(int index, int value) {
        _setByte(index, value >>> 16);
        _setShort(index + 1, value);
    }

    @Override
    protected void _setMediumLE(int index, int value) {
        _setByte(index, value);
        _setShortLE(index + 1, value >>> 8);
    }

    @Override
    protected void _setInt(int index, int value) {
        if (NATIVE_ACCESS) {
            PlatformDependent.putInt(address + index, NATIVE_BIG_ENDIAN ? value : Integer.reverseBytes(value));
        } else {
            memory.putInt(offset + index, value);
        }
    }

    @Override
    protected void _setIntLE(int index, int value) {
        _setInt(index, Integer.reverseBytes(value));
    }

    @Override
    protected void _setLong(int index, long value) {
        if (NATIVE_ACCESS) {
            PlatformDependent.putLong(address + index, NATIVE_BIG_ENDIAN ? value : Long.reverseBytes(value));
        } else {
            memory.putLong(offset + index, value);
        }
    }

    @Override
    protected void _setLongLE(int index, long value) {
        _setLong(index, Long.reverseBytes(value));
    }

    // ---- bulk access ------------------------------------------------------------------------

    @Override
    public ByteBuf getBytes(int index, ByteBuf dst, int dstIndex, int length) {
        checkDstIndex(index, length, dstIndex, dst.capacity());
        if (length == 0) {
            return this;
        }
        if (NATIVE_ACCESS && dst.hasMemoryAddress()) {
            PlatformDependent.copyMemory(address + index, dst.memoryAddress() + dstIndex, length);
        } else if (dst.hasArray()) {
            getBytes(index, dst.array(), dst.arrayOffset() + dstIndex, length);
        } else {
            dst.setBytes(dstIndex, this, index, length);
        }
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, byte[] dst, int dstIndex, int length) {
        checkDstIndex(index, length, dstIndex, dst.length);
        if (length == 0) {
            return this;
        }
        if (NATIVE_ACCESS) {
            PlatformDependent.copyMemory(address + index, dst, dstIndex, length);
        } else {
            memory.duplicate().position(offset + index).get(dst, dstIndex, length);
        }
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, ByteBuffer dst) {
        int bytes = dst.remaining();
        checkIndex(index, bytes);
        dst.put(view(index, bytes));
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, OutputStream out, int length) throws IOException {
        checkIndex(index, length);
        if (length == 0) {
            return this;
        }
        byte[] tmp = new byte[Math.min(length, STREAM_COPY_CHUNK)];
        for (int done = 0; done < length; ) {
            int n = Math.min(tmp.length, length - done);
            getBytes(index + done, tmp, 0, n);
            out.write(tmp, 0, n);
            done += n;
        }
        return this;
    }

    @Override
    public int getBytes(int index, GatheringByteChannel out, int length) throws IOException {
        checkIndex(index, length);
        if (length == 0) {
            return 0;
        }
        return out.write(internalView(index, length));
    }

    @Override
    public int getBytes(int index, FileChannel out, long position, int length) throws IOException {
        checkIndex(index, length);
        if (length == 0) {
            return 0;
        }
        return out.write(internalView(index, length), position);
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuf src, int srcIndex, int length) {
        checkSrcIndex(index, length, srcIndex, src.capacity());
        if (length == 0) {
            return this;
        }
        if (NATIVE_ACCESS && src.hasMemoryAddress()) {
            PlatformDependent.copyMemory(src.memoryAddress() + srcIndex, address + index, length);
        } else if (src.hasArray()) {
            setBytes(index, src.array(), src.arrayOffset() + srcIndex, length);
        } else {
            src.getBytes(srcIndex, this, index, length);
        }
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, byte[] src, int srcIndex, int length) {
        checkSrcIndex(index, length, srcIndex, src.length);
        if (length == 0) {
            return this;
        }
        if (NATIVE_ACCESS) {
            PlatformDependent.copyMemory(src, srcIndex, address + index, length);
        } else {
            memory.duplicate().position(offset + index).put(src, srcIndex, length);
        }
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuffer src) {
        int bytes = src.remaining();
        checkIndex(index, bytes);
        ByteBuffer target = internalView(index, bytes);
        if (src == target) {
            src = src.duplicate();
        }
        target.put(src);
        return this;
    }

    @Override
    public int setBytes(int index, InputStream in, int length) throws IOException {
        checkIndex(index, length);
        byte[] tmp = new byte[length];
        int read = in.read(tmp, 0, length);
        if (read <= 0) {
            return read;
        }
        setBytes(index, tmp, 0, read);
        return read;
    }

    @Override
    public int setBytes(int index, ScatteringByteChannel in, int length) throws IOException {
        checkIndex(index, length);
        try {
            return in.read(internalView(index, length));
        } catch (ClosedChannelException ignored) {
            return -1;
        }
    }

    @Override
    public int setBytes(int index, FileChannel in, long position, int length) throws IOException {
        checkIndex(index, length);
        try {
            return in.read(internalView(index, length), position);
        } catch (ClosedChannelException ignored) {
            return -1;
        }
    }

    @Override
    public ByteBuf setZero(int index, int length) {
        if (length == 0) {
            return this;
        }
        checkIndex(index, length);
        if (NATIVE_ACCESS) {
            PlatformDependent.setMemory(address + index, length, (byte) 0);
            return this;
        }
        return super.setZero(index, length);
    }

    @Override
    public ByteBuf copy(int index, int length) {
        checkIndex(index, length);
        ByteBuf copy = alloc().directBuffer(length, maxCapacity());
        return copy.writeBytes(this, index, length);
    }

    // ---- NIO views --------------------------------------------------------------------------

    @Override
    public int nioBufferCount() {
        return 1;
    }

    @Override
    public ByteBuffer nioBuffer(int index, int length) {
        checkIndex(index, length);
        return view(index, length);
    }

    @Override
    public ByteBuffer[] nioBuffers(int index, int length) {
        return new ByteBuffer[] {nioBuffer(index, length)};
    }

    @Override
    public ByteBuffer internalNioBuffer(int index, int length) {
        checkIndex(index, length);
        return internalView(index, length);
    }

    /** A new buffer over {@code [index, index + length)}, position 0, big-endian. */
    private ByteBuffer view(int index, int length) {
        return memory.slice(offset + index, length);
    }

    /** The reused duplicate of the chunk memory, positioned over {@code [index, index + length)}. */
    private ByteBuffer internalView(int index, int length) {
        ByteBuffer tmp = tmpNioBuffer;
        if (tmp == null) {
            tmpNioBuffer = tmp = memory.duplicate();
        }
        int start = offset + index;
        tmp.limit(start + length).position(start);
        return tmp;
    }
}
