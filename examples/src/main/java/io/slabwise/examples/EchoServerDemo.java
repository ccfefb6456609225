package io.slabwise.examples;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
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
import io.slabwise.PoolStats;
import io.slabwise.netty.SlabwiseAllocator;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The demo: a Netty echo server and its clients on loopback, all allocating
 * through one {@link SlabwiseAllocator} set with {@link ChannelOption#ALLOCATOR}.
 *
 * <p>Each client connection sends length-prefixed messages of mixed sizes (64 B
 * to 64 KiB, seeded) and checks every byte of every echo. Once a second, and at
 * the end, the demo prints what the allocator holds: the bytes callers
 * requested, the bytes reserved for them, the bytes committed from the OS, the
 * chunks and the live buffers. After shutdown every buffer must have been
 * released; the program exits with status 1 if a byte or a buffer went wrong.
 *
 * <p>Run with {@code mvn -q -B install -DskipTests && mvn -q -B -pl examples exec:java};
 * an optional argument sets the duration in seconds (default 3).
 */
public final class EchoServerDemo {

    private static final int CONNECTIONS = 4;
    private static final int IN_FLIGHT = 8;
    private static final int MAX_MESSAGE = 64 * 1024;

    private EchoServerDemo() {
    }

    /** Runs the demo; the optional argument is the duration in seconds. */
    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        System.exit(run(seconds) ? 0 : 1);
    }

    /** Runs the demo for {@code seconds}; returns whether every echo and every buffer checked out. */
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    public static boolean run(int seconds) throws Exception {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().build();
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(2);
        EventLoopGroup clientLoop = new NioEventLoopGroup(1);
        EchoClientHandler.Totals totals = new EchoClientHandler.Totals();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        CountDownLatch done = new CountDownLatch(CONNECTIONS);
        try {
            Channel server = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(NioServerSocketChannel.class)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .childOption(ChannelOption.ALLOCATOR, allocator)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(MAX_MESSAGE + 4, 0, 4, 0, 4),
                                    new LengthFieldPrepender(4), new EchoHandler());
                        }
                    })
                    .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            InetSocketAddress address = (InetSocketAddress) server.localAddress();
            System.out.println("Echo server on " + address + " with " + allocator);

            List<Channel> clients = new ArrayList<>();
            for (int i = 0; i < CONNECTIONS; i++) {
                Random random = new Random(42 + i);
                clients.add(new Bootstrap()
                        .group(clientLoop)
                        .channel(NioSocketChannel.class)
                        .option(ChannelOption.ALLOCATOR, allocator)
                        .handler(new ChannelInitializer<SocketChannel>() {
                            @Override
                            protected void initChannel(SocketChannel ch) {
                                ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(MAX_MESSAGE + 4, 0, 4, 0, 4),
                                        new LengthFieldPrepender(4),
                                        new EchoClientHandler(random, IN_FLIGHT, MAX_MESSAGE, deadline, totals, done));
                            }
                        })
                        .connect(address).sync().channel());
            }
            long start = System.nanoTime();
            long lastMessages = 0;
            long lastBytes = 0;
            while (!done.await(1, TimeUnit.SECONDS)) {
                long messages = totals.messages.get();
                long bytes = totals.bytes.get();
                System.out.printf("%5.1f s  %,8d msg/s  %7.1f MB/s  %s%n", (System.nanoTime() - start) / 1e9,
                        messages - lastMessages, (bytes - lastBytes) / 1e6, allocator.stats().summary());
                lastMessages = messages;
                lastBytes = bytes;
                if (System.nanoTime() - deadline > TimeUnit.SECONDS.toNanos(30)) {
                    System.out.println("clients did not finish");
                    totals.failures.incrementAndGet();
                    break;
                }
            }
            double elapsed = (System.nanoTime() - start) / 1e9;
            System.out.printf("%nEchoed %,d messages (%.1f MB) in %.1f s, %d verification failures%n",
                    totals.messages.get(), totals.bytes.get() / 1e6, elapsed, totals.failures.get());
            System.out.println("While connected:");
            System.out.print(allocator.stats().report());
            for (Channel client : clients) {
                client.close().sync();
            }
            server.close().sync();
        } finally {
            clientLoop.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
        }
        PoolStats end = allocator.stats();
        int trimmed = allocator.trim();
        System.out.println("After shutdown: " + end.summary());
        System.out.println("After trim (" + trimmed + " chunks given back): " + allocator.stats().summary());
        boolean clean = end.requestedBytes() == 0 && end.liveAllocations() == 0;
        if (!clean) {
            System.out.println("LEAK: buffers still live after shutdown");
        }
        return clean && totals.failures.get() == 0 && totals.messages.get() > 0;
    }

    /** Echoes every frame back; the frame buffer is released by the write. */
    private static final class EchoHandler extends SimpleChannelInboundHandler<ByteBuf> {
        EchoHandler() {
            super(false);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            ctx.writeAndFlush(frame);
        }
    }

    /** Keeps {@code inFlight} messages outstanding per connection and checks each echo byte for byte. */
    static final class EchoClientHandler extends SimpleChannelInboundHandler<ByteBuf> {

        /** Counters shared by all connections. */
        static final class Totals {
            final AtomicLong messages = new AtomicLong();
            final AtomicLong bytes = new AtomicLong();
            final AtomicLong failures = new AtomicLong();
        }

        private final Random random;
        private final int inFlight;
        private final int maxMessage;
        private final long deadline;
        private final Totals totals;
        private final CountDownLatch done;
        private final java.util.ArrayDeque<byte[]> expected = new java.util.ArrayDeque<>();
        private boolean finished;

        EchoClientHandler(Random random, int inFlight, int maxMessage, long deadline, Totals totals, CountDownLatch done) {
            this.random = random;
            this.inFlight = inFlight;
            this.maxMessage = maxMessage;
            this.deadline = deadline;
            this.totals = totals;
            this.done = done;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            for (int i = 0; i < inFlight; i++) {
                send(ctx);
            }
            ctx.flush();
        }

        private void send(ChannelHandlerContext ctx) {
            byte[] payload = new byte[64 + random.nextInt(maxMessage - 63)];
            random.nextBytes(payload);
            expected.add(payload);
            ByteBuf buf = ctx.alloc().directBuffer(payload.length);
            buf.writeBytes(payload);
            ctx.write(buf);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf echo) {
            byte[] want = expected.poll();
            byte[] got = new byte[echo.readableBytes()];
            echo.readBytes(got);
            if (want == null || !java.util.Arrays.equals(want, got)) {
                totals.failures.incrementAndGet();
            }
            totals.messages.incrementAndGet();
            totals.bytes.addAndGet(got.length);
            if (System.nanoTime() < deadline) {
                send(ctx);
                ctx.flush();
            } else if (expected.isEmpty() && !finished) {
                finished = true;
                done.countDown();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            totals.failures.incrementAndGet();
            cause.printStackTrace();
            ctx.close();
            if (!finished) {
                finished = true;
                done.countDown();
            }
        }
    }
}
