package io.slabwise.netty;

import io.netty.buffer.AbstractByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ByteProcessor;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.internal.ObjectUtil;
import io.slabwise.Allocation;
import io.slabwise.internal.EngineAccess;
import io.slabwise.Allocator;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ScatteringByteChannel;

/**
 * A direct {@link ByteBuf} over one pool {@link Allocation}.
 *
 * <pre>
 *  chunk memory  [ ...... | 0 ........ capacity() ....... reserved | ...... ]
 *                          ^ offset in the chunk's ByteBuffer (address + offset natively)
 * </pre>
 *
 * <p>{@code capacity()} is the capacity the caller asked for, never the size
 * class behind it. Growing past the size class moves the bytes to a new
 * allocation from the pool; shrinking or growing within it stays in place.
 *
 * <p><b>Two ways to reach the bytes.</b> This class reads and writes through
 * the chunk's {@link ByteBuffer} with absolute NIO methods, so it works on
 * every JVM, including Netty 4.2 on JDK 24 and later, where Netty leaves
 * {@code sun.misc.Unsafe} off; it reports its memory address only where
 * Netty's own direct buffers report theirs without native access.
 * {@link SlabwiseUnsafeDirectByteBuf} adds native loads and stores and reports
 * its address; the allocator makes those wherever {@link NativeAccess#AVAILABLE} holds.
 * {@link SlabwiseNoAddressDirectByteBuf} never reports an address (an
 * allocator built with {@code memoryAddress(false)}); see {@link DirectBufferKind}.
 *
 * <p><b>Copies between buffers always end.</b> A copy to or from another
 * {@code ByteBuf} goes address to address (native access on both sides), array
 * to memory, or else hands the other buffer a {@link ByteBuffer} view of this
 * buffer's bytes. A buffer can only fill or drain a {@code ByteBuffer}; it
 * cannot pass the copy back to this one, so two buffers without addresses or
 * arrays never bounce a copy between their {@code getBytes} and
 * {@code setBytes}.
 *
 * <p><b>Derived buffers stay inside.</b> Slices and duplicates are
 * {@link SlabwiseDerivedByteBuf}s, which reach this buffer only through its
 * checked methods: after {@link #capacity(int)} shrinks it (and perhaps moves
 * it), a slice taken before gets {@link IndexOutOfBoundsException} past the
 * new capacity instead of reaching memory that now belongs to other buffers.
 *
 * <p><b>Threads.</b> As with Netty's pooled buffers, absolute reads may run on
 * several threads at once: every absolute copy out, to arrays, buffers or
 * channels, uses a view of its own. One internal view is reused only by
 * {@link #internalNioBuffer}, the relative {@code readBytes} to channels (which
 * move the reader index, so they are single-threaded anyway) and the writes
 * from channels, as in Netty's {@code PooledByteBuf}.
 *
 * <p>When the allocator recycles buffer objects, a released buffer object is
 * reused for a later allocation; otherwise every allocation gets a new object,
 * so that a reference kept past {@code release()} can only ever see
 * {@link io.netty.util.IllegalReferenceCountException}.
 *
 * <p><b>The reference count is this object's own field.</b> Netty 4.2's
 * reference-counted base class keeps its count in a second object, which
 * would double the objects of an allocation that recycles nothing (and add a
 * load to every release); this class keeps a plain {@code int}, changed only
 * by compare-and-set, with Netty's semantics: 1 when made, 0 once released, an
 * {@link IllegalReferenceCountException} for a retain or release of a released
 * buffer, a release of more than the count, or a count past
 * {@code Integer.MAX_VALUE}.
 */
class SlabwiseDirectByteBuf extends AbstractByteBuf {

    /** The engine beyond its public API: a constant, so each call through it is a direct call. */
    static final EngineAccess.Engine ENGINE = EngineAccess.engine();

    private static final VarHandle REF_CNT;

