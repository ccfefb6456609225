package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.util.ByteProcessor;
import io.netty.util.IllegalReferenceCountException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.nio.channels.FileChannel;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The behaviour Netty users rely on from any {@link ByteBuf}, as one suite with
 * a single factory hook, {@link #newBuffer(int, int)}.
 *
 * <p>To test a buffer implementation, subclass this class and return a fresh
 * buffer with exactly the given capacity, reader and writer index 0, and
 * reference count 1. Override {@link #canGrow()} when the buffer cannot change
 * its capacity (slices), and {@link #order()} when the buffer is a
 * little-endian view. The suite runs unchanged against Netty's own pooled
 * buffers ({@link NettyPooledDirectContractTest}), which shows that it encodes
 * Netty's behaviour and not ours.
 *
 * <p>Every buffer made through {@link #buffer(int)} is released after the test
 * if the test left it live. The class-level timeout is inherited by every
 * subclass.
 */
@Timeout(60)
abstract class AbstractByteBufContract {

    private static final long SEED = 0x5eed_2026L;
    private final List<ByteBuf> created = new ArrayList<>();

    /** A new buffer of exactly {@code capacity} bytes that may grow to {@code maxCapacity}. */
    protected abstract ByteBuf newBuffer(int capacity, int maxCapacity);

    /** Whether {@code capacity(int)} may change the buffer's capacity. */
    protected boolean canGrow() {
        return true;
    }

    /** Whether the buffer is a Netty {@code CompositeByteBuf}, whose own rules differ in a few places. */
    protected boolean isComposite() {
        return false;
    }

    /** Whether the buffer is a duplicate view, whose capacity changes are its parent's. */
    protected boolean isDuplicate() {
        return false;
    }

    /** Whether the buffer keeps the {@code maxCapacity} it was created with (composites have their own). */
    protected boolean honoursMaxCapacity() {
        return !isComposite();
    }

    /** The byte order of the buffers {@link #newBuffer} returns. */
    protected ByteOrder order() {
        return ByteOrder.BIG_ENDIAN;
    }

    /** A tracked buffer of {@code capacity} bytes, unbounded growth. */
    protected final ByteBuf buffer(int capacity) {
        return buffer(capacity, Integer.MAX_VALUE);
    }

    /** A tracked buffer. */
    protected final ByteBuf buffer(int capacity, int maxCapacity) {
        ByteBuf buf = newBuffer(capacity, maxCapacity);
        created.add(buf);
        return buf;
    }

    /**
     * Releases what a test left live, newest first: an allocator that
     * recycles buffer objects may have handed a buffer the test released to a
     * later allocation, so an older reference can see the newer buffer's count
     * until the newer one is released.
     */
    @AfterEach
    void releaseLeftovers() {
        for (int i = created.size() - 1; i >= 0; i--) {
            ByteBuf buf = created.get(i);
            if (buf.refCnt() > 0) {
                buf.release(buf.refCnt());
            }
        }
        created.clear();
        afterBuffersReleased();
    }

    /** Called after every test once its buffers are released: a place to check that nothing leaked. */
    protected void afterBuffersReleased() {
    }

    private static byte[] randomBytes(int n, long seed) {
        byte[] bytes = new byte[n];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    // ---- primitives ---------------------------------------------------------------------------

    /** One primitive accessor pair: how to write and read a value of a given width at an index. */
    record Primitive(String name, int width, Setter set, Getter get, Writer write, Reader read,
                     java.util.function.LongUnaryOperator normalise) {
        @Override
        public String toString() {
            return name;
        }
    }

    interface Setter {
        void set(ByteBuf buf, int index, long value);
    }

    interface Getter {
        long get(ByteBuf buf, int index);
    }

    interface Writer {
        void write(ByteBuf buf, long value);
    }

    interface Reader {
        long read(ByteBuf buf);
    }

    static Stream<Primitive> primitives() {
        return Stream.of(
                new Primitive("byte", 1, (b, i, v) -> b.setByte(i, (int) v), ByteBuf::getByte,
                        (b, v) -> b.writeByte((int) v), ByteBuf::readByte, v -> (byte) v),
                new Primitive("unsignedByte", 1, (b, i, v) -> b.setByte(i, (int) v), ByteBuf::getUnsignedByte,
                        (b, v) -> b.writeByte((int) v), ByteBuf::readUnsignedByte, v -> v & 0xff),
                new Primitive("short", 2, (b, i, v) -> b.setShort(i, (int) v), ByteBuf::getShort,
                        (b, v) -> b.writeShort((int) v), ByteBuf::readShort, v -> (short) v),
                new Primitive("unsignedShort", 2, (b, i, v) -> b.setShort(i, (int) v), ByteBuf::getUnsignedShort,
                        (b, v) -> b.writeShort((int) v), ByteBuf::readUnsignedShort, v -> v & 0xffff),
                new Primitive("shortLE", 2, (b, i, v) -> b.setShortLE(i, (int) v), ByteBuf::getShortLE,
                        (b, v) -> b.writeShortLE((int) v), ByteBuf::readShortLE, v -> (short) v),
                new Primitive("unsignedShortLE", 2, (b, i, v) -> b.setShortLE(i, (int) v), ByteBuf::getUnsignedShortLE,
                        (b, v) -> b.writeShortLE((int) v), ByteBuf::readUnsignedShortLE, v -> v & 0xffff),
                new Primitive("medium", 3, (b, i, v) -> b.setMedium(i, (int) v), ByteBuf::getMedium,
                        (b, v) -> b.writeMedium((int) v), ByteBuf::readMedium, v -> ((int) v << 8) >> 8),
                new Primitive("unsignedMedium", 3, (b, i, v) -> b.setMedium(i, (int) v), ByteBuf::getUnsignedMedium,
                        (b, v) -> b.writeMedium((int) v), ByteBuf::readUnsignedMedium, v -> v & 0xffffff),
                new Primitive("mediumLE", 3, (b, i, v) -> b.setMediumLE(i, (int) v), ByteBuf::getMediumLE,
                        (b, v) -> b.writeMediumLE((int) v), ByteBuf::readMediumLE, v -> ((int) v << 8) >> 8),
                new Primitive("unsignedMediumLE", 3, (b, i, v) -> b.setMediumLE(i, (int) v), ByteBuf::getUnsignedMediumLE,
                        (b, v) -> b.writeMediumLE((int) v), ByteBuf::readUnsignedMediumLE, v -> v & 0xffffff),
                new Primitive("int", 4, (b, i, v) -> b.setInt(i, (int) v), ByteBuf::getInt,
                        (b, v) -> b.writeInt((int) v), ByteBuf::readInt, v -> (int) v),
                new Primitive("unsignedInt", 4, (b, i, v) -> b.setInt(i, (int) v), ByteBuf::getUnsignedInt,
                        (b, v) -> b.writeInt((int) v), ByteBuf::readUnsignedInt, v -> v & 0xffffffffL),
                new Primitive("intLE", 4, (b, i, v) -> b.setIntLE(i, (int) v), ByteBuf::getIntLE,
                        (b, v) -> b.writeIntLE((int) v), ByteBuf::readIntLE, v -> (int) v),
                new Primitive("unsignedIntLE", 4, (b, i, v) -> b.setIntLE(i, (int) v), ByteBuf::getUnsignedIntLE,
                        (b, v) -> b.writeIntLE((int) v), ByteBuf::readUnsignedIntLE, v -> v & 0xffffffffL),
                new Primitive("long", 8, ByteBuf::setLong, ByteBuf::getLong, ByteBuf::writeLong, ByteBuf::readLong, v -> v),
                new Primitive("longLE", 8, ByteBuf::setLongLE, ByteBuf::getLongLE, ByteBuf::writeLongLE,
                        ByteBuf::readLongLE, v -> v),
                new Primitive("char", 2, (b, i, v) -> b.setChar(i, (int) v), (b, i) -> b.getChar(i),
                        (b, v) -> b.writeChar((int) v), b -> b.readChar(), v -> (char) v),
                new Primitive("float", 4, (b, i, v) -> b.setFloat(i, Float.intBitsToFloat((int) v)),
                        (b, i) -> Float.floatToRawIntBits(b.getFloat(i)),
                        (b, v) -> b.writeFloat(Float.intBitsToFloat((int) v)),
                        b -> Float.floatToRawIntBits(b.readFloat()), v -> (int) v),
                new Primitive("floatLE", 4, (b, i, v) -> b.setFloatLE(i, Float.intBitsToFloat((int) v)),
                        (b, i) -> Float.floatToRawIntBits(b.getFloatLE(i)),
                        (b, v) -> b.writeFloatLE(Float.intBitsToFloat((int) v)),
                        b -> Float.floatToRawIntBits(b.readFloatLE()), v -> (int) v),
                new Primitive("double", 8, (b, i, v) -> b.setDouble(i, Double.longBitsToDouble(v)),
                        (b, i) -> Double.doubleToRawLongBits(b.getDouble(i)),
                        (b, v) -> b.writeDouble(Double.longBitsToDouble(v)),
                        b -> Double.doubleToRawLongBits(b.readDouble()), v -> v),
                new Primitive("doubleLE", 8, (b, i, v) -> b.setDoubleLE(i, Double.longBitsToDouble(v)),
                        (b, i) -> Double.doubleToRawLongBits(b.getDoubleLE(i)),
                        (b, v) -> b.writeDoubleLE(Double.longBitsToDouble(v)),
                        b -> Double.doubleToRawLongBits(b.readDoubleLE()), v -> v),
                new Primitive("boolean", 1, (b, i, v) -> b.setBoolean(i, (v & 1) != 0), (b, i) -> b.getBoolean(i) ? 1 : 0,
                        (b, v) -> b.writeBoolean((v & 1) != 0), b -> b.readBoolean() ? 1 : 0, v -> v & 1));
    }

    private static long canonical(Primitive p, long v) {
        // NaN payloads may be canonicalised by some paths; keep floating values ordinary
        if (p.name().startsWith("float")) {
            return Float.floatToRawIntBits((float) (v % 100_000) / 7f);
        }
        if (p.name().startsWith("double")) {
            return Double.doubleToRawLongBits((double) (v % 100_000_000) / 7d);
        }
        return v;
    }

    @ParameterizedTest
    @MethodSource("primitives")
    void absoluteSetAndGetRoundTripAtEveryAlignment(Primitive p) {
        int capacity = 64 + 7;
        ByteBuf buf = buffer(capacity);
        Random random = new Random(SEED + p.width());
        long[] values = new long[capacity - p.width() + 1];
        for (int i = 0; i + p.width() <= capacity; i += p.width()) {
            values[i] = p.normalise().applyAsLong(canonical(p, random.nextLong()));
            p.set().set(buf, i, values[i]);
        }
        for (int i = 0; i + p.width() <= capacity; i += p.width()) {
            assertEquals(values[i], p.get().get(buf, i), p + " at " + i);
        }
        // odd offsets too
        long value = p.normalise().applyAsLong(canonical(p, random.nextLong()));
        p.set().set(buf, capacity - p.width(), value);
        assertEquals(value, p.get().get(buf, capacity - p.width()));
        assertEquals(0, buf.readerIndex());
        assertEquals(0, buf.writerIndex());
    }

    @ParameterizedTest
    @MethodSource("primitives")
    void relativeWriteAndReadMoveTheIndexes(Primitive p) {
        ByteBuf buf = buffer(128);
        Random random = new Random(SEED ^ p.width());
        List<Long> written = new ArrayList<>();
        while (buf.writableBytes() >= p.width()) {
            long v = p.normalise().applyAsLong(canonical(p, random.nextLong()));
            int before = buf.writerIndex();
            p.write().write(buf, v);
            assertEquals(before + p.width(), buf.writerIndex());
            written.add(v);
        }
        for (long v : written) {
            int before = buf.readerIndex();
            assertEquals(v, p.read().read(buf));
            assertEquals(before + p.width(), buf.readerIndex());
        }
        assertFalse(buf.isReadable(p.width()));
    }

    @ParameterizedTest
    @MethodSource("primitives")
    void outOfBoundsAccessIsRejected(Primitive p) {
        ByteBuf buf = buffer(16);
        assertThrows(IndexOutOfBoundsException.class, () -> p.get().get(buf, -1));
        assertThrows(IndexOutOfBoundsException.class, () -> p.get().get(buf, 16 - p.width() + 1));
        assertThrows(IndexOutOfBoundsException.class, () -> p.set().set(buf, -1, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> p.set().set(buf, 16 - p.width() + 1, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> p.read().read(buf), "nothing readable yet");
        buf.writerIndex(p.width() - 1);
        assertThrows(IndexOutOfBoundsException.class, () -> p.read().read(buf), "one byte short");
    }

    @ParameterizedTest
    @MethodSource("primitives")
    void writingPastMaxCapacityIsRejected(Primitive p) {
        Assumptions.assumeTrue(honoursMaxCapacity() || !canGrow());
        ByteBuf buf = buffer(8, 8);
        buf.writerIndex(8 - p.width() + 1);
        assertThrows(IndexOutOfBoundsException.class, () -> p.write().write(buf, 1));
    }

    @Test
    void multiByteValuesUseTheBufferByteOrder() {
        ByteBuf buf = buffer(16);
        buf.setInt(0, 0x01020304);
        byte[] expected = order() == ByteOrder.BIG_ENDIAN ? new byte[] {1, 2, 3, 4} : new byte[] {4, 3, 2, 1};
        for (int i = 0; i < 4; i++) {
            assertEquals(expected[i], buf.getByte(i));
        }
        buf.setIntLE(4, 0x01020304); // the ...LE methods are little-endian whatever the buffer's order
        byte[] expectedLe = {4, 3, 2, 1};
        for (int i = 0; i < 4; i++) {
            assertEquals(expectedLe[i], buf.getByte(4 + i));
        }
        buf.setLong(8, 0x0102030405060708L);
        assertEquals(order() == ByteOrder.BIG_ENDIAN ? 1 : 8, buf.getByte(8));
        assertEquals(order() == ByteOrder.BIG_ENDIAN ? 0x0102 : 0x0708, buf.getShort(8) & 0xffff);
        buf.setMedium(0, 0x0a0b0c);
        assertEquals(order() == ByteOrder.BIG_ENDIAN ? 0x0a : 0x0c, buf.getByte(0));
    }

    // ---- indexes ------------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 1000, 4097, 70_001})
    void capacityIsExactlyWhatWasAskedFor(int capacity) {
        ByteBuf buf = buffer(capacity);
        assertEquals(capacity, buf.capacity());
        assertEquals(capacity, buf.writableBytes());
        assertEquals(0, buf.readableBytes());
        buf.setByte(capacity - 1, 9);
        assertEquals(9, buf.getByte(capacity - 1));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.getByte(capacity));
    }

    @Test
    void readerAndWriterIndexRules() {
        ByteBuf buf = buffer(32);
        buf.writerIndex(10);
        buf.readerIndex(4);
        assertEquals(6, buf.readableBytes());
        assertEquals(22, buf.writableBytes());
        assertThrows(IndexOutOfBoundsException.class, () -> buf.readerIndex(11));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.readerIndex(-1));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.writerIndex(3));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.writerIndex(33));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setIndex(5, 4));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setIndex(-1, 4));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setIndex(0, 33));
        buf.setIndex(2, 30);
        assertEquals(2, buf.readerIndex());
        assertEquals(30, buf.writerIndex());
        assertEquals(4, buf.readerIndex(4).readerIndex());
    }

    @Test
    void marksAndResets() {
        ByteBuf buf = buffer(16);
        buf.writeInt(1).writeInt(2);
        buf.markReaderIndex();
        assertEquals(1, buf.readInt());
        buf.resetReaderIndex();
        assertEquals(0, buf.readerIndex());
        buf.markWriterIndex();
        buf.writeInt(3);
        buf.resetWriterIndex();
        assertEquals(8, buf.writerIndex());
    }

    @Test
    void clearAndReadabilityQueries() {
        Assumptions.assumeTrue(honoursMaxCapacity() || !canGrow());
        ByteBuf buf = buffer(8, 8);
        assertFalse(buf.isReadable());
        assertTrue(buf.isWritable());
        assertTrue(buf.isWritable(8));
        assertFalse(buf.isWritable(9));
        buf.writeLong(5);
        assertTrue(buf.isReadable());
        assertTrue(buf.isReadable(8));
        assertFalse(buf.isReadable(9));
        assertFalse(buf.isWritable());
        assertEquals(0, buf.maxWritableBytes());
        buf.readByte();
        buf.clear();
        assertEquals(0, buf.readerIndex());
        assertEquals(0, buf.writerIndex());
        assertEquals(5, buf.getLong(0), "clear keeps the content");
    }

    @Test
    void skipBytes() {
        ByteBuf buf = buffer(16);
        buf.writeZero(10);
        buf.skipBytes(4);
        assertEquals(4, buf.readerIndex());
        assertThrows(IndexOutOfBoundsException.class, () -> buf.skipBytes(7));
        assertEquals(4, buf.readerIndex());
    }

    @Test
    void maxWritableBytesFollowsMaxCapacity() {
        Assumptions.assumeTrue(honoursMaxCapacity() && canGrow());
        ByteBuf buf = buffer(10, 100);
        assertEquals(100, buf.maxCapacity());
        buf.writeZero(4);
        assertEquals(96, buf.maxWritableBytes());
    }

    // ---- bulk bytes ---------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 5, 33})
    void bytesToAndFromArraysWithOffsets(int offset) {
        ByteBuf buf = buffer(100);
        byte[] source = randomBytes(80, SEED + offset);
        buf.setBytes(offset, source, 3, 60);
        byte[] target = new byte[70];
        buf.getBytes(offset, target, 5, 60);
        assertArrayEquals(Arrays.copyOfRange(source, 3, 63), Arrays.copyOfRange(target, 5, 65));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setBytes(50, source, 0, 51));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.getBytes(0, target, 20, 51));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.getBytes(-1, target));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setBytes(0, source, -1, 4));
    }

    @Test
    void writeAndReadByteArrays() {
        ByteBuf buf = buffer(64);
        byte[] data = randomBytes(50, SEED);
        buf.writeBytes(data);
        assertEquals(50, buf.writerIndex());
        byte[] back = new byte[50];
        buf.readBytes(back);
        assertArrayEquals(data, back);
        assertThrows(IndexOutOfBoundsException.class, () -> buf.readBytes(new byte[1]));
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void bytesToAndFromOtherByteBufs(boolean direct) {
        ByteBuf buf = buffer(64);
        byte[] data = randomBytes(64, SEED + 1);
        ByteBuf other = direct ? Unpooled.directBuffer(64) : Unpooled.buffer(64);
        try {
            other.writeBytes(data);
            buf.setBytes(0, other, 8, 40);
            ByteBuf back = direct ? Unpooled.directBuffer(64) : Unpooled.buffer(64);
            try {
                buf.getBytes(0, back, 4, 40);
                for (int i = 0; i < 40; i++) {
                    assertEquals(data[8 + i], back.getByte(4 + i));
                }
                assertThrows(IndexOutOfBoundsException.class, () -> buf.getBytes(30, back, 0, 40));
                assertThrows(IndexOutOfBoundsException.class, () -> buf.setBytes(0, other, 30, 40));
                buf.writerIndex(0);
                buf.writeBytes(other, 10);
                assertEquals(10, buf.writerIndex());
                assertEquals(10, other.readerIndex());
            } finally {
                back.release();
            }
        } finally {
            other.release();
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void bytesToAndFromByteBuffers(boolean direct) {
        ByteBuf buf = buffer(64);
        byte[] data = randomBytes(30, SEED + 2);
        ByteBuffer src = direct ? ByteBuffer.allocateDirect(30) : ByteBuffer.allocate(30);
        src.put(data).flip();
        buf.setBytes(10, src);
        assertEquals(30, src.position());
        ByteBuffer dst = direct ? ByteBuffer.allocateDirect(30) : ByteBuffer.allocate(30);
        buf.getBytes(10, dst);
        dst.flip();
        byte[] back = new byte[30];
        dst.get(back);
        assertArrayEquals(data, back);
        ByteBuffer tooBig = ByteBuffer.allocate(60);
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setBytes(10, tooBig));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.getBytes(10, ByteBuffer.allocate(60)));
    }

    @Test
    void bytesToAndFromStreams() throws Exception {
        ByteBuf buf = buffer(100);
        byte[] data = randomBytes(100, SEED + 3);
        assertEquals(60, buf.setBytes(20, new ByteArrayInputStream(data), 60));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        buf.getBytes(20, out, 60);
        assertArrayEquals(Arrays.copyOf(data, 60), out.toByteArray());
        assertEquals(-1, buf.setBytes(0, new ByteArrayInputStream(new byte[0]), 10), "end of stream");
        buf.writerIndex(0);
        assertEquals(40, buf.writeBytes(new ByteArrayInputStream(data), 40));
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        buf.readBytes(all, 40);
        assertArrayEquals(Arrays.copyOf(data, 40), all.toByteArray());
    }

    @Test
    void bytesToAndFromChannels(@TempDir Path dir) throws Exception {
        ByteBuf buf = buffer(200);
        byte[] data = randomBytes(200, SEED + 4);
        buf.writeBytes(data);
        Path file = dir.resolve("bytes");
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            assertEquals(200, buf.getBytes(0, channel, 0L, 200));
            assertEquals(50, buf.getBytes(150, channel, 200L, 50));
            ByteBuf back = buffer(250);
            assertEquals(250, back.setBytes(0, channel, 0L, 250));
            for (int i = 0; i < 200; i++) {
                assertEquals(data[i], back.getByte(i));
            }
            assertEquals(data[150], back.getByte(200));
            channel.position(0);
            ByteBuf viaGathering = buffer(100);
            viaGathering.writeBytes(data, 0, 100);
            java.nio.channels.Pipe pipe = java.nio.channels.Pipe.open();
            try (java.nio.channels.Pipe.SinkChannel sink = pipe.sink();
                 java.nio.channels.Pipe.SourceChannel source = pipe.source()) {
                assertEquals(100, viaGathering.readBytes(sink, 100));
                ByteBuf viaScattering = buffer(100);
                int read = 0;
                while (read < 100) {
                    read += viaScattering.writeBytes(source, 100 - read);
                }
                assertEquals(100, viaScattering.writerIndex());
                assertArrayEquals(Arrays.copyOf(data, 100), ByteBufUtil.getBytes(viaScattering));
            }
        }
    }

    @Test
    void setZeroAndWriteZero() {
        ByteBuf buf = buffer(64);
        buf.writeBytes(randomBytes(64, SEED + 5));
        buf.setZero(10, 20);
        for (int i = 10; i < 30; i++) {
            assertEquals(0, buf.getByte(i));
        }
        assertNotEquals(0, buf.getLong(30) | buf.getLong(0));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setZero(60, 5));
        buf.clear();
        buf.writeZero(64);
        assertEquals(64, buf.writerIndex());
        assertEquals(0, buf.getLong(56));
    }

    // ---- NIO views ----------------------------------------------------------------------------

    @Test
    void nioBufferSharesContentAndHasTheRightWindow() {
        ByteBuf buf = buffer(64);
        buf.writeBytes(randomBytes(40, SEED + 6));
        buf.readerIndex(5);
        ByteBuffer view = buf.nioBuffer();
        assertEquals(35, view.remaining());
        assertEquals(buf.getByte(5), view.get(view.position()));
        ByteBuffer window = buf.nioBuffer(10, 8);
        assertEquals(8, window.remaining());
        assertEquals(buf.getByte(10), window.get(window.position()));
        assertEquals(order(), window.order());
        if (buf.nioBufferCount() == 1) {
            assertEquals(buf.isDirect(), window.isDirect());
        }
        assertThrows(IndexOutOfBoundsException.class, () -> buf.nioBuffer(60, 5));
    }

    @Test
    void nioBuffersCoverTheReadableBytes() {
        ByteBuf buf = buffer(64);
        buf.writeBytes(randomBytes(50, SEED + 7));
        ByteBuffer[] views = buf.nioBuffers();
        assertEquals(buf.nioBufferCount(), views.length);
        int total = 0;
        for (ByteBuffer v : views) {
            total += v.remaining();
        }
        assertEquals(50, total);
        ByteBuffer[] window = buf.nioBuffers(5, 20);
        int windowTotal = 0;
        for (ByteBuffer v : window) {
            windowTotal += v.remaining();
        }
        assertEquals(20, windowTotal);
    }

    @Test
    void directViewsWriteThrough() {
        ByteBuf buf = buffer(32);
        Assumptions.assumeTrue(buf.isDirect() && buf.nioBufferCount() == 1, "a single direct view shares memory");
        ByteBuffer view = buf.nioBuffer(0, 32);
        view.put(view.position() + 3, (byte) 77);
        assertEquals(77, buf.getByte(3));
        ByteBuffer internal = buf.internalNioBuffer(4, 8);
        internal.put(internal.position(), (byte) 55);
        assertEquals(55, buf.getByte(4));
    }

    @Test
    void memoryAddressAndArrayAreConsistent() {
        ByteBuf buf = buffer(16);
        if (buf.hasMemoryAddress()) {
            assertNotEquals(0, buf.memoryAddress());
        } else {
            assertThrows(UnsupportedOperationException.class, buf::memoryAddress);
        }
        if (buf.hasArray()) {
            assertTrue(buf.array().length >= buf.arrayOffset() + 16);
        } else {
            assertThrows(UnsupportedOperationException.class, buf::array);
            assertThrows(UnsupportedOperationException.class, buf::arrayOffset);
        }
    }

    // ---- derived buffers ----------------------------------------------------------------------

    @Test
    void sliceSharesContentWithIndependentIndexes() {
        ByteBuf buf = buffer(32);
        buf.writeBytes(randomBytes(32, SEED + 8));
        ByteBuf slice = buf.slice(8, 16);
        assertEquals(16, slice.capacity());
        assertEquals(0, slice.readerIndex());
        assertEquals(16, slice.writerIndex());
        assertEquals(buf.getByte(8), slice.getByte(0));
        slice.setByte(0, 99);
        assertEquals(99, buf.getByte(8));
        slice.readerIndex(4);
        assertEquals(0, buf.readerIndex());
        assertThrows(IndexOutOfBoundsException.class, () -> slice.getByte(16));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.slice(20, 13));
        assertEquals(buf.refCnt(), slice.refCnt());
    }

    @Test
    void duplicateSharesContentAndIndexesAtCreation() {
        ByteBuf buf = buffer(32);
        buf.writeBytes(randomBytes(20, SEED + 9)).readerIndex(3);
        ByteBuf dup = buf.duplicate();
        assertEquals(3, dup.readerIndex());
        assertEquals(20, dup.writerIndex());
        assertEquals(buf.capacity(), dup.capacity());
        dup.setByte(5, 42);
        assertEquals(42, buf.getByte(5));
        dup.readerIndex(10);
        assertEquals(3, buf.readerIndex());
    }

    @Test
    void retainedSliceAndDuplicateShareTheReferenceCount() {
        ByteBuf buf = buffer(32);
        buf.writeZero(32);
        ByteBuf slice = buf.retainedSlice(0, 8);
        assertEquals(2, buf.refCnt());
        ByteBuf dup = buf.retainedDuplicate();
        assertEquals(3, buf.refCnt());
        slice.release(); // whether the derived buffer counts on its own is the implementation's choice
        assertEquals(2, buf.refCnt());
        dup.release();
        assertEquals(1, buf.refCnt());
        ByteBuf read = buf.readRetainedSlice(4);
        assertEquals(4, buf.readerIndex());
        assertEquals(2, buf.refCnt());
        read.release();
        ByteBuf plainRead = buf.readSlice(4);
        assertEquals(8, buf.readerIndex());
        assertEquals(1, plainRead.refCnt());
        assertTrue(buf.release());
        assertEquals(0, plainRead.refCnt());
        assertThrows(IllegalReferenceCountException.class, () -> plainRead.getByte(0));
    }

    @Test
    void copyIsIndependent() {
        ByteBuf buf = buffer(32);
        buf.writeBytes(randomBytes(32, SEED + 10));
        ByteBuf copy = buf.copy(4, 10);
        try {
            assertEquals(10, copy.readableBytes());
            assertEquals(buf.getByte(4), copy.getByte(0));
            copy.setByte(0, ~buf.getByte(4));
            assertNotEquals(buf.getByte(4), copy.getByte(0));
            assertEquals(1, buf.refCnt());
        } finally {
            copy.release();
        }
        ByteBuf whole = buf.copy();
        try {
            assertEquals(32, whole.readableBytes());
        } finally {
            whole.release();
        }
    }

    // ---- capacity changes ---------------------------------------------------------------------

    @Test
    void discardReadBytesMovesContentAndIndexes() {
        ByteBuf buf = buffer(32);
        Assumptions.assumeTrue(canGrow(), "discarding compacts in place, which slices cannot");
        byte[] data = randomBytes(20, SEED + 11);
        buf.writeBytes(data);
        buf.readerIndex(8);
        buf.markReaderIndex();
        buf.discardReadBytes();
        assertEquals(0, buf.readerIndex());
        assertEquals(12, buf.writerIndex());
        assertEquals(data[8], buf.getByte(0));
        assertEquals(data[19], buf.getByte(11));
        if (!isComposite()) { // a composite discards whole components only, and keeps its marks
            buf.resetReaderIndex();
            assertEquals(0, buf.readerIndex(), "marks move with the discarded bytes");
            buf.readerIndex(buf.writerIndex());
            buf.discardSomeReadBytes();
            assertEquals(0, buf.readerIndex());
            assertEquals(0, buf.writerIndex());
        }
    }

    @Test
    void ensureWritableGrowsWithinMaxCapacity() {
        Assumptions.assumeTrue(canGrow() && honoursMaxCapacity());
        ByteBuf buf = buffer(8, 64);
        buf.writeLong(1);
        buf.ensureWritable(20);
        assertTrue(buf.capacity() >= 28 && buf.capacity() <= 64);
        assertEquals(1, buf.getLong(0));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.ensureWritable(100));
        assertThrows(IllegalArgumentException.class, () -> buf.ensureWritable(-1));
    }

    @Test
    void ensureWritableReturnCodes() {
        Assumptions.assumeTrue(canGrow() && honoursMaxCapacity());
        ByteBuf buf = buffer(8, 16);
        assertEquals(0, buf.ensureWritable(4, false), "enough room");
        buf.writeLong(1);
        assertEquals(1, buf.ensureWritable(100, false), "cannot grow enough, unchanged");
        assertEquals(8, buf.capacity());
        assertEquals(2, buf.ensureWritable(4, false), "grown");
        assertTrue(buf.capacity() >= 12);
        assertEquals(1, buf.getLong(0));
        ByteBuf forced = buffer(8, 16);
        forced.writeLong(2);
        assertEquals(3, forced.ensureWritable(100, true), "grown to max capacity, still not enough");
        assertEquals(16, forced.capacity());
        forced.writerIndex(16);
        assertEquals(1, forced.ensureWritable(1, true), "at max capacity already");
    }

    /**
     * Netty's {@code ensureWritable} grows a buffer up to its
     * {@code maxFastWritableBytes} without a new allocation: a pooled buffer
     * can take the rest of what its allocation set aside. Sizes of each kind
     * of allocation: a subpage class, a run of a class, a run fitted to pages
     * and a dedicated region.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 100, 1100, 5000, 70_000, 600_000, 3_000_000})
    void growingWithinTheFastWritableBytesKeepsTheMemoryInPlace(int capacity) {
        Assumptions.assumeTrue(canGrow() && !isComposite() && !isDuplicate());
        ByteBuf buf = buffer(capacity, Integer.MAX_VALUE);
        Assumptions.assumeTrue(buf.hasMemoryAddress(), "the memory's address tells whether it moved");
        byte[] data = new byte[capacity];
        new Random(SEED + capacity).nextBytes(data);
        buf.writeBytes(data);
        int fast = buf.maxFastWritableBytes();
        assertTrue(fast >= buf.writableBytes() && fast <= buf.maxWritableBytes(), "fast writable " + fast);
        long address = buf.memoryAddress();
        buf.ensureWritable(fast);
        assertEquals(capacity + fast, buf.capacity(), "grown to what the memory holds");
        assertEquals(address, buf.memoryAddress(), "grown in place");
        buf.writeZero(fast);
        assertEquals(0, buf.maxFastWritableBytes());
        buf.ensureWritable(1);
        byte[] read = new byte[capacity];
        buf.getBytes(0, read);
        assertArrayEquals(data, read, "the bytes written before every growth");
    }

    @Test
    void theFastWritableBytesStayWithinTheMaximumCapacity() {
        Assumptions.assumeTrue(canGrow() && honoursMaxCapacity() && !isComposite());
        ByteBuf buf = buffer(1100, 1150); // a pooled buffer's memory would hold 1,280 bytes
        buf.writerIndex(1000);
        int fast = buf.maxFastWritableBytes();
        assertTrue(fast >= 100 && fast <= 150, "fast writable " + fast);
        buf.ensureWritable(150);
        assertEquals(1150, buf.capacity());
        assertEquals(0, buf.maxFastWritableBytes() - buf.writableBytes(), "nothing past the maximum capacity");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 9, 100, 5000, 100_000})
    void capacityChangesKeepContent(int newCapacity) {
        Assumptions.assumeTrue(canGrow() && honoursMaxCapacity());
        ByteBuf buf = buffer(200, 200_000);
        byte[] data = randomBytes(200, SEED + newCapacity);
        buf.writeBytes(data);
        buf.readerIndex(Math.min(50, newCapacity));
        buf.capacity(newCapacity);
        assertEquals(newCapacity, buf.capacity());
        int kept = Math.min(200, newCapacity);
        for (int i = 0; i < kept; i++) {
            assertEquals(data[i], buf.getByte(i));
        }
        if (!isDuplicate()) { // a duplicate changes its parent's capacity but keeps its own indexes
            assertEquals(kept, buf.writerIndex());
            assertTrue(buf.readerIndex() <= buf.writerIndex());
        }
        assertThrows(IllegalArgumentException.class, () -> buf.capacity(200_001));
        assertThrows(IllegalArgumentException.class, () -> buf.capacity(-1));
    }

    @Test
    void writingGrowsUpToMaxCapacityThenFails() {
        Assumptions.assumeTrue(canGrow() && honoursMaxCapacity());
        ByteBuf buf = buffer(4, 40);
        buf.writeBytes(new byte[40]);
        assertEquals(40, buf.capacity());
        assertThrows(IndexOutOfBoundsException.class, () -> buf.writeByte(1));
    }

    // ---- searching ----------------------------------------------------------------------------

    @Test
    void indexOfAndBytesBefore() {
        ByteBuf buf = buffer(32);
        buf.writeBytes(new byte[] {1, 2, 3, 4, 5, 3, 2, 1});
        assertEquals(2, buf.indexOf(0, 8, (byte) 3));
        assertEquals(5, buf.indexOf(3, 8, (byte) 3));
        assertEquals(5, buf.indexOf(8, 0, (byte) 3), "backwards");
        assertEquals(-1, buf.indexOf(0, 8, (byte) 9));
        assertEquals(2, buf.bytesBefore((byte) 3));
        buf.readerIndex(3);
        assertEquals(2, buf.bytesBefore((byte) 3));
        assertEquals(-1, buf.bytesBefore((byte) 9));
        assertEquals(1, buf.bytesBefore(3, (byte) 5));
        assertEquals(-1, buf.bytesBefore(2, (byte) 3));
        assertEquals(4, buf.bytesBefore(2, 6, (byte) 2));
        assertEquals(0, buf.bytesBefore(1, 6, (byte) 2));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.bytesBefore(10, (byte) 1));
    }

    @Test
    void forEachByteVisitsInOrderAndStopsEarly() {
        ByteBuf buf = buffer(16);
        buf.writeBytes(new byte[] {10, 20, 30, 0, 40});
        List<Byte> seen = new ArrayList<>();
        assertEquals(-1, buf.forEachByte(b -> {
            seen.add(b);
            return true;
        }));
        assertEquals(List.of((byte) 10, (byte) 20, (byte) 30, (byte) 0, (byte) 40), seen);
        assertEquals(3, buf.forEachByte(ByteProcessor.FIND_NUL));
        assertEquals(3, buf.forEachByteDesc(ByteProcessor.FIND_NUL));
        assertEquals(4, buf.forEachByteDesc(b -> b != 40));
        assertEquals(2, buf.forEachByte(1, 3, b -> b != 30));
        assertEquals(-1, buf.forEachByte(0, 2, ByteProcessor.FIND_NUL));
    }

    @Test
    void byteBufUtilIndexOfFindsSubsequences() {
        ByteBuf buf = buffer(32);
        buf.writeCharSequence("hello, slab world", StandardCharsets.US_ASCII);
        ByteBuf needle = Unpooled.copiedBuffer("slab", StandardCharsets.US_ASCII);
        try {
            assertEquals(7, ByteBufUtil.indexOf(needle, buf));
        } finally {
            needle.release();
        }
    }

    // ---- strings ------------------------------------------------------------------------------

    static Stream<Arguments> charsets() {
        return Stream.of(Arguments.of(StandardCharsets.UTF_8, "grüße, 世界 ✓"),
                Arguments.of(StandardCharsets.US_ASCII, "plain ascii text"),
                Arguments.of(StandardCharsets.ISO_8859_1, "caf\u00e9 cr\u00e8me"),
                Arguments.of(StandardCharsets.UTF_16BE, "sixteen ✓"));
    }

    @ParameterizedTest
    @MethodSource("charsets")
    void charSequencesRoundTrip(Charset charset, String text) {
        ByteBuf buf = buffer(256);
        int written = buf.writeCharSequence(text, charset);
        assertEquals(text.getBytes(charset).length, written);
        assertEquals(text, buf.toString(charset));
        assertEquals(text, buf.getCharSequence(0, written, charset).toString());
        assertEquals(text, buf.readCharSequence(written, charset).toString());
        int set = buf.setCharSequence(100, text, charset);
        assertEquals(written, set);
        assertEquals(text, buf.toString(100, set, charset));
    }

    @Test
    void utf8AndHexHelpers() {
        ByteBuf buf = buffer(64);
        int n = ByteBufUtil.writeUtf8(buf, "π ≈ 3.14");
        assertEquals("π ≈ 3.14", buf.toString(StandardCharsets.UTF_8));
        assertEquals("π ≈ 3.14".getBytes(StandardCharsets.UTF_8).length, n);
        buf.clear().writeBytes(new byte[] {0x0a, (byte) 0xff, 0x10});
        assertEquals("0aff10", ByteBufUtil.hexDump(buf));
    }

    // ---- equality -----------------------------------------------------------------------------

    @Test
    void equalsHashCodeAndCompareToFollowReadableContent() {
        ByteBuf buf = buffer(16);
        buf.writeBytes(new byte[] {1, 2, 3, 4});
        ByteBuf same = Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 4});
        ByteBuf bigger = Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 5});
        assertEquals(same, buf);
        assertEquals(buf, same);
        assertEquals(same.hashCode(), buf.hashCode());
        assertTrue(buf.compareTo(bigger) < 0);
        assertTrue(bigger.compareTo(buf) > 0);
        assertEquals(0, buf.compareTo(same));
        buf.readByte();
        assertNotEquals(same, buf);
    }

    // ---- reference counting -------------------------------------------------------------------

    @Test
    void referenceCountingRules() {
        ByteBuf buf = buffer(8);
        assertEquals(1, buf.refCnt());
        assertSame(buf, buf.retain());
        assertEquals(2, buf.refCnt());
        buf.retain(3);
        assertEquals(5, buf.refCnt());
        assertFalse(buf.release(4));
        assertEquals(1, buf.refCnt());
        assertSame(buf, buf.touch());
        assertSame(buf, buf.touch("hint"));
        assertTrue(buf.release());
        assertEquals(0, buf.refCnt());
        assertThrows(IllegalReferenceCountException.class, buf::release, "double release");
        assertThrows(IllegalReferenceCountException.class, buf::retain, "retain after release");
        assertThrows(IllegalArgumentException.class, () -> buffer(4).release(0));
    }

    @Test
    void releasingMoreThanHeldIsRejected() {
        ByteBuf buf = buffer(8);
        assertThrows(IllegalReferenceCountException.class, () -> buf.release(2));
        assertEquals(1, buf.refCnt());
    }

    @Test
    void aRetainPastTheLargestCountIsRejectedAndChangesNothing() {
        ByteBuf buf = buffer(8);
        assertThrows(IllegalReferenceCountException.class, () -> buf.retain(Integer.MAX_VALUE));
        assertEquals(1, buf.refCnt());
        assertThrows(IllegalArgumentException.class, () -> buf.retain(0));
        assertThrows(IllegalArgumentException.class, () -> buf.retain(-1));
        assertThrows(IllegalArgumentException.class, () -> buf.release(-1));
        assertEquals(1, buf.refCnt());
        buf.setByte(0, 7);
        assertEquals(7, buf.getByte(0));
    }

    static Stream<Arguments> accessorsAfterRelease() {
        List<Arguments> all = new ArrayList<>();
        add(all, "getByte", b -> b.getByte(0));
        add(all, "getInt", b -> b.getInt(0));
        add(all, "getLong", b -> b.getLong(0));
        add(all, "getShortLE", b -> b.getShortLE(0));
        add(all, "getUnsignedMedium", b -> b.getUnsignedMedium(0));
        add(all, "setByte", b -> b.setByte(0, 1));
        add(all, "setInt", b -> b.setInt(0, 1));
        add(all, "setLongLE", b -> b.setLongLE(0, 1));
        add(all, "readByte", ByteBuf::readByte);
        add(all, "readInt", ByteBuf::readInt);
        add(all, "writeByte", b -> b.writeByte(1));
        add(all, "writeLong", b -> b.writeLong(1));
        add(all, "getBytes(array)", b -> b.getBytes(0, new byte[4]));
        add(all, "setBytes(array)", b -> b.setBytes(0, new byte[4]));
        add(all, "getBytes(ByteBuffer)", b -> b.getBytes(0, ByteBuffer.allocate(4)));
        add(all, "setZero", b -> b.setZero(0, 4));
        add(all, "nioBuffer", b -> b.nioBuffer(0, 4));
        add(all, "nioBuffers", b -> b.nioBuffers(0, 4));
        add(all, "internalNioBuffer", b -> b.internalNioBuffer(0, 4));
        add(all, "copy", b -> b.copy(0, 4));
        add(all, "slice.getByte", b -> b.slice(0, 4).getByte(0));
        add(all, "duplicate.getByte", b -> b.duplicate().getByte(0));
        add(all, "retainedSlice", b -> b.retainedSlice(0, 4));
        add(all, "indexOf", b -> b.indexOf(0, 4, (byte) 1));
        add(all, "forEachByte", b -> b.forEachByte(0, 4, x -> true));
        add(all, "toString(charset)", b -> b.toString(0, 4, StandardCharsets.UTF_8));
        add(all, "getCharSequence", b -> b.getCharSequence(0, 4, StandardCharsets.US_ASCII));
        add(all, "capacity(int)", b -> b.capacity(4));
        add(all, "ensureWritable", b -> b.ensureWritable(100));
        add(all, "discardReadBytes", ByteBuf::discardReadBytes);
        add(all, "memoryAddress", b -> {
            if (b.hasMemoryAddress()) {
                b.memoryAddress();
            } else {
                throw new IllegalReferenceCountException(0);
            }
        });
        return all.stream();
    }

    private static void add(List<Arguments> all, String name, Consumer<ByteBuf> access) {
        all.add(Arguments.of(name, access));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("accessorsAfterRelease")
    void everyAccessAfterReleaseThrows(String name, Consumer<ByteBuf> access) {
        Assumptions.assumeFalse(!canGrow() && name.equals("capacity(int)"), "a slice refuses capacity changes first");
        Assumptions.assumeFalse(isComposite() && name.equals("internalNioBuffer"), "composites have no internal view");
        ByteBuf buf = buffer(16);
        buf.writeLong(7).writeLong(8);
        buf.readerIndex(0);
        assertTrue(buf.release());
        assertThrows(IllegalReferenceCountException.class, () -> access.accept(buf), name);
    }

    // ---- read-only views ----------------------------------------------------------------------

    @Test
    void readOnlyViewRejectsWrites() {
        ByteBuf buf = buffer(16);
        buf.writeInt(12345);
        ByteBuf readOnly = buf.asReadOnly();
        assertTrue(readOnly.isReadOnly());
        assertEquals(12345, readOnly.getInt(0));
        assertThrows(ReadOnlyBufferException.class, () -> readOnly.setInt(0, 1));
        assertThrows(ReadOnlyBufferException.class, () -> readOnly.writeByte(1));
        assertThrows(ReadOnlyBufferException.class, () -> readOnly.setBytes(0, new byte[2]));
        assertFalse(buf.isReadOnly());
    }
}
