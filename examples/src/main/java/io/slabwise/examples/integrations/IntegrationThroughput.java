package io.slabwise.examples.integrations;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.AdaptiveByteBufAllocator;
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
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.slabwise.netty.SlabwiseAllocator;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.core.io.buffer.NettyDataBufferFactory;
import org.springframework.web.reactive.function.BodyInserters;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.server.RequestPredicates;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.Http2SslContextSpec;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.ConnectionProvider;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * How many echoed requests or messages per second each integration moves on
 * one allocator, and the process's peak resident memory: the load of
 * {@code benchmarks/run-integrations.sh}, which runs it once per integration,
 * allocator and round, each in a JVM of its own. Not a test: it checks no
 * byte (the examples' tests do), so that what it times is the framework and
 * the allocator.
 *
 * <p>{@value #LANES} lanes (connections, HTTP/2 streams or gRPC calls at a
 * time) each send a body of a fixed size (seeded random bytes), wait for its
 * echo and send the next, on loopback, for a warm-up and then for the
 * measured time. Server and client run in this JVM, each on two event loop
 * threads, and share the allocator under test, which is also given to each
 * HTTP/2 stream's channel.
 *
 * <p>Usage: {@code IntegrationThroughput INTEGRATION ALLOCATOR WARMUP_SECONDS SECONDS [BODY_BYTES]}
 * with an integration of {@link #INTEGRATIONS} and an allocator of
 * {@code slabwise}, {@code pooled} (Netty's {@code PooledByteBufAllocator}
 * preferring direct buffers, thread caches on every thread) or
 * {@code adaptive} (Netty's {@code AdaptiveByteBufAllocator}). It prints one
 * line, {@code RESULT integration allocator ops/s peak-RSS-KiB ops}, or
 * {@code SKIPPED integration reason} where the integration cannot run here
 * (OpenSSL without netty-tcnative), and exits with status 1 on an error.
 */
public final class IntegrationThroughput {

    /** The integrations, by the name the command line takes. */
    public static final List<String> INTEGRATIONS = List.of(
            "reactor-http11-tls", "reactor-h2-tls", "grpc-unary", "grpc-streaming", "tls-jdk", "tls-openssl", "webflux");
    /** Requests or messages in flight at once. */
    public static final int LANES = 8;

    private final ByteBufAllocator allocator;
    private final byte[] body;
    private final LongAdder ops = new LongAdder();
    private final CountDownLatch lanesDone = new CountDownLatch(LANES);
    private volatile boolean stopping;
    private volatile Throwable failure;

    private IntegrationThroughput(ByteBufAllocator allocator, int bodyBytes) {
        this.allocator = allocator;
        this.body = new byte[bodyBytes];
        new Random(bodyBytes).nextBytes(body);
    }

    /** Runs one integration on one allocator; see the class comment for the arguments. */
    public static void main(String[] args) throws Exception {
        if (args.length < 4 || !INTEGRATIONS.contains(args[0])) {
            System.err.println("usage: IntegrationThroughput " + INTEGRATIONS + " slabwise|pooled|adaptive WARMUP_SECONDS SECONDS"
                    + " [BODY_BYTES]");
            System.exit(2);
        }
        String integration = args[0];
        if (integration.equals("tls-openssl") && !OpenSsl.isAvailable()) {
            System.out.println("SKIPPED " + integration + " netty-tcnative cannot load: " + OpenSsl.unavailabilityCause());
            return;
        }
        ByteBufAllocator allocator = allocator(args[1]);
        IntegrationThroughput load = new IntegrationThroughput(allocator, args.length > 4 ? Integer.parseInt(args[4]) : 16 << 10);
        double perSecond = load.run(integration, Integer.parseInt(args[2]), Integer.parseInt(args[3]));
        System.out.printf("RESULT %s %s %.1f %d %d%n", integration, args[1], perSecond, peakResidentKib(), load.ops.sum());
        if (allocator instanceof SlabwiseAllocator slabwise) {
            slabwise.close();
        }
        System.exit(load.failure == null ? 0 : 1);
    }

    private static ByteBufAllocator allocator(String name) {
        return switch (name) {
            case "slabwise" -> SlabwiseAllocator.builder().build();
            case "pooled" -> new PooledByteBufAllocator(true, PooledByteBufAllocator.defaultNumHeapArena(),
                    PooledByteBufAllocator.defaultNumDirectArena(), PooledByteBufAllocator.defaultPageSize(),
                    PooledByteBufAllocator.defaultMaxOrder(), PooledByteBufAllocator.defaultSmallCacheSize(),
                    PooledByteBufAllocator.defaultNormalCacheSize(), true);
            case "adaptive" -> new AdaptiveByteBufAllocator(true, true);
            default -> throw new IllegalArgumentException("no allocator " + name);
        };
    }

    /** Starts the integration, lets it warm up, counts for {@code seconds}, stops it; returns operations per second. */
    private double run(String integration, int warmupSeconds, int seconds) throws Exception {
        RecordedThreads threads = new RecordedThreads();
        EventLoopGroup serverLoops = newLoops(threads, "server");
        EventLoopGroup clientLoops = newLoops(threads, "client");
        List<AutoCloseable> resources = new ArrayList<>();
        double perSecond;
        try {
            switch (integration) {
                case "reactor-http11-tls" -> reactorHttp(HttpProtocol.HTTP11, serverLoops, clientLoops, resources);
                case "reactor-h2-tls" -> reactorHttp(HttpProtocol.H2, serverLoops, clientLoops, resources);
                case "grpc-unary" -> grpc(false, serverLoops, clientLoops, threads, resources);
                case "grpc-streaming" -> grpc(true, serverLoops, clientLoops, threads, resources);
                case "tls-jdk" -> tlsEcho(SslProvider.JDK, serverLoops, clientLoops, resources);
                case "tls-openssl" -> tlsEcho(SslProvider.OPENSSL, serverLoops, clientLoops, resources);
                case "webflux" -> webFlux(serverLoops, clientLoops, resources);
                default -> throw new IllegalArgumentException(integration);
            }
            TimeUnit.SECONDS.sleep(warmupSeconds);   // a timed run: the measured window is wall-clock time
            long start = System.nanoTime();
            long before = ops.sum();
            TimeUnit.SECONDS.sleep(seconds);
            long counted = ops.sum() - before;
            perSecond = counted * 1e9 / (System.nanoTime() - start);
            stopping = true;
            if (!lanesDone.await(60, TimeUnit.SECONDS)) {
                fail(new IllegalStateException("the lanes did not stop within 60 s"));
            }
        } finally {
            stopping = true;
            for (int i = resources.size() - 1; i >= 0; i--) {
                resources.get(i).close();
            }
            clientLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            serverLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            threads.awaitEnd(Duration.ofSeconds(30));
        }
        if (failure != null) {
            failure.printStackTrace();
        }
        return perSecond;
    }

    private void fail(Throwable cause) {
        if (failure == null) {
            failure = cause;
        }
        stopping = true;
    }

    private ByteBuf newBody(ByteBufAllocator alloc) {
        return alloc.directBuffer(body.length).writeBytes(body);
    }

    // ---- Reactor Netty HTTP/1.1 and HTTP/2 over TLS

    private void reactorHttp(HttpProtocol protocol, EventLoopGroup serverLoops, EventLoopGroup clientLoops,
                             List<AutoCloseable> resources) throws Exception {
        SelfSignedKey key = SelfSignedKey.generate();
        boolean h2 = protocol == HttpProtocol.H2;
        SslContext serverTls = (h2 ? Http2SslContextSpec.forServer(key.privateKey(), key.certificate())
                : Http11SslContextSpec.forServer(key.privateKey(), key.certificate())).sslContext();
        SslContext clientTls = (h2 ? Http2SslContextSpec.forClient() : Http11SslContextSpec.forClient())
                .configure(builder -> builder.trustManager(key.certificate())).sslContext();
        DisposableServer server = HttpServer.create().host("127.0.0.1").port(0).runOn(serverLoops)
                .option(ChannelOption.ALLOCATOR, allocator)
                .childOption(ChannelOption.ALLOCATOR, allocator)
                .doOnConnection(connection -> connection.channel().config().setAllocator(allocator))   // HTTP/2 streams
                .protocol(protocol)
                .secure(spec -> spec.sslContext(serverTls))
                .handle((request, response) -> {
                    response.header(HttpHeaderNames.CONTENT_LENGTH, request.requestHeaders().get(HttpHeaderNames.CONTENT_LENGTH));
                    return response.send(request.receive().aggregate().retain());
                })
                .bindNow(Duration.ofSeconds(30));
        resources.add(() -> server.disposeNow(Duration.ofSeconds(30)));
        ConnectionProvider connections = ConnectionProvider.builder("throughput").maxConnections(LANES).pendingAcquireMaxCount(-1).build();
        resources.add(() -> connections.disposeLater().block(Duration.ofSeconds(30)));
        HttpClient client = HttpClient.create(connections).runOn(clientLoops)
                .option(ChannelOption.ALLOCATOR, allocator)
                .doOnRequest((request, connection) -> connection.channel().config().setAllocator(allocator))   // HTTP/2 streams
                .protocol(protocol)
                .secure(spec -> spec.sslContext(clientTls))
                .baseUrl("https://127.0.0.1:" + server.port())
                .headers(headers -> headers.set(HttpHeaderNames.CONTENT_LENGTH, body.length));
        Mono<Integer> post = client.post().uri("/echo")
                .send(Mono.fromSupplier(() -> newBody(allocator)))
                .responseSingle((response, content) -> content.map(ByteBuf::readableBytes));
        startLanes(post);
    }

    /** {@value #LANES} lanes repeating {@code call} until stopping, each counting down {@link #lanesDone} at its end. */
    private void startLanes(Mono<Integer> call) {
        for (int lane = 0; lane < LANES; lane++) {
            Mono.defer(() -> call)
                    .doOnNext(length -> counted(length))
                    .repeat(() -> !stopping)
                    .doFinally(signal -> lanesDone.countDown())
                    .subscribe(length -> { }, this::fail);
        }
    }

    private void counted(int length) {
        if (length != body.length) {
            fail(new IllegalStateException("an echo of " + length + " bytes for a body of " + body.length));
        }
        ops.increment();
    }

    // ---- Spring WebFlux (Spring Boot) and WebClient

    private void webFlux(EventLoopGroup serverLoops, EventLoopGroup clientLoops, List<AutoCloseable> resources) throws Exception {
        WebFluxServerSide side = new WebFluxServerSide(allocator, serverLoops, false);
        SpringApplication application = new SpringApplication(EchoApplication.class);
        application.setWebApplicationType(WebApplicationType.REACTIVE);
        application.setDefaultProperties(Map.of("server.address", "127.0.0.1", "server.port", "0",
                "spring.main.banner-mode", "off", "spring.main.log-startup-info", "false"));
        application.addInitializers(context -> context.getBeanFactory().registerSingleton("webFluxServerSide", side));
        ConfigurableApplicationContext context = application.run();
        resources.add(context::close);
        ConnectionProvider connections = ConnectionProvider.builder("throughput").maxConnections(LANES).pendingAcquireMaxCount(-1).build();
        resources.add(() -> connections.disposeLater().block(Duration.ofSeconds(30)));
        WebClient client = WebFluxExample.client(allocator, clientLoops, connections, side.port().get(30, TimeUnit.SECONDS));
        NettyDataBufferFactory buffers = new NettyDataBufferFactory(allocator);
        Mono<Integer> post = client.post().uri("/echo")
                .contentLength(body.length)
                .body(BodyInserters.fromDataBuffers(Mono.fromSupplier(() -> buffers.wrap(newBody(allocator)))))
                .exchangeToMono(response -> DataBufferUtils.join(response.bodyToFlux(DataBuffer.class)).map(joined -> {
                    int length = joined.readableByteCount();
                    DataBufferUtils.release(joined);
                    return length;
                }));
        startLanes(post);
    }

    /** The WebFlux application of the throughput run: {@code POST /echo} joins the body and sends it back, unchecked. */
    @SpringBootConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(SlabwiseServerConfiguration.class)
    public static class EchoApplication {

        /** The echo route. */
        @Bean
        RouterFunction<ServerResponse> echoRoute() {
            return RouterFunctions.route(RequestPredicates.POST("/echo"), request -> DataBufferUtils
                    .join(request.bodyToFlux(DataBuffer.class))
                    .flatMap(joined -> ServerResponse.ok().contentLength(joined.readableByteCount())
                            .body(BodyInserters.fromDataBuffers(Mono.just(joined)))));
        }
    }

    // ---- gRPC (grpc-netty), unary calls or bidirectional streams

    private void grpc(boolean streaming, EventLoopGroup serverLoops, EventLoopGroup clientLoops, RecordedThreads threads,
                      List<AutoCloseable> resources) throws IOException {
        MethodDescriptor<byte[], byte[]> unary = method(MethodDescriptor.MethodType.UNARY, "Unary");
        MethodDescriptor<byte[], byte[]> bidi = method(MethodDescriptor.MethodType.BIDI_STREAMING, "Stream");
        ServerServiceDefinition service = ServerServiceDefinition.builder("slabwise.throughput.Echo")
                .addMethod(unary, ServerCalls.asyncUnaryCall((request, responses) -> {
                    responses.onNext(request);
                    responses.onCompleted();
                }))
                .addMethod(bidi, ServerCalls.asyncBidiStreamingCall(responses -> new StreamObserver<byte[]>() {
                    @Override
                    public void onNext(byte[] request) {
                        responses.onNext(request);
                    }

                    @Override
                    public void onError(Throwable t) {
                    }

                    @Override
                    public void onCompleted() {
                        responses.onCompleted();
                    }
                }))
                .build();
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .channelType(NioServerSocketChannel.class)
                .bossEventLoopGroup(serverLoops).workerEventLoopGroup(serverLoops)
                .directExecutor()
                .withOption(ChannelOption.ALLOCATOR, allocator)
                .withChildOption(ChannelOption.ALLOCATOR, allocator)
                .addService(service)
                .build()
                .start();
        resources.add(() -> server.shutdownNow().awaitTermination(30, TimeUnit.SECONDS));
        ManagedChannel channel = NettyChannelBuilder.forAddress(new InetSocketAddress("127.0.0.1", server.getPort()))
                .channelType(NioSocketChannel.class)
                .eventLoopGroup(clientLoops)
                .directExecutor()
                .withOption(ChannelOption.ALLOCATOR, allocator)
                .usePlaintext()
                .build();
        resources.add(() -> channel.shutdownNow().awaitTermination(30, TimeUnit.SECONDS));
        for (int lane = 0; lane < LANES; lane++) {
            if (streaming) {
                new StreamLane(channel, bidi).start();
            } else {
                new UnaryLane(channel, unary).next();
            }
        }
    }

    private static MethodDescriptor<byte[], byte[]> method(MethodDescriptor.MethodType type, String name) {
        MethodDescriptor.Marshaller<byte[]> bytes = new MethodDescriptor.Marshaller<>() {
            @Override
            public InputStream stream(byte[] value) {
                return new ByteArrayInputStream(value);
            }

            @Override
            public byte[] parse(InputStream stream) {
                try {
                    return stream.readAllBytes();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        };
        return MethodDescriptor.<byte[], byte[]>newBuilder().setType(type)
                .setFullMethodName(MethodDescriptor.generateFullMethodName("slabwise.throughput.Echo", name))
                .setRequestMarshaller(bytes).setResponseMarshaller(bytes).build();
    }

    /** Unary calls one after another. */
    private final class UnaryLane implements StreamObserver<byte[]> {
        private final ManagedChannel channel;
        private final MethodDescriptor<byte[], byte[]> method;

        UnaryLane(ManagedChannel channel, MethodDescriptor<byte[], byte[]> method) {
            this.channel = channel;
            this.method = method;
        }

        void next() {
            if (stopping) {
                lanesDone.countDown();
                return;
            }
            ClientCalls.asyncUnaryCall(channel.newCall(method, CallOptions.DEFAULT), body, this);
        }

        @Override
        public void onNext(byte[] response) {
            counted(response.length);
        }

        @Override
        public void onError(Throwable t) {
            fail(t);
            lanesDone.countDown();
        }

        @Override
        public void onCompleted() {
            next();
        }
    }

    /** One bidirectional stream: a message is sent when the previous one has come back. */
    private final class StreamLane implements StreamObserver<byte[]> {
        private final ManagedChannel channel;
        private final MethodDescriptor<byte[], byte[]> method;
        private StreamObserver<byte[]> requests;

        StreamLane(ManagedChannel channel, MethodDescriptor<byte[], byte[]> method) {
            this.channel = channel;
            this.method = method;
        }

        synchronized void start() {
            requests = ClientCalls.asyncBidiStreamingCall(channel.newCall(method, CallOptions.DEFAULT), this);
            requests.onNext(body);
        }

        @Override
        public synchronized void onNext(byte[] response) {
            counted(response.length);
            if (stopping) {
                requests.onCompleted();
            } else {
                requests.onNext(body);
            }
        }

        @Override
        public void onError(Throwable t) {
            fail(t);
            lanesDone.countDown();
        }

        @Override
        public void onCompleted() {
            lanesDone.countDown();
        }
    }

    // ---- Netty's SslHandler, JDK or OpenSSL, length-prefixed frames

    private void tlsEcho(SslProvider provider, EventLoopGroup serverLoops, EventLoopGroup clientLoops,
                         List<AutoCloseable> resources) throws Exception {
        SelfSignedKey key = SelfSignedKey.generate();
        SslContext serverTls = SslContextBuilder.forServer(key.privateKey(), key.certificate()).sslProvider(provider).build();
        SslContext clientTls = SslContextBuilder.forClient().trustManager(key.certificate()).sslProvider(provider).build();
        int maxFrame = body.length + 1024;
        Channel server = new ServerBootstrap().group(serverLoops).channel(NioServerSocketChannel.class)
                .option(ChannelOption.ALLOCATOR, allocator)
                .childOption(ChannelOption.ALLOCATOR, allocator)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(serverTls.newHandler(ch.alloc()), new LengthFieldBasedFrameDecoder(maxFrame, 0, 4, 0, 4),
                                new LengthFieldPrepender(4), new SimpleChannelInboundHandler<ByteBuf>(false) {
                                    @Override
                                    protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
                                        ctx.writeAndFlush(frame);
                                    }
                                });
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        resources.add(() -> server.close().sync());
        InetSocketAddress address = (InetSocketAddress) server.localAddress();
        for (int lane = 0; lane < LANES; lane++) {
            Channel client = new Bootstrap().group(clientLoops).channel(NioSocketChannel.class)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(clientTls.newHandler(ch.alloc(), "127.0.0.1", address.getPort()),
                                    new LengthFieldBasedFrameDecoder(maxFrame, 0, 4, 0, 4), new LengthFieldPrepender(4),
                                    new FrameLane());
                        }
                    })
                    .connect(address).sync().channel();
            resources.add(() -> client.close().sync());
        }
    }

    /** One connection's frames: the next is sent when the previous one has come back. */
    private final class FrameLane extends SimpleChannelInboundHandler<ByteBuf> {
        private boolean done;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.writeAndFlush(newBody(ctx.alloc()));
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            counted(frame.readableBytes());
            if (stopping) {
                finish();
            } else {
                ctx.writeAndFlush(newBody(ctx.alloc()));
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            fail(cause);
            finish();
            ctx.close();
        }

        private void finish() {
            if (!done) {
                done = true;
                lanesDone.countDown();
            }
        }
    }

    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    private static EventLoopGroup newLoops(RecordedThreads threads, String role) {
        return new NioEventLoopGroup(2, threads.factory(role));
    }

    /** The process's peak resident set size ({@code VmHWM}) in KiB, or -1 where it cannot be read. */
    private static long peakResidentKib() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.US_ASCII)) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.substring("VmHWM:".length()).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
