package io.slabwise.examples.metrics;

import io.micrometer.core.instrument.binder.netty4.NettyAllocatorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
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
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.slabwise.metrics.SlabwiseMetrics;
import io.slabwise.netty.SlabwiseAllocator;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A Netty HTTP server on {@link SlabwiseAllocator} that serves its own memory
 * figures in Prometheus format: {@code GET /metrics} returns the Slabwise
 * meters (and Micrometer's stock Netty allocator meters), and
 * {@code GET /payload?size=N} returns N bytes from the allocator so the figures
 * move.
 *
 * <p>Run with {@code mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.metrics.PrometheusMetricsServer -Dexec.args="--port 8080"},
 * then {@code curl localhost:8080/metrics}.
 */
public final class PrometheusMetricsServer implements AutoCloseable {

    private final SlabwiseAllocator allocator;
    private final PrometheusMeterRegistry registry;
    private final EventLoopGroup group;
    private final Channel channel;

    private PrometheusMetricsServer(SlabwiseAllocator allocator, PrometheusMeterRegistry registry, EventLoopGroup group,
                                    Channel channel) {
        this.allocator = allocator;
        this.registry = registry;
        this.group = group;
        this.channel = channel;
    }

    /** Starts the server on 127.0.0.1 at {@code port} (0 for any free port). */
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    public static PrometheusMetricsServer start(int port) throws InterruptedException {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().build();
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new SlabwiseMetrics(allocator.pool(), "http").bindTo(registry);
        new NettyAllocatorMetrics(allocator).bindTo(registry);
        EventLoopGroup group = new NioEventLoopGroup(2);
        Channel channel = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .option(ChannelOption.ALLOCATOR, allocator)
                .childOption(ChannelOption.ALLOCATOR, allocator)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(64 * 1024),
                                new Handler(registry));
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
        return new PrometheusMetricsServer(allocator, registry, group, channel);
    }

    /** The port the server listens on. */
    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    /** The allocator the server runs on. */
    public SlabwiseAllocator allocator() {
        return allocator;
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
        registry.close();
    }

    /** Runs the server until the process is stopped; {@code --port N} (default 8080). */
    public static void main(String[] args) throws Exception {
        int port = args.length == 2 && args[0].equals("--port") ? Integer.parseInt(args[1]) : 8080;
        PrometheusMetricsServer server = start(port);
        System.out.println("Serving http://127.0.0.1:" + server.port() + "/metrics and /payload?size=N");
        server.channel.closeFuture().sync();
    }

    /** Routes {@code /metrics} and {@code /payload}. */
    private static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final PrometheusMeterRegistry registry;

        Handler(PrometheusMeterRegistry registry) {
            this.registry = registry;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            QueryStringDecoder uri = new QueryStringDecoder(request.uri());
            FullHttpResponse response;
            if (uri.path().equals("/metrics")) {
                byte[] text = registry.scrape().getBytes(StandardCharsets.UTF_8);
                ByteBuf body = ctx.alloc().buffer(text.length).writeBytes(text);
                response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, body);
                response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
            } else if (uri.path().equals("/payload")) {
                List<String> sizes = uri.parameters().getOrDefault("size", List.of("1024"));
                int size = Math.max(0, Math.min(16 << 20, Integer.parseInt(sizes.get(0))));
                ByteBuf body = ctx.alloc().directBuffer(size).writeZero(size);
                response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, body);
                response.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/octet-stream");
            } else {
                response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NOT_FOUND,
                        ctx.alloc().buffer(0));
            }
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, response.content().readableBytes());
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
