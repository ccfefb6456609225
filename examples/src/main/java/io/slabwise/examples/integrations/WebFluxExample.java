package io.slabwise.examples.integrations;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
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
import org.springframework.web.reactive.function.BodyInserters;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.server.RequestPredicates;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;

import java.time.Duration;
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
 * over a pool of {@value #CONCURRENCY} HTTP/1.1 connections and joins each
 * response the same way. Both sides tally what they send and receive in an
 * {@link Exchange} and check that each whole body they hold lies in their
 * category ({@value #SERVER_CATEGORY} and {@value #CLIENT_CATEGORY}).
 *
 * <p>Spring Boot 3.5 (Netty 4.1) and 4.0 (Netty 4.2) alike: the build picks
 * the {@code SlabwiseServerConfiguration} of the Spring Boot in use.
 *
 * <p>Run with {@code mvn -q -B install -DskipTests && mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.integrations.WebFluxExample}. It
 * moves 64 MiB each way and exits with status 1 if anything went wrong.
 */
public final class WebFluxExample {

    /** The server's category. */
    public static final String SERVER_CATEGORY = "webflux_server";
    /** The client's category. */
    public static final String CLIENT_CATEGORY = "webclient";
    /** Concurrent requests: HTTP/1.1 connections. */
    public static final int CONCURRENCY = 8;

    private static final String CRC_HEADER = "x-body-crc32c";

    private WebFluxExample() {
    }

    /** Runs the application and the client on loopback and prints what moved. */
    public static void main(String[] args) throws Exception {
        BodyPlan plan = BodyPlan.standard(42);
        boolean ok;
        try (SlabwiseAllocator allocator = SlabwiseAllocator.builder().build()) {
            Exchange exchange = run(allocator, plan, false);
            System.out.print(exchange.summary());
            ok = exchange.intact() && exchange.afterShutdown().requestedBytes() == 0;
        }
        System.exit(ok ? 0 : 1);
    }

    /**
     * Starts the Spring application and a {@link WebClient} on
     * {@code allocator}, posts every body of {@code plan} with
     * {@link #CONCURRENCY} requests at a time, closes the application, and
     * waits for the event loops' threads to end.
     *
     * @param reactorNettyMetrics whether the server turns on Reactor Netty's meters
     *                            (in Micrometer's global registry)
     * @throws InterruptedException when interrupted while shutting down
     */
    public static Exchange run(SlabwiseAllocator allocator, BodyPlan plan, boolean reactorNettyMetrics) throws InterruptedException {
        Exchange exchange = new Exchange("Spring WebFlux (Reactor Netty) HTTP/1.1", allocator, SERVER_CATEGORY, CLIENT_CATEGORY);
        RecordedThreads threads = new RecordedThreads();
        EventLoopGroup serverLoops = newLoops(threads, "webflux-server");
        EventLoopGroup clientLoops = newLoops(threads, "webclient");
        ConnectionProvider connections = ConnectionProvider.builder("slabwise-webclient")
                .maxConnections(CONCURRENCY).pendingAcquireMaxCount(-1).build();
        WebFluxServerSide side = new WebFluxServerSide(exchange.serverAllocator(), serverLoops, reactorNettyMetrics);
        ConfigurableApplicationContext application = null;
        try {
            application = start(side, exchange);
            int port = side.port().get(30, TimeUnit.SECONDS);
            WebClient client = client(exchange.clientAllocator(), clientLoops, connections, port);
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
     * A {@link WebClient} over Reactor Netty on {@code allocator}: the
     * allocator goes to the {@code HttpClient}, which the connector wraps.
     */
    public static WebClient client(ByteBufAllocator allocator, EventLoopGroup loops, ConnectionProvider connections, int port) {
        HttpClient http = HttpClient.create(connections)
                .runOn(loops)
                .option(ChannelOption.ALLOCATOR, allocator);
        return WebClient.builder()
                .clientConnector(new ReactorClientHttpConnector(http))
                .baseUrl("http://127.0.0.1:" + port)
                .build();
    }

    /** Starts the application on loopback, on a free port; the server's side and the exchange become beans. */
    private static ConfigurableApplicationContext start(WebFluxServerSide side, Exchange exchange) {
        SpringApplication application = new SpringApplication(EchoApplication.class);
        application.setWebApplicationType(WebApplicationType.REACTIVE);
        application.setDefaultProperties(Map.of(
                "server.address", "127.0.0.1",
                "server.port", "0",
                "spring.main.banner-mode", "off",
                "spring.main.log-startup-info", "false"));
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