    static {
        try {
            REF_CNT = MethodHandles.lookup().findVarHandle(SlabwiseDirectByteBuf.class, "refCnt", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Live references: 1 when made, 0 once released. Set by the constructor,
     * then changed only through {@link #REF_CNT}: compare-and-exchange, and a
     * release store when a recycled object is reused.
     */
    private int refCnt;

    /**
     * The pool memory behind this buffer. A buffer that is not recycled has a
     * holder from its thread's stash (or the one it wraps) and drops it when
     * released, so a stale reference never reaches the holder that a later
     * buffer fills. A recycled one is the holder's attachment and keeps it:
     * holder and object are reused as a pair ({@link #isRecycled()}). Its
     * category names the pool that frees it. No field is spent on either: at
     * 72 bytes the object is a word smaller than with them.
     */
    private Allocation allocation;
    private ByteBufAllocator allocator;
    /** Where this buffer's memory comes from, and where it moves to when it must grow. */
    private Allocator source;
    /** The native address of byte 0; used only by {@link SlabwiseUnsafeDirectByteBuf}. */
    long address;
    /** Where byte 0 is in {@link #memory}. */
    int offset;
    private int length;
    /** The chunk's buffer, whole: never move its position or limit. */
    ByteBuffer memory;
    /** A duplicate of {@code memory} for the internal NIO view, made on first use. */
    private ByteBuffer tmpNioBuffer;

    /** A buffer object to be recycled, holding nothing yet: {@link #reuse} sets it up for each allocation. */
    SlabwiseDirectByteBuf() {
        super(0);
        refCnt = 1;
        // a plain store, not a volatile one (a full fence on x86, on every allocation); the fence keeps a
        // racy publication from showing a count of 0, as Netty's buffers do
        VarHandle.storeStoreFence();
    }

    /**
     * A buffer that is not recycled, over {@code allocation}: every field is
     * set here, before the fence, so the compiler can write them as it
     * initialises the new object instead of zeroing them first and storing
     * them again.
     */
    SlabwiseDirectByteBuf(ByteBufAllocator allocator, Allocator source, Allocation allocation, int maxCapacity) {
        super(maxCapacity);
        this.allocation = allocation;
        this.allocator = allocator;
        this.source = source;
        this.memory = ENGINE.chunkMemory(allocation);
        this.address = allocation.address();
        this.offset = allocation.offset();
        this.length = allocation.requestedBytes();
        refCnt = 1;
        VarHandle.storeStoreFence(); // as above
    }

    /** Sets up a recycled object, new or reused, for the allocation {@code a} it now holds, as a new buffer would be. */
    void reuse(Allocation a, ByteBufAllocator allocator, Allocator source, int maxCapacity) {
        // a recycled object is long-lived, and a reference stored into a long-lived object costs G1 a memory
        // fence and a card mark: what it already holds (the usual case) is not stored again
        if (allocation != a) { // a recycled object comes back with its own holder
            allocation = a;
        }
        if (this.allocator != allocator) {
            this.allocator = allocator;
        }
        if (this.source != source) {
            this.source = source;
        }
        attach(allocation);
        maxCapacity(maxCapacity);
        REF_CNT.setRelease(this, 1);
        setIndex(0, 0);
        markReaderIndex();
        markWriterIndex();
    }

    private void attach(Allocation a) {
        ByteBuffer chunkMemory = ENGINE.chunkMemory(a);
        if (chunkMemory != memory) {
            memory = chunkMemory;
            tmpNioBuffer = null;
        }
        address = a.address();
        offset = a.offset();
        length = a.requestedBytes();
    }

    @Override
    public int refCnt() {
        return (int) REF_CNT.getAcquire(this);
    }

    @Override
    public ByteBuf retain() {
        return retain0(1);
    }

    @Override
    public ByteBuf retain(int increment) {
        return retain0(ObjectUtil.checkPositive(increment, "increment"));
    }

    private ByteBuf retain0(int increment) {
        int count = (int) REF_CNT.get(this); // a plain read: the compare-and-exchange checks it
        for (;;) {
            if (count == 0 || count > Integer.MAX_VALUE - increment) {
                throw new IllegalReferenceCountException(count, increment);
            }
            int witness = (int) REF_CNT.compareAndExchange(this, count, count + increment);
            if (witness == count) {
                return this;
            }
            count = witness;
        }
    }

    @Override
    public ByteBuf touch() {
        return this;
    }

    @Override
    public ByteBuf touch(Object hint) {
        return this;
    }

    @Override
    public boolean release() {
        return release0(1);
    }

    @Override
    public boolean release(int decrement) {
        return release0(ObjectUtil.checkPositive(decrement, "decrement"));
    }

    /** Takes {@code decrement} references away; the last one gives the memory back (exactly once, by the CAS). */
    private boolean release0(int decrement) {
        int count = (int) REF_CNT.get(this); // a plain read: the compare-and-exchange checks it
        for (;;) {
            if (count < decrement) {
                throw new IllegalReferenceCountException(count, -decrement);
            }
            int witness = (int) REF_CNT.compareAndExchange(this, count, count - decrement);
            if (witness == count) {
                if (count != decrement) {
                    return false;
                }
                deallocate();
                return true;
            }
            count = witness;
        }
    }

    private void deallocate() {
        // allocator and source stay: Netty may call alloc() on a released buffer before
        // the accessibility check (ensureWritable), which must then throw IllegalReferenceCountException
        Allocation a = allocation;
        if (!isRecycled()) {
            allocation = null; // before the holder can serve another buffer
            tmpNioBuffer = null;
        } // else the holder, with this object attached, goes back to the thread's stash
        source.free(a);
    }

    /**
     * Makes a recycled buffer an ordinary one: detached from its holder, it
     * is not reused after release (the holder is, with a new object). For a
     * buffer the leak detector tracks, and for one that moves to a new
     * allocation; nothing for one that is not recycled.
     */
    void stopRecycling() {
        if (isRecycled()) {
            ENGINE.attach(allocation, null);
        }
    }

    /**
     * Whether this object is reused after release: it is its holder's
     * attachment, stays with it, and serves the next allocation that takes
     * that holder from the thread's stash. Only a recycling allocator
     * attaches its objects; a buffer that moved to a new allocation to grow
     * detached itself from the old holder ({@link #moveTo}) and is not reused.
     */
    private boolean isRecycled() {
        return ENGINE.attachment(allocation) == this;
    }

    /** The pool allocation behind this buffer (for accounting, relocation and tests); null once released. */
    Allocation allocation() {
        return allocation;
    }

    /** Where this buffer's memory comes from: a relocated copy comes from there too. */
    Allocator source() {
        return source;
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
        if (!ENGINE.resizeInPlace(allocation, newCapacity)) {
            moveTo(newCapacity);
        }
        int oldLength = length;
        attach(allocation);
        if (newCapacity < oldLength) {
            trimIndicesToCapacity(newCapacity);
        }
        return this;
    }

    /**
     * The bytes that can be written without moving: up to the size the pool
     * set aside for this buffer (its size class, or its whole pages), within
     * the maximum capacity. Netty's {@code ensureWritable} grows a buffer
     * that far in place before it asks for a larger allocation and copies,
     * as it does with its own pooled buffers; every Slabwise allocation can
     * grow in place up to its reserved size ({@link MemoryPool#resizeInPlace}).
     */
    @Override
    public int maxFastWritableBytes() {
        Allocation a = allocation;
        if (a == null) { // released: only what an accessibility check would refuse anyway
            return writableBytes();
        }
        return Math.max(writableBytes(), Math.min(a.reservedBytes(), maxCapacity()) - writerIndex());
    }

    /** Moves the bytes that still fit to a new allocation of {@code newCapacity} bytes and frees the old one. */
    private void moveTo(int newCapacity) {
        // a sequential allocator serves neither an empty request nor one above its largest: such a buffer
        // holds its bytes in its category's general pool, and moves back to its own source when it fits again
        Allocator target = source.serves(newCapacity) ? source : ENGINE.generalAllocator(source.category());
        Allocation moved = new Allocation();
        if (!target.allocate(newCapacity, moved)) {
            throw ENGINE.limitException(source.category(), newCapacity);
        }
        int keep = Math.min(length, newCapacity);
        if (keep > 0) {
            ENGINE.chunkMemory(moved).put(moved.offset(), memory, offset, keep);
        }
        stopRecycling(); // the old holder may be reused at once: never with this live object
        source.free(allocation);
        allocation = moved;
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

    /**
     * Whether {@link #memoryAddress()} gives this buffer's address: where
     * Netty's own direct buffers report theirs without native access (see
     * {@link NativeAccess#ADDRESS_WITHOUT_IT}). Native code handed the
     * address must be done with it before the buffer is released; a
     * relocatable cache entry is moved only by its owner, which never moves
     * one that anything, Java or native, is writing, and its old memory
     * stays valid until its last reference is released.
     */
    @Override
    public boolean hasMemoryAddress() {
        return NativeAccess.ADDRESS_WITHOUT_IT;
    }

    @Override
    public long memoryAddress() {
        ensureAccessible();
        if (!hasMemoryAddress()) {
            throw new UnsupportedOperationException("no native access on this JVM: read the bytes through nioBuffer()");
        }
        return address;
    }

    // ---- derived buffers --------------------------------------------------------------------

    @Override
    public ByteBuf slice(int index, int length) {
        checkIndex(index, length);
        return new SlabwiseDerivedByteBuf.Slice(this, index, length);
    }

    @Override
    public ByteBuf duplicate() {
        ensureAccessible();
        return new SlabwiseDerivedByteBuf.Duplicate(this).setIndex(readerIndex(), writerIndex());
    }

    // ---- primitive access -------------------------------------------------------------------

    @Override
    protected byte _getByte(int index) {
        return memory.get(offset + index);
    }

    @Override
    protected short _getShort(int index) {
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
        return memory.getInt(offset + index);
    }

    @Override
    protected int _getIntLE(int index) {
        return Integer.reverseBytes(_getInt(index));
    }

    @Override
    protected long _getLong(int index) {
        return memory.getLong(offset + index);
    }

    @Override
    protected long _getLongLE(int index) {
        return Long.reverseBytes(_getLong(index));
    }

    @Override
    protected void _setByte(int index, int value) {
        memory.put(offset + index, (byte) value);
    }

    @Override
    protected void _setShort(int index, int value) {
        memory.putShort(offset + index, (short) value);
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
        memory.putInt(offset + index, value);
    }

    @Override
    protected void _setIntLE(int index, int value) {
        _setInt(index, Integer.reverseBytes(value));
    }

    @Override
    protected void _setLong(int index, long value) {
        memory.putLong(offset + index, value);
    }

    @Override
    protected void _setLongLE(int index, long value) {
        _setLong(index, Long.reverseBytes(value));
    }

    // ---- bulk copies: the unchecked steps, which native access overrides ---------------------

    /** Copies {@code [index, index + length)} into {@code dst}; both ranges are checked and not empty. */
    void copyTo(int index, byte[] dst, int dstIndex, int length) {
        memory.get(offset + index, dst, dstIndex, length);
    }

    /** Copies {@code src} into {@code [index, index + length)}; both ranges are checked and not empty. */
    void copyFrom(int index, byte[] src, int srcIndex, int length) {
        memory.put(offset + index, src, srcIndex, length);
    }

    /**
     * Copies {@code [index, index + length)} into another buffer; both ranges
     * are checked and not empty. Without an array the destination fills itself
     * from a view of these bytes: it cannot hand the copy back.
     */
    void copyTo(int index, ByteBuf dst, int dstIndex, int length) {
        if (dst.hasArray()) {
            copyTo(index, dst.array(), dst.arrayOffset() + dstIndex, length);
        } else {
            dst.setBytes(dstIndex, view(index, length));
        }
    }

    /**
     * Copies another buffer's bytes into {@code [index, index + length)}; both
     * ranges are checked and not empty. Without an array the source drains
     * itself into a view of this buffer: it cannot hand the copy back.
     */
    void copyFrom(int index, ByteBuf src, int srcIndex, int length) {
        if (src.hasArray()) {
            copyFrom(index, src.array(), src.arrayOffset() + srcIndex, length);
        } else {
            src.getBytes(srcIndex, view(index, length));
        }
    }

    // ---- bulk access ------------------------------------------------------------------------

    @Override
    public ByteBuf getBytes(int index, ByteBuf dst, int dstIndex, int length) {
        checkDstIndex(index, length, dstIndex, dst.capacity());
        if (length != 0) {
            copyTo(index, dst, dstIndex, length);
        }
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, byte[] dst, int dstIndex, int length) {
        checkDstIndex(index, length, dstIndex, dst.length);
        if (length != 0) {
            copyTo(index, dst, dstIndex, length);
        }
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, ByteBuffer dst) {
        int bytes = dst.remaining();
        checkIndex(index, bytes);
        int at = dst.position();
        dst.put(at, memory, offset + index, bytes);
        dst.position(at + bytes);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, OutputStream out, int length) throws IOException {
        checkIndex(index, length);
        if (length == 0) {
            return this;
        }
        ForeignCode.copyOut(this, index, out, length);
        return this;
    }

    @Override
    public int getBytes(int index, GatheringByteChannel out, int length) throws IOException {
        checkIndex(index, length);
        if (length == 0) {
            return 0;
        }
        return out.write(view(index, length)); // a view per call: other threads may be reading too
    }

    @Override
    public int getBytes(int index, FileChannel out, long position, int length) throws IOException {
        checkIndex(index, length);
        if (length == 0) {
            return 0;
        }
        return out.write(view(index, length), position);
    }

    @Override
    public int readBytes(GatheringByteChannel out, int length) throws IOException {
        checkReadableBytes(length);
        if (length == 0) {
            return 0;
        }
        int start = readerIndex();
        int written = out.write(internalView(start, length));
        readerIndex(start + written);
        return written;
    }

    @Override
    public int readBytes(FileChannel out, long position, int length) throws IOException {
        checkReadableBytes(length);
        if (length == 0) {
            return 0;
        }
        int start = readerIndex();
        int written = out.write(internalView(start, length), position);
        readerIndex(start + written);
        return written;
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuf src, int srcIndex, int length) {
        checkSrcIndex(index, length, srcIndex, src.capacity());
        if (length != 0) {
            copyFrom(index, src, srcIndex, length);
        }
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, byte[] src, int srcIndex, int length) {
        checkSrcIndex(index, length, srcIndex, src.length);
        if (length != 0) {
            copyFrom(index, src, srcIndex, length);
        }
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuffer src) {
        int bytes = src.remaining();
        checkIndex(index, bytes);
        int at = src.position();
        memory.put(offset + index, src, at, bytes);
        src.position(at + bytes);
        return this;
    }

    @Override
    public int setBytes(int index, InputStream in, int length) throws IOException {
        checkIndex(index, length);
        return ForeignCode.copyIn(this, index, in, length);
    }

    // streams, processors and channels run code we do not control in the middle of an access: see ForeignCode

    @Override
    public int forEachByte(ByteProcessor processor) {
        ensureAccessible();
        return ForeignCode.firstStop(this, readerIndex(), writerIndex(), processor);
    }

    @Override
    public int forEachByte(int index, int length, ByteProcessor processor) {
        checkIndex(index, length);
        return ForeignCode.firstStop(this, index, index + length, processor);
    }

    @Override
    public int forEachByteDesc(ByteProcessor processor) {
        ensureAccessible();
        return ForeignCode.lastStop(this, readerIndex(), writerIndex(), processor);
    }

    @Override
    public int forEachByteDesc(int index, int length, ByteProcessor processor) {
        checkIndex(index, length);
        return ForeignCode.lastStop(this, index, index + length, processor);
    }

    @Override
    public int setBytes(int index, ScatteringByteChannel in, int length) throws IOException {
        checkIndex(index, length);
        return ForeignCode.readFrom(in, internalView(index, length));
    }

    @Override
    public int setBytes(int index, FileChannel in, long position, int length) throws IOException {
        checkIndex(index, length);
        return ForeignCode.readFrom(in, internalView(index, length), position);
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
    final ByteBuffer view(int index, int length) {
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
