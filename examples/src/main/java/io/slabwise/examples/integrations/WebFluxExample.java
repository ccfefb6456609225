package io.slabwise.examples.integrations;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.handler.ssl.SslContext;
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
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.web.reactive.function.BodyInserters;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.server.RequestPredicates;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.Http2SslContextSpec;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.resources.ConnectionProvider;

import javax.net.ssl.SSLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Spring WebFlux on Slabwise: a Spring Boot application whose Reactor Netty
 * server is given the allocator by a {@code NettyServerCustomizer} bean
 * ({@link SlabwiseServerConfiguration}), and a {@link WebClient} whose
 * Reactor Netty {@code HttpClient} is given it with
 * {@code .option(ChannelOption.ALLOCATOR, a)}.
 *
 * <p>The application has one route, {@code POST /echo}: it joins the request
 * body's {@link DataBuffer}s (Spring's {@code NettyDataBuffer}s over the
 * channel's {@code ByteBuf}s, joined into a composite of the same buffers)
 * and sends them back. The client posts every body of a {@link BodyPlan}
 * with {@value #CONCURRENCY} requests at a time and joins each response the
 * same way. Both sides tally what they send and receive in an
 * {@link Exchange}, check that each whole body they hold lies in their
 * category ({@value #SERVER_CATEGORY} and {@value #CLIENT_CATEGORY}), and
 * count the protocol version each request and response came in.
 *
 * <p>Three {@link Mode modes}: HTTP/1.1 in clear text, HTTP/1.1 over TLS,
 * and HTTP/2 over TLS. The server is set up for TLS and HTTP/2 the way a
 * Spring Boot application is, by properties: {@code server.ssl.bundle} names
 * an SSL bundle of PEM text ({@code spring.ssl.bundle.pem.*}, here the text of
 * a key and certificate made at start-up where an application gives a file's
 * location) and {@code server.http2.enabled} offers HTTP/2 beside HTTP/1.1
 * (by ALPN). Spring Boot then configures the Reactor Netty server's TLS and
 * protocols before it applies the customizer, which needs nothing more than
 * the allocator lines. The client's {@code HttpClient} is given the
 * protocol and a TLS context trusting the certificate.
 *
 * <p>Spring Boot 3.5 (Netty 4.1) and 4.0 (Netty 4.2) alike: the build picks
 * the {@code SlabwiseServerConfiguration} of the Spring Boot in use.
 *
 * <p>Run with {@code mvn -q -B install -DskipTests && mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.integrations.WebFluxExample}. It
 * runs each mode, 64 MiB each way, and exits with status 1 if anything went wrong.
 */
public final class WebFluxExample {

    /** The server's category. */
    public static final String SERVER_CATEGORY = "webflux_server";
    /** The client's category. */
    public static final String CLIENT_CATEGORY = "webclient";
    /** Concurrent requests: HTTP/1.1 connections, or HTTP/2 streams. */
    public static final int CONCURRENCY = 8;

    private static final String CRC_HEADER = "x-body-crc32c";
    private static final String SSL_BUNDLE = "web";

    /** How the client and the server talk. */
    public enum Mode {
        /** HTTP/1.1 in clear text, Spring Boot's default. */
        HTTP11("HTTP/1.1", false, HttpProtocol.HTTP11, "HTTP/1.1"),
        /** HTTP/1.1 over TLS: {@code server.ssl.bundle}. */
        HTTP11_TLS("HTTP/1.1 over TLS", true, HttpProtocol.HTTP11, "HTTP/1.1"),
        /** HTTP/2 over TLS (h2, agreed by ALPN): {@code server.ssl.bundle} and {@code server.http2.enabled}. */
        H2_TLS("HTTP/2 over TLS", true, HttpProtocol.H2, "HTTP/2.0");

        private final String title;
        private final boolean tls;
        private final HttpProtocol clientProtocol;
        private final String version;

        Mode(String title, boolean tls, HttpProtocol clientProtocol, String version) {
            this.title = title;
            this.tls = tls;
            this.clientProtocol = clientProtocol;
            this.version = version;
        }

        /** The protocol version both sides must see each request and response in, as Reactor Netty names it. */
        public String version() {
            return version;
        }
    }

    private WebFluxExample() {
    }

    /** Runs the application and the client on loopback in each mode, and prints what moved. */
    public static void main(String[] args) throws Exception {
        SelfSignedKey key = SelfSignedKey.generate();
        BodyPlan plan = BodyPlan.standard(42);
        boolean ok = true;
        for (Mode mode : Mode.values()) {
            try (SlabwiseAllocator allocator = SlabwiseAllocator.builder().build()) {
                Exchange exchange = run(allocator, mode, key, plan, false);
                System.out.print(exchange.summary());
                ok &= exchange.intact() && exchange.afterShutdown().requestedBytes() == 0;
            }
        }
        System.exit(ok ? 0 : 1);
    }

    /**
     * Starts the Spring application and a {@link WebClient} on
     * {@code allocator}, talking as {@code mode} says, posts every body of
     * {@code plan} with {@link #CONCURRENCY} requests at a time, closes the
     * application, and waits for the event loops' threads to end.
     *
     * @param key                 the server's key and certificate, which the client trusts (unused in clear text)
     * @param reactorNettyMetrics whether the server turns on Reactor Netty's meters
     *                            (in Micrometer's global registry)
     * @throws InterruptedException when interrupted while shutting down
     */
    public static Exchange run(SlabwiseAllocator allocator, Mode mode, SelfSignedKey key, BodyPlan plan,
                               boolean reactorNettyMetrics) throws InterruptedException {
        Exchange exchange = new Exchange("Spring WebFlux (Reactor Netty) " + mode.title, allocator, SERVER_CATEGORY,
                CLIENT_CATEGORY);
        RecordedThreads threads = new RecordedThreads();
        EventLoopGroup serverLoops = newLoops(threads, "webflux-server");
        EventLoopGroup clientLoops = newLoops(threads, "webclient");
        ConnectionProvider connections = ConnectionProvider.builder("slabwise-webclient")
                .maxConnections(CONCURRENCY).pendingAcquireMaxCount(-1).build();
        WebFluxServerSide side = new WebFluxServerSide(exchange, serverLoops, reactorNettyMetrics);
        ConfigurableApplicationContext application = null;
        try {
            application = start(side, exchange, serverProperties(mode, key));
            int port = side.port().get(30, TimeUnit.SECONDS);
            HttpClient http = httpClient(exchange.clientAllocator(), clientLoops, connections)
                    // an HTTP/2 stream is a channel of its own, whose allocator is Netty's default: give it ours
                    .doOnRequest((request, connection) -> exchange.adoptClientChannel(connection.channel()))
                    .doOnResponse((response, connection) -> exchange.sawProtocol("client", response.version().text()));
            if (mode.tls) {
                SslContext tls = clientTls(mode, key);
                http = http.protocol(mode.clientProtocol).secure(spec -> spec.sslContext(tls));
            }
            WebClient client = webClient(http, (mode.tls ? "https" : "http") + "://127.0.0.1:" + port);
            exchange.trafficStarts();
            Flux.range(0, plan.bodies())
                    .flatMap(i -> post(client, exchange, plan, i), CONCURRENCY)
                    .onErrorResume(e -> {
                        exchange.fail("client", e);
                        return Mono.empty();
                    })
                    .blockLast(Duration.ofMinutes(3));
        } catch (Exception e) {
            exchange.fail("set-up", e);
        } finally {
            connections.disposeLater().block(Duration.ofSeconds(30));
            if (application != null) {
                application.close();   // stops the server: Reactor Netty's disposeNow
            }
            clientLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            serverLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            threads.awaitEnd(Duration.ofSeconds(30));
        }
        exchange.finish(threads);
        return exchange;
    }

    /**
     * A {@link WebClient} over Reactor Netty on {@code allocator}, in clear
     * text HTTP/1.1: the allocator goes to the {@code HttpClient}, which the
     * connector wraps.
     */
    public static WebClient client(ByteBufAllocator allocator, EventLoopGroup loops, ConnectionProvider connections, int port) {
        return webClient(httpClient(allocator, loops, connections), "http://127.0.0.1:" + port);
    }

    private static HttpClient httpClient(ByteBufAllocator allocator, EventLoopGroup loops, ConnectionProvider connections) {
        return HttpClient.create(connections)
                .runOn(loops)
                .option(ChannelOption.ALLOCATOR, allocator);
    }

    private static WebClient webClient(HttpClient http, String baseUrl) {
        return WebClient.builder()
                .clientConnector(new ReactorClientHttpConnector(http))
                .baseUrl(baseUrl)
                .build();
    }

    /** The client's TLS context for {@code mode}, trusting the server's certificate; built once, before the traffic. */
    private static SslContext clientTls(Mode mode, SelfSignedKey key) throws SSLException {
        return (mode.clientProtocol == HttpProtocol.H2 ? Http2SslContextSpec.forClient() : Http11SslContextSpec.forClient())
                .configure(builder -> builder.trustManager(key.certificate()))
                .sslContext();
    }

    /**
     * Spring Boot's properties for the server in {@code mode}: TLS from an SSL
     * bundle of PEM text (an application gives the files' locations,
     * {@code classpath:...} or {@code file:...}, in the same properties) and,
     * for HTTP/2, {@code server.http2.enabled}, which with TLS makes the
     * server offer h2 and HTTP/1.1 by ALPN.
     */
    private static Map<String, Object> serverProperties(Mode mode, SelfSignedKey key) {
        Map<String, Object> properties = new HashMap<>();
        if (mode.tls) {
            properties.put("server.ssl.bundle", SSL_BUNDLE);
            properties.put("spring.ssl.bundle.pem." + SSL_BUNDLE + ".keystore.certificate", key.certificatePem());
            properties.put("spring.ssl.bundle.pem." + SSL_BUNDLE + ".keystore.private-key", key.privateKeyPem());
        }
        if (mode.clientProtocol == HttpProtocol.H2) {
            properties.put("server.http2.enabled", "true");
        }
        return properties;
    }

    /**
     * Starts the application on loopback, on a free port, with {@code properties}
     * besides; the server's side and the exchange become beans.
     */
    private static ConfigurableApplicationContext start(WebFluxServerSide side, Exchange exchange, Map<String, Object> properties) {
        SpringApplication application = new SpringApplication(EchoApplication.class);
        application.setWebApplicationType(WebApplicationType.REACTIVE);
        Map<String, Object> defaults = new HashMap<>(properties);
        defaults.put("server.address", "127.0.0.1");
        defaults.put("server.port", "0");
        defaults.put("spring.main.banner-mode", "off");
        defaults.put("spring.main.log-startup-info", "false");
        application.setDefaultProperties(defaults);
        application.addInitializers(context -> {
            context.getBeanFactory().registerSingleton("webFluxServerSide", side);
            context.getBeanFactory().registerSingleton("exchange", exchange);
        });
        return application.run();
    }

    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    private static EventLoopGroup newLoops(RecordedThreads threads, String role) {
        return new NioEventLoopGroup(2, threads.factory(role));
    }

    /** Posts body {@code i}; the response must be the same body. */
    private static Mono<Integer> post(WebClient client, Exchange exchange, BodyPlan plan, int i) {
        int size = plan.size(i);
        NettyDataBufferFactory buffers = new NettyDataBufferFactory(exchange.clientAllocator());
        return client.post().uri("/echo")
                .header(CRC_HEADER, Integer.toString(plan.crc(i)))
                .contentLength(size)
                .body(BodyInserters.fromDataBuffers(Mono.fromSupplier(() -> {
                    ByteBuf body = exchange.clientAllocator().directBuffer(size);
                    plan.write(i, body);
                    return buffers.wrap(body);
                })))
                .exchangeToMono(response -> DataBufferUtils.join(response.bodyToFlux(DataBuffer.class)).map(joined -> {
                    try {
                        exchange.clientSent().add(plan.crc(i), size);
                        ByteBuf body = NettyDataBufferFactory.toByteBuf(joined);
                        int crc = BodyPlan.crc(body);
                        exchange.clientReceived().add(crc, body.readableBytes());
                        exchange.clientHolds(body, body.readableBytes());
                        if (response.statusCode().value() != 200 || crc != plan.crc(i) || body.readableBytes() != size) {
                            exchange.fail("client: body " + i + " (" + size + " bytes) came back as " + response.statusCode()
                                    + " with " + body.readableBytes() + " bytes" + (crc != plan.crc(i) ? ", not the same bytes" : ""));
                        }
                        return size;
                    } finally {
                        DataBufferUtils.release(joined);
                    }
                }));
    }

    /**
     * The Spring Boot application: WebFlux auto-configured, Slabwise given to
     * its server by {@link SlabwiseServerConfiguration}, and the echo route.
     * It expects two beans registered before it starts: the
     * {@link WebFluxServerSide} and the {@link Exchange}.
     */
    @SpringBootConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(SlabwiseServerConfiguration.class)
    public static class EchoApplication {

        /** {@code POST /echo}: the request body, joined, checked and sent back. */
        @Bean
        RouterFunction<ServerResponse> echoRoute(Exchange exchange) {
            return RouterFunctions.route(RequestPredicates.POST("/echo"), request -> echo(request, exchange));
        }

        private static Mono<ServerResponse> echo(ServerRequest request, Exchange exchange) {
            String sentCrc = request.headers().firstHeader(CRC_HEADER);
            HttpServerRequest reactorRequest = ServerHttpRequestDecorator.getNativeRequest(request.exchange().getRequest());
            exchange.sawProtocol("server", reactorRequest.version().text());
            return DataBufferUtils.join(request.bodyToFlux(DataBuffer.class)).flatMap(joined -> {
                ByteBuf body = NettyDataBufferFactory.toByteBuf(joined);
                int length = body.readableBytes();
                int crc = BodyPlan.crc(body);
                exchange.serverReceived().add(crc, length);
                exchange.serverHolds(body, length);
                if (!Integer.toString(crc).equals(sentCrc)) {
                    exchange.fail("server: a request body differs from what the client sent");
                }
                exchange.serverSent().add(crc, length); // the echo
                return ServerResponse.ok().contentLength(length).body(BodyInserters.fromDataBuffers(Mono.just(joined)));
            });
        }
    }
}
