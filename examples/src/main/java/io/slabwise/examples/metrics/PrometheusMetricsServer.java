package io.slabwise.examples.metrics;

import io.micrometer.core.instrument.binder.netty4.NettyAllocatorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
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
import java.util.concurrent.TimeUnit;

/**
 * A Netty HTTP server on {@link SlabwiseAllocator} that serves its own memory
 * figures in the Prometheus text format.
 *
 * <ul>
 *   <li>{@code GET /metrics}: the Slabwise meters ({@code slabwise_*}, tagged
 *       {@code allocator="http"}) and Micrometer's stock Netty allocator meters
 *       ({@code netty_allocator_*}), both read from the one allocator the
 *       server runs on;</li>
 *   <li>{@code GET /payload?size=N}: N zero bytes (at most 16 MiB), allocated
 *       in the {@code payload} category, so that the figures move. The
 *       channels' own buffers (reads, the HTTP codec) are in the default
 *       {@code network} category.</li>
 * </ul>
 *
 * <p>Run with {@code mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.metrics.PrometheusMetricsServer -Dexec.args="--port 8080"},
 * then {@code curl 'localhost:8080/payload?size=100000' >/dev/null; curl localhost:8080/metrics}.
 */
public final class PrometheusMetricsServer implements AutoCloseable {

    /** The category {@code /payload} responses are accounted to. */
    public static final String PAYLOAD_CATEGORY = "payload";

    private static final int MAX_PAYLOAD = 16 << 20;

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

    /**
     * Starts the server on 127.0.0.1 at {@code port}; 0 picks a free port, see {@link #port()}.
     *
     * @throws InterruptedException when interrupted while binding
     */
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    public static PrometheusMetricsServer start(int port) throws InterruptedException {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().build();
        // Categories known up front are created before binding, so that the first scrape shows all their series;
        // one created later gets its meters when a scrape first sees it, and shows fully from the next scrape.
        ByteBufAllocator payloads = allocator.forCategory(PAYLOAD_CATEGORY);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        SlabwiseMetrics.forAllocator(allocator, allocator.pool(), "http").bindTo(registry); // joins NettyAllocatorMetrics by id
        new NettyAllocatorMetrics(allocator).bindTo(registry);
        EventLoopGroup group = new NioEventLoopGroup(2);
        try {
            Channel channel = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .childOption(ChannelOption.ALLOCATOR, allocator)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(64 * 1024),
                                    new Routes(registry, payloads));
                        }
                    })
                    .bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
            return new PrometheusMetricsServer(allocator, registry, group, channel);
        } catch (InterruptedException | RuntimeException e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            registry.close();
            allocator.close();
            throw e;
        }
    }

    /** The port the server listens on. */
    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    /** The allocator the server runs on. */
    public SlabwiseAllocator allocator() {
        return allocator;
    }

    /** The registry {@code /metrics} serves. */
    public PrometheusMeterRegistry registry() {
        return registry;
    }

    /** Stops listening, closes the event loops, the registry and the allocator the server made. */
    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        registry.close();
        allocator.close();
    }

    /**
     * Runs the server until the process is stopped.
     *
     * @param args {@code --port N} or {@code --port=N}; 8080 by default
     * @throws InterruptedException when interrupted
     */
    public static void main(String[] args) throws InterruptedException {
        int port = 8080;
        try {
            if (args.length == 2 && args[0].equals("--port")) {
                port = Integer.parseInt(args[1]);
            } else if (args.length == 1 && args[0].startsWith("--port=")) {
                port = Integer.parseInt(args[0].substring("--port=".length()));
            } else if (args.length != 0) {
                throw new IllegalArgumentException("unknown arguments");
            }
        } catch (IllegalArgumentException e) {
            System.err.println("usage: PrometheusMetricsServer [--port N]");
            System.exit(2);
        }
        PrometheusMetricsServer server = start(port);
        System.out.println("Serving http://127.0.0.1:" + server.port() + "/metrics and /payload?size=N");
        server.channel.closeFuture().sync();
    }

    /** Routes {@code /metrics} and {@code /payload}; anything else is 404. */
    private static final class Routes extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final PrometheusMeterRegistry registry;
        private final ByteBufAllocator payloads;

        Routes(PrometheusMeterRegistry registry, ByteBufAllocator payloads) {
            this.registry = registry;
            this.payloads = payloads;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            QueryStringDecoder uri = new QueryStringDecoder(request.uri());
            FullHttpResponse response;
            switch (uri.path()) {
                case "/metrics": {
                    byte[] text = registry.scrape().getBytes(StandardCharsets.UTF_8);
                    response = respond(ctx.alloc().buffer(text.length).writeBytes(text), HttpResponseStatus.OK,
                            "text/plain; version=0.0.4; charset=utf-8");
                    break;
                }
                case "/payload": {
                    int size = payloadSize(uri);
                    response = size < 0
                            ? text(ctx, HttpResponseStatus.BAD_REQUEST, "size must be 0.." + MAX_PAYLOAD + "\n")
                            : respond(payloads.directBuffer(size).writeZero(size), HttpResponseStatus.OK,
                                    "application/octet-stream");
                    break;
                }
                default:
                    response = text(ctx, HttpResponseStatus.NOT_FOUND, "try /metrics or /payload?size=N\n");
            }
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }

        /** The {@code size} parameter (1024 when absent), or -1 when it is not a number in range. */
        private static int payloadSize(QueryStringDecoder uri) {
            List<String> sizes = uri.parameters().getOrDefault("size", List.of("1024"));
            try {
                int size = Integer.parseInt(sizes.get(0));
                return size >= 0 && size <= MAX_PAYLOAD ? size : -1;
            } catch (NumberFormatException e) {
                return -1;
            }
        }

        private static FullHttpResponse text(ChannelHandlerContext ctx, HttpResponseStatus status, String message) {
            byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
            return respond(ctx.alloc().buffer(bytes.length).writeBytes(bytes), status, "text/plain; charset=utf-8");
        }

        private static FullHttpResponse respond(ByteBuf body, HttpResponseStatus status, String contentType) {
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, body);
            response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
            return response;
        }
    }
}
