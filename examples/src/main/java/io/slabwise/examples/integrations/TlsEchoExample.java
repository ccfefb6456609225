package io.slabwise.examples.integrations;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.slabwise.netty.SlabwiseAllocator;

import javax.net.ssl.SSLException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A Netty echo server and its clients over TLS on Slabwise, with the JDK's
 * {@code SSLEngine} ({@link SslProvider#JDK}) or netty-tcnative's BoringSSL
 * ({@link SslProvider#OPENSSL}, which reads and writes direct buffers through
 * their native memory). The allocator goes to the bootstraps as in any Netty
 * program, and to each {@code SslHandler} as the channel's allocator. It
 * runs on NIO, or on any other {@link Transport} (epoll, io_uring).
 *
 * <p>Each of {@value #CONNECTIONS} connections sends its share of a
 * {@link BodyPlan}'s bodies as length-prefixed frames, one in flight at a
 * time; the server echoes every frame. Both sides check each whole frame they
 * hold against their category ({@value #SERVER_CATEGORY}, {@value #CLIENT_CATEGORY}).
 *
 * <p>Run with {@code mvn -q -B install -DskipTests && mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.integrations.TlsEchoExample}.
 * It runs the JDK provider, and OpenSSL where netty-tcnative loads, 64 MiB
 * each way, and exits with status 1 if anything went wrong.
 */
public final class TlsEchoExample {

    /** The server's category. */
    public static final String SERVER_CATEGORY = "tls_server";
    /** The client's category. */
    public static final String CLIENT_CATEGORY = "tls_client";
    /** Client connections. */
    public static final int CONNECTIONS = 8;

    private static final int MAX_FRAME = 64 << 20;

    private TlsEchoExample() {
    }

    /** Runs the JDK provider, and OpenSSL where netty-tcnative loads, and prints what moved. */
    public static void main(String[] args) throws Exception {
        SelfSignedKey key = SelfSignedKey.generate();
        BodyPlan plan = BodyPlan.standard(42);
        boolean ok = true;
        for (SslProvider provider : new SslProvider[] {SslProvider.JDK, SslProvider.OPENSSL}) {
            if (provider == SslProvider.OPENSSL && !OpenSsl.isAvailable()) {
                System.out.println("OpenSSL skipped: netty-tcnative cannot load: " + OpenSsl.unavailabilityCause());
                continue;
            }
            try (SlabwiseAllocator allocator = SlabwiseAllocator.builder().build()) {
                Exchange exchange = run(allocator, provider, key, plan);
                System.out.print(exchange.summary());
                ok &= exchange.intact() && exchange.afterShutdown().requestedBytes() == 0;
            }
        }
        System.exit(ok ? 0 : 1);
    }

    /**
     * Starts a TLS echo server and {@link #CONNECTIONS} clients on
     * {@code allocator} over NIO, echoes every body of {@code plan}, shuts
     * down and waits for the event loops' threads to end.
     *
     * @throws SSLException when a TLS context cannot be built (OpenSSL where netty-tcnative does not load)
     * @throws InterruptedException when interrupted while waiting
     */
    public static Exchange run(SlabwiseAllocator allocator, SslProvider provider, SelfSignedKey key, BodyPlan plan)
            throws SSLException, InterruptedException {
        return run(allocator, Transport.nio(), provider, key, plan);
    }

    /**
     * As {@link #run(SlabwiseAllocator, SslProvider, SelfSignedKey, BodyPlan)}, on {@code transport}.
     *
     * @throws SSLException when a TLS context cannot be built (OpenSSL where netty-tcnative does not load)
     * @throws InterruptedException when interrupted while waiting
     */
    public static Exchange run(SlabwiseAllocator allocator, Transport transport, SslProvider provider, SelfSignedKey key,
                               BodyPlan plan) throws SSLException, InterruptedException {
        Exchange exchange = new Exchange("Netty echo over TLS (" + provider + ") on " + transport.name(), allocator,
                SERVER_CATEGORY, CLIENT_CATEGORY);
        SslContext serverTls = SslContextBuilder.forServer(key.privateKey(), key.certificate()).sslProvider(provider).build();
        SslContext clientTls = SslContextBuilder.forClient().trustManager(key.certificate()).sslProvider(provider).build();
        RecordedThreads threads = new RecordedThreads();
        EventLoopGroup boss = transport.newGroup(1, threads.factory("tls-boss"));
        EventLoopGroup workers = transport.newGroup(2, threads.factory("tls-server"));
        EventLoopGroup clientLoops = transport.newGroup(2, threads.factory("tls-client"));
        List<Channel> channels = new ArrayList<>();
        try {
            Channel server = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(transport.serverChannel())
                    .option(ChannelOption.ALLOCATOR, exchange.serverAllocator())
                    .childOption(ChannelOption.ALLOCATOR, exchange.serverAllocator())
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(serverTls.newHandler(ch.alloc()),
                                    new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, 0, 4), new LengthFieldPrepender(4),
                                    new EchoHandler(exchange));
                        }
                    })
                    .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            channels.add(server);
            InetSocketAddress address = (InetSocketAddress) server.localAddress();
            exchange.trafficStarts();
            CountDownLatch done = new CountDownLatch(CONNECTIONS);
            for (int c = 0; c < CONNECTIONS; c++) {
                List<Integer> bodies = new ArrayList<>();
                for (int i = c; i < plan.bodies(); i += CONNECTIONS) {
                    bodies.add(i);
                }
                channels.add(new Bootstrap()
                        .group(clientLoops)
                        .channel(transport.channel())
                        .option(ChannelOption.ALLOCATOR, exchange.clientAllocator())
                        .handler(new ChannelInitializer<SocketChannel>() {
                            @Override
                            protected void initChannel(SocketChannel ch) {
                                ch.pipeline().addLast(clientTls.newHandler(ch.alloc(), "127.0.0.1", address.getPort()),
                                        new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, 0, 4), new LengthFieldPrepender(4),
                                        new ClientHandler(exchange, plan, bodies, done));
                            }
                        })
                        .connect(address).sync().channel());
            }
            if (!done.await(3, TimeUnit.MINUTES)) {
                exchange.fail("the connections did not finish in 3 minutes");
            }
        } finally {
            for (Channel channel : channels) {
                channel.close().sync();
            }
            clientLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            threads.awaitEnd(Duration.ofSeconds(30));
        }
        exchange.finish(threads);
        return exchange;
    }

    /** Echoes each frame; the write releases it. */
    private static final class EchoHandler extends SimpleChannelInboundHandler<ByteBuf> {
        private final Exchange exchange;

        EchoHandler(Exchange exchange) {
            super(false);
            this.exchange = exchange;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            int crc = BodyPlan.crc(frame);
            exchange.serverReceived().add(crc, frame.readableBytes());
            exchange.serverHolds(frame, frame.readableBytes());
            exchange.serverSent().add(crc, frame.readableBytes());
            ctx.writeAndFlush(frame);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            exchange.fail("server", cause);
            ctx.close();
        }
    }

    /** Sends its bodies one at a time, each when the previous one has come back, and checks each echo. */
    private static final class ClientHandler extends SimpleChannelInboundHandler<ByteBuf> {
        private final Exchange exchange;
        private final BodyPlan plan;
        private final ArrayDeque<Integer> bodies;
        private final CountDownLatch done;
        private int current = -1;
        private boolean finished;

        ClientHandler(Exchange exchange, BodyPlan plan, List<Integer> bodies, CountDownLatch done) {
            this.exchange = exchange;
            this.plan = plan;
            this.bodies = new ArrayDeque<>(bodies);
            this.done = done;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            sendNext(ctx);
        }

        private void sendNext(ChannelHandlerContext ctx) {
            Integer i = bodies.poll();
            if (i == null) {
                finish();
                return;
            }
            current = i;
            ByteBuf body = ctx.alloc().directBuffer(plan.size(i));
            plan.write(i, body);
            exchange.clientSent().add(plan.crc(i), plan.size(i));
            ctx.writeAndFlush(body);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            int crc = BodyPlan.crc(frame);
            exchange.clientReceived().add(crc, frame.readableBytes());
            exchange.clientHolds(frame, frame.readableBytes());
            if (current < 0 || crc != plan.crc(current) || frame.readableBytes() != plan.size(current)) {
                exchange.fail("body " + current + " came back as " + frame.readableBytes() + " bytes, not as sent");
            }
            sendNext(ctx);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            exchange.fail("client at body " + current, cause);
            ctx.close();
            finish();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (!finished) {
                exchange.fail("a connection closed at body " + current);
                finish();
            }
        }

        private void finish() {
            if (!finished) {
                finished = true;
                done.countDown();
            }
        }
    }
}
