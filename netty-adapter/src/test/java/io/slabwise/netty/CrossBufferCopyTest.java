package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.IntFunction;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Copies between every pair of buffer kinds, each side with or without a
 * memory address and an array: Slabwise buffers with and without native
 * access, their slices and duplicates, sequential and block-pool buffers,
 * composites, Netty's pooled direct buffers and heap buffers.
 *
 * <p>On Netty 4.2 with JDK 24 and later, Netty turns {@code sun.misc.Unsafe}
 * off and Slabwise buffers have no address; a copy from one to another used to
 * bounce between their {@code getBytes} and {@code setBytes} until the stack
 * overflowed. {@link SlabwiseContractFixture#NO_ADDRESS} makes such buffers on
 * any JVM, so the matrix covers that case everywhere.
 */
@Timeout(60)
class CrossBufferCopyTest {

    private static final int SIZE = 20_000;

    /**
     * Whether Netty's own pooled direct buffers can copy into a composite here.
     * Netty 4.2 without {@code Unsafe} cannot: it asks the destination for its
     * internal NIO buffer, which a composite of several parts does not have.
     * That is Netty's limit, whoever allocated the composite.
     */
    private static final boolean NETTY_COPIES_INTO_COMPOSITES = nettyCopiesIntoComposites();

    private static boolean nettyCopiesIntoComposites() {
        ByteBuf src = PooledByteBufAllocator.DEFAULT.directBuffer(8).writeLong(1);
        ByteBuf dst = composite(Unpooled.compositeBuffer(), Unpooled.buffer(4), Unpooled.buffer(4));
        try {
            src.getBytes(0, dst, 0, 8);
            return true;
        } catch (UnsupportedOperationException netty42WithoutUnsafe) {
            return false;
        } finally {
            src.release();
            dst.release();
        }
    }

    /**
     * One kind of buffer: a name, whether Netty's own direct buffers hold its
     * bytes, whether it is a composite, and how to make an empty one of
     * exactly {@code capacity} bytes.
     */
    record Kind(String name, boolean nettyDirect, boolean composite, IntFunction<ByteBuf> make) {
        @Override
        public String toString() {
            return name;
        }
    }

    static List<Kind> kinds() {
        SlabwiseAllocator withAddress = SlabwiseContractFixture.ALLOCATOR;
        SlabwiseAllocator noAddress = SlabwiseContractFixture.NO_ADDRESS;
        return List.of(
                new Kind("slabwise", false, false, withAddress::directBuffer),
                new Kind("slabwise without address", false, false, noAddress::directBuffer),
                new Kind("slice of slabwise", false, false, c -> withAddress.directBuffer(c + 40).slice(17, c).clear()),
                new Kind("slice without address", false, false, c -> noAddress.directBuffer(c + 40).slice(17, c).clear()),
                new Kind("duplicate without address", false, false, c -> noAddress.directBuffer(c).duplicate()),
                new Kind("sequential", false, false, c -> SlabwiseContractFixture.SEQUENTIAL.allocate(c)),
                new Kind("block composite", false, true, c -> SlabwiseContractFixture.BLOCKS.allocate(c)),
                new Kind("composite without address", false, true, c -> composite(noAddress.compositeDirectBuffer(),
                        noAddress.directBuffer(c / 3), noAddress.directBuffer(c - c / 3))),
                new Kind("netty pooled direct", true, false, PooledByteBufAllocator.DEFAULT::directBuffer),
                new Kind("netty composite", true, true, c -> composite(PooledByteBufAllocator.DEFAULT.compositeDirectBuffer(),
                        PooledByteBufAllocator.DEFAULT.directBuffer(c / 2),
                        PooledByteBufAllocator.DEFAULT.directBuffer(c - c / 2))),
                new Kind("heap", false, false, Unpooled::buffer));
    }

    private static ByteBuf composite(CompositeByteBuf composite, ByteBuf... parts) {
        for (ByteBuf part : parts) {
            composite.addComponent(false, part.writerIndex(part.capacity()));
        }
        return composite;
    }

    static Stream<Arguments> pairs() {
        List<Arguments> pairs = new ArrayList<>();
        for (Kind from : kinds()) {
            for (Kind to : kinds()) {
                pairs.add(Arguments.of(from, to));
            }
        }
        return pairs.stream();
    }

    private final List<ByteBuf> held = new ArrayList<>();

    private ByteBuf hold(ByteBuf buf) {
        held.add(buf);
        return buf;
    }

    @AfterEach
    void releaseAndCheck() {
        for (ByteBuf buf : held) {
            if (buf.refCnt() > 0) {
                buf.release(buf.refCnt());
            }
        }
        held.clear();
        SlabwiseContractFixture.assertNothingLive();
    }

    private static byte[] data(int n, long seed) {
        byte[] bytes = new byte[n];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    /**
     * The buffers without native access report an address exactly where
     * Netty's own direct buffers do without it (Netty 4.2 without Unsafe),
     * the right one, and never after release; the others have native access
     * where Netty has Unsafe.
     */
    @Test
    void addressesAreWhatTheAllocatorChose() {
        ByteBuf none = hold(SlabwiseContractFixture.NO_ADDRESS.directBuffer(64));
        boolean nettyReports = !PlatformDependent.hasUnsafe()
                && hold(new io.netty.buffer.UnpooledByteBufAllocator(false, true).directBuffer(8)).hasMemoryAddress();
        assertEquals(nettyReports, none.hasMemoryAddress(), "as Netty's own direct buffers");
        assertEquals(nettyReports, none.slice(8, 8).hasMemoryAddress());
        assertEquals(nettyReports, none.duplicate().hasMemoryAddress());
        if (nettyReports) {
            ByteBuf root = none;
            while (!(root instanceof SlabwiseDirectByteBuf)) {
                root = root.unwrap();
            }
            long address = ((SlabwiseDirectByteBuf) root).allocation().address();
            assertEquals(address, none.memoryAddress(), "the address of the buffer's own memory");
            assertEquals(address + 8, none.slice(8, 8).memoryAddress());
            ByteBuf released = SlabwiseContractFixture.NO_ADDRESS.directBuffer(64);
            released.release();
            assertThrows(io.netty.util.IllegalReferenceCountException.class, released::memoryAddress,
                    "no address of memory that may belong to another buffer now");
        } else {
            assertThrows(UnsupportedOperationException.class, none::memoryAddress);
        }
        ByteBuf withAddress = hold(SlabwiseContractFixture.ALLOCATOR.directBuffer(64));
        boolean expected = PlatformDependent.hasUnsafe() && PlatformDependent.isUnaligned();
        assertEquals(expected || nettyReports, withAddress.hasMemoryAddress());
        assertEquals(expected, NativeAccess.AVAILABLE);
        if (expected || nettyReports) {
            assertEquals(withAddress.memoryAddress() + 8, withAddress.slice(8, 8).memoryAddress());
        }
    }

    /**
     * The four ways Netty code copies between buffers, from one kind into
     * another: {@code writeBytes}, {@code getBytes}, {@code setBytes} and
     * {@code readBytes}, at odd offsets.
     */
    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("pairs")
    void bytesCopyBetweenAnyTwoKinds(Kind from, Kind to) {
        Assumptions.assumeTrue(NETTY_COPIES_INTO_COMPOSITES || !(from.nettyDirect() && to.composite()),
                "Netty 4.2 without Unsafe cannot copy from its own direct buffers into a composite");
        byte[] bytes = data(SIZE, from.name().hashCode() * 31L + to.name().hashCode());
        ByteBuf src = hold(from.make().apply(SIZE));
        src.writeBytes(bytes);
        assertEquals(SIZE, src.readableBytes());

        ByteBuf dst = hold(to.make().apply(SIZE));
        dst.writeBytes(src);
        assertEquals(SIZE, dst.writerIndex());
        assertEquals(SIZE, src.readerIndex());
        assertArrayEquals(bytes, ByteBufUtil.getBytes(dst, 0, SIZE), "writeBytes");

        dst.setZero(0, SIZE);
        src.getBytes(5, dst, 3, SIZE - 10);
        assertArrayEquals(Arrays.copyOfRange(bytes, 5, SIZE - 5), ByteBufUtil.getBytes(dst, 3, SIZE - 10), "getBytes");
        assertEquals(0, dst.getByte(2));

        dst.setZero(0, SIZE);
        dst.setBytes(11, src, 7, SIZE - 20);
        assertArrayEquals(Arrays.copyOfRange(bytes, 7, SIZE - 13), ByteBufUtil.getBytes(dst, 11, SIZE - 20), "setBytes");
        assertEquals(0, dst.getByte(SIZE - 9));

        dst.clear();
        src.readerIndex(1);
        src.readBytes(dst, SIZE - 1);
        assertEquals(SIZE, src.readerIndex());
        assertArrayEquals(Arrays.copyOfRange(bytes, 1, SIZE), ByteBufUtil.getBytes(dst, 0, SIZE - 1), "readBytes");
    }

    /** A copy into a buffer of another kind keeps its bounds checks, both ways. */
    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("pairs")
    void copiesPastEitherEndAreRejected(Kind from, Kind to) {
        ByteBuf src = hold(from.make().apply(100));
        ByteBuf dst = hold(to.make().apply(50));
        assertThrows(IndexOutOfBoundsException.class, () -> src.getBytes(0, dst, 0, 51));
        assertThrows(IndexOutOfBoundsException.class, () -> src.getBytes(60, dst, 0, 41));
        assertThrows(IndexOutOfBoundsException.class, () -> dst.setBytes(0, src, 0, 51));
        assertThrows(IndexOutOfBoundsException.class, () -> dst.setBytes(0, src, 90, 11));
        assertEquals(0, dst.writerIndex());
    }

    /**
     * Netty's length-field framing over buffers without an address: the
     * decoder merges incoming pieces into a cumulation from the channel's
     * allocator, and frames come out as retained slices of it.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void lengthFieldFramingWorksOverSlabwiseBuffers(boolean nativeAccess) {
        SlabwiseAllocator allocator = nativeAccess ? SlabwiseContractFixture.ALLOCATOR : SlabwiseContractFixture.NO_ADDRESS;
        EmbeddedChannel channel = new EmbeddedChannel();
        channel.config().setAllocator(allocator);
        channel.pipeline().addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 4), new LengthFieldPrepender(4));

        Random random = new Random(77);
        List<byte[]> frames = new ArrayList<>();
        ByteBuf stream = Unpooled.buffer();
        for (int i = 0; i < 40; i++) {
            byte[] frame = data(1 + random.nextInt(i % 4 == 0 ? 30_000 : 300), i);
            frames.add(frame);
            stream.writeInt(frame.length).writeBytes(frame);
        }
        while (stream.isReadable()) { // in pieces that cut frames and length fields anywhere
            int piece = Math.min(stream.readableBytes(), 1 + random.nextInt(5000));
            ByteBuf in = allocator.directBuffer(piece);
            in.writeBytes(stream, piece);
            channel.writeInbound(in);
        }
        stream.release();
        for (byte[] expected : frames) {
            ByteBuf frame = channel.readInbound();
            assertArrayEquals(expected, ByteBufUtil.getBytes(frame));
            assertTrue(channel.writeOutbound(frame), "echoed back through the prepender");
        }
        assertNull(channel.readInbound());
        for (byte[] expected : frames) {
            ByteBuf length = channel.readOutbound();
            ByteBuf body = channel.readOutbound();
            assertEquals(expected.length, length.readInt());
            assertArrayEquals(expected, ByteBufUtil.getBytes(body));
            length.release();
            body.release();
        }
        assertFalse(channel.finish());
    }
}
