package io.slabwise.benchmarks.http;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.slabwise.benchmarks.AllocatorKind;

import java.lang.reflect.InvocationTargetException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

/**
 * The end-to-end benchmark's server: a Netty HTTP/1.1 server on loopback
 * whose responses are allocated by the chosen allocator, for {@code wrk} to
 * load. {@code GET /?size=N} returns N bytes (default 4096) written into a
 * fresh direct buffer, so every request allocates, fills and releases request
 * and response buffers through the allocator.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.slabwise.benchmarks.http.HttpBenchmarkServer slabwise 8081 [nio|epoll]
 * wrk -t1 -c64 -d10s --latency 'http://127.0.0.1:8081/?size=4096'
 * </pre>
 *
 * The transport is NIO unless the third argument says {@code epoll}, which
 * needs the jar built with {@code -Pnetty-4.2-native} (the only build that
 * carries Netty's epoll jar with its native library). It prints the
 * allocator, the transport with its server channel class, and whether the
 * allocator's direct buffers report a memory address: epoll takes the
 * address from {@code memoryAddress()} where they do, and from a direct
 * {@code ByteBuffer} view of each buffer where they do not.
 *
 * It prints its resident memory (VmHWM, the peak, and VmRSS) when it gets
 * {@code GET /rss}, and exits on {@code GET /exit}. {@code run-http-benchmark.sh}
 * runs every allocator in turn.
 */
public final class HttpBenchmarkServer {

    private HttpBenchmarkServer() {
    }

    /** Arguments: allocator (an {@link AllocatorKind}: slabwise, pooled, adaptive...), port, and nio (default) or epoll. */
    public static void main(String[] args) throws Exception {
        ByteBufAllocator allocator = AllocatorKind.valueOf(args[0]).create();
        int port = Integer.parseInt(args[1]);
        Transport transport = Transport.valueOf(args.length > 2 ? args[2] : "nio");
        EventLoopGroup boss = transport.group();
        EventLoopGroup workers = transport.group();
        try {
            Channel server = new ServerBootstrap().group(boss, workers).channel(transport.serverChannel())
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .childOption(ChannelOption.ALLOCATOR, allocator)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 20), new Handler());
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
            boolean address = workers.next().submit(() -> { // on the event loop, which allocates anyway
                ByteBuf probe = allocator.directBuffer(1);
                try {
                    return probe.hasMemoryAddress();
                } finally {
                    probe.release();
                }
            }).get();
            System.out.println("serving with " + args[0] + " on 127.0.0.1:" + port + " over " + transport + " ("
                    + server.getClass().getSimpleName() + "); direct buffers report a memory address: " + address);
            server.closeFuture().sync();
        } finally {
            boss.shutdownGracefully();
            workers.shutdownGracefully();
        }
    }

    /**
     * The event loops and server channel of a transport, one event loop a
     * group. Epoll's classes are looked up by name: only the jar built with
     * {@code -Pnetty-4.2-native} has them, and the others must still compile.
     */
    private enum Transport {
        nio {
            @Override
            @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
            EventLoopGroup group() {
                return new NioEventLoopGroup(1);
            }

            @Override
            Class<? extends ServerChannel> serverChannel() {
                return NioServerSocketChannel.class;
            }
        },
        epoll {
            @Override
            EventLoopGroup group() throws ReflectiveOperationException {
                try {
                    epollClass("Epoll").getMethod("ensureAvailability").invoke(null);
                } catch (InvocationTargetException e) {
                    throw new IllegalStateException("epoll cannot load here", e.getCause());
                }
                return (EventLoopGroup) epollClass("EpollEventLoopGroup").getConstructor(int.class).newInstance(1);
            }

            @Override
            Class<? extends ServerChannel> serverChannel() throws ReflectiveOperationException {
                return epollClass("EpollServerSocketChannel").asSubclass(ServerChannel.class);
            }
        };

        abstract EventLoopGroup group() throws ReflectiveOperationException;

        abstract Class<? extends ServerChannel> serverChannel() throws ReflectiveOperationException;

        private static Class<?> epollClass(String name) {
            try {
                return Class.forName("io.netty.channel.epoll." + name);
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException("no epoll classes in this jar: build it with -Pnetty-4.2-native", e);
            }
        }
    }

    /** Answers {@code /?size=N}, {@code /rss} and {@code /exit}. */
    private static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final byte[] pattern = new byte[1 << 16];

        Handler() {
            new Random(1).nextBytes(pattern);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) throws Exception {
            QueryStringDecoder uri = new QueryStringDecoder(request.uri());
            ByteBuf body;
            if (uri.path().equals("/rss")) {
                String status = Files.readString(Path.of("/proc/self/status"));
                StringBuilder text = new StringBuilder();
                for (String line : status.split("\n")) {
                    if (line.startsWith("VmHWM") || line.startsWith("VmRSS")) {
                        text.append(line.replaceAll("\\s+", " ")).append('\n');
                    }
                }
                body = ctx.alloc().buffer().writeBytes(text.toString().getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            } else if (uri.path().equals("/exit")) {
                ctx.channel().parent().close();
                ctx.close();
                return;
            } else {
                List<String> sizes = uri.parameters().getOrDefault("size", List.of("4096"));
                int size = Math.min(1 << 20, Integer.parseInt(sizes.get(0)));
                body = ctx.alloc().directBuffer(size);
                while (body.writableBytes() > 0) {
                    body.writeBytes(pattern, 0, Math.min(pattern.length, body.writableBytes()));
                }
            }
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, body);
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
            HttpUtil.setKeepAlive(response, HttpUtil.isKeepAlive(request));
            ctx.writeAndFlush(response);
        }
    }
}
