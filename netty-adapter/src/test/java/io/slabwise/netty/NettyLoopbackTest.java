package io.slabwise.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.util.ResourceLeakDetector;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetSocketAddress;
import java.security.MessageDigest;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A real Netty server and client over loopback (NIO transport), both on one
 * {@link SlabwiseAllocator}, with Netty's leak detector at its paranoid level
 * and every report recorded by {@link RecordingLeakDetector}.
 */
@Timeout(120)
class NettyLoopbackTest {

    private static final List<String> LEAKS = RecordingLeakDetector.REPORTS;
    private ResourceLeakDetector.Level previousLevel;

    @BeforeEach
    void paranoidLeakDetection() {
        previousLevel = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        collectPendingReports();
        LEAKS.clear();
    }

    @AfterEach
    void restoreLeakDetection() {
        ResourceLeakDetector.setLevel(previousLevel);
    }

    /** Lets reports of buffers other tests may have dropped come out before this test starts counting. */
    private static void collectPendingReports() {
        System.gc();
        SlabwiseAllocator scratch = SlabwiseAllocator.builder().chunkSize(1 << 16).arenas(1).build();
        for (int i = 0; i < 10; i++) {
            scratch.directBuffer(16).release();
        }
    }

    /**
     * Several MB in mixed-size messages go to the server and back; the client
     * checks the echoed bytes against a digest of what it sent. Afterwards no
     * leak was reported and every buffer went back to the pool.
     */
    @Test
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    void megabytesEchoedByteForByteWithoutLeaks() throws Exception {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();
        EventLoopGroup group = new NioEventLoopGroup(2);
        int total = 6 * 1024 * 1024;
        MessageDigest sent = MessageDigest.getInstance("SHA-256");
        MessageDigest received = MessageDigest.getInstance("SHA-256");
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
            Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .childOption(ChannelOption.ALLOCATOR, allocator)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 4),
                                    new LengthFieldPrepender(4), new SimpleChannelInboundHandler<ByteBuf>(false) {
                                        @Override
                                        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
                                            ctx.writeAndFlush(msg);
                                        }

                                        @Override
                                        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                            done.completeExceptionally(cause); // fail now, not at the client's timeout
                                            ctx.close();
                                        }
                                    });
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            long[] receivedBytes = new long[1];
            Channel client = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 4),
                                    new LengthFieldPrepender(4), new SimpleChannelInboundHandler<ByteBuf>() {
                                        @Override
                                        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
                                            byte[] bytes = new byte[msg.readableBytes()];
                                            msg.readBytes(bytes);
                                            received.update(bytes);
                                            receivedBytes[0] += bytes.length;
                                            if (receivedBytes[0] == total) {
                                                done.complete(null);
                                            }
                                        }

                                        @Override
                                        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                            done.completeExceptionally(cause);
                                        }
                                    });
                        }
                    }).connect(server.localAddress()).sync().channel();
            Random random = new Random(4242);
            int remaining = total;
            while (remaining > 0) {
                int size = Math.min(remaining, 1 + (random.nextInt(4) == 0 ? random.nextInt(200_000) : random.nextInt(2000)));
                byte[] bytes = new byte[size];
                random.nextBytes(bytes);
                sent.update(bytes);
                ByteBuf buf = allocator.directBuffer(size);
                buf.writeBytes(bytes);
                client.write(buf);
                remaining -= size;
                if (random.nextInt(16) == 0) {
                    client.flush();
                }
            }
            client.flush();
            done.get(60, TimeUnit.SECONDS);
            assertArrayEquals(sent.digest(), received.digest());
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
        PoolStats stats = allocator.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.liveAllocations(), stats::report);
        triggerLeakReports(allocator);
        assertTrue(LEAKS.isEmpty(), () -> "leaks reported: " + LEAKS);
    }

    /** A buffer dropped without release is reported by Netty's leak detector: it tracks our buffers. */
    @Test
    void droppedBufferIsReportedAsALeak() {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).build();
        leakOne(allocator);
        triggerLeakReports(allocator);
        assertFalse(LEAKS.isEmpty(), "the leak detector reported the dropped buffer");
        assertTrue(LEAKS.stream().anyMatch(r -> r.contains("ByteBuf")), LEAKS::toString);
    }

    /**
     * The same with recycled buffer objects: the thread's cache keeps the
     * leaked buffer's holder (it serves the next buffer of its size), and a
     * buffer the detector tracks is not attached to it, so it is collected.
     */
    @Test
    void droppedRecycledBufferIsReportedAsALeak() {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).recycleBuffers(true).build();
        allocator.directBuffer(128).release(); // a holder of the leaked buffer's class, kept filled
        leakOne(allocator);
        triggerLeakReports(allocator); // buffers of another class: the kept holder stays where it is
        assertFalse(LEAKS.isEmpty(), "the leak detector reported the dropped buffer");
        ByteBuf next = allocator.directBuffer(128); // the holder serves again, with an object of its own
        next.writeLong(2);
        next.release();
    }

    /**
     * A tracked buffer stays tracked after its retained slices and
     * duplicates are released: its tracker closes when the buffer itself is
     * released, as with Netty's pooled buffers. Ours share the buffer's
     * reference count, and so its tracker. (One with a count of its own would
     * close that tracker at its own last release, since Netty's wrappers give
     * a tracker of its own only to Netty's pooled derived buffers: the
     * buffer's release would then fail the wrapper's assertion, and a buffer
     * dropped afterwards would go unreported.)
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"netty", "slabwise"})
    void releasedRetainedSlicesLeaveTheBufferTracked(String kind) {
        ByteBufAllocator allocator = kind.equals("netty") ? new PooledByteBufAllocator(true)
                : SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).build();
        ByteBuf buf = allocator.directBuffer(128).writeZero(128);
        buf.retainedSlice(0, 8).release();
        buf.retainedDuplicate().release();
        buf.readRetainedSlice(16).release();
        ByteBuf slice = buf.retainedSlice();
        ByteBuf sliceOfSlice = slice.retainedSlice(0, 8);
        slice.release();
        sliceOfSlice.release();
        assertEquals(1, buf.refCnt());
        assertTrue(buf.release(), "the buffer's own release closes its tracker");

        // several: Netty 4.1's pooled allocator keeps a single dropped buffer reachable here (one dropped without
        // any duplicate goes unreported too)
        for (int i = 0; i < 3; i++) {
            allocator.directBuffer(128).retainedDuplicate().release(); // and drop the buffer
        }
        triggerLeakReports(allocator);
        assertFalse(LEAKS.isEmpty(), "buffers dropped after their retained duplicates were released are reported");
    }

    private static void leakOne(SlabwiseAllocator allocator) {
        ByteBuf leaked = allocator.directBuffer(128);
        leaked.writeLong(1); // and drop it
    }

    /** Leak reports are made when the detector polls its reference queue, on a later allocation after a GC. */
    private static void triggerLeakReports(ByteBufAllocator allocator) {
        for (int i = 0; i < 20 && LEAKS.isEmpty(); i++) {
            System.gc();
            for (int j = 0; j < 50; j++) {
                allocator.directBuffer(64).release();
            }
        }
    }
}
