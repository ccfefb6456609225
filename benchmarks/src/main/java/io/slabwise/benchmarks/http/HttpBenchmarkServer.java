package io.slabwise.benchmarks.http;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
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
 * java -cp benchmarks/target/benchmarks.jar io.slabwise.benchmarks.http.HttpBenchmarkServer slabwise 8081
 * wrk -t1 -c64 -d10s --latency 'http://127.0.0.1:8081/?size=4096'
 * </pre>
 *
 * It prints its resident memory (VmHWM, the peak, and VmRSS) when it gets
 * {@code GET /rss}, and exits on {@code GET /exit}. {@code run-http-benchmark.sh}
 * runs every allocator in turn.
 */
public final class HttpBenchmarkServer {

    private HttpBenchmarkServer() {
    }

    /** Arguments: allocator (slabwise, pooled, adaptive, unpooled) and port. */
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    public static void main(String[] args) throws Exception {
        ByteBufAllocator allocator = AllocatorKind.valueOf(args[0]).create();
        int port = Integer.parseInt(args[1]);
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(1);
        try {
            Channel server = new ServerBootstrap().group(boss, workers).channel(NioServerSocketChannel.class)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .childOption(ChannelOption.ALLOCATOR, allocator)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 20), new Handler());
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
            System.out.println("serving with " + args[0] + " on 127.0.0.1:" + port);
            server.closeFuture().sync();
        } finally {
            boss.shutdownGracefully();
            workers.shutdownGracefully();
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
