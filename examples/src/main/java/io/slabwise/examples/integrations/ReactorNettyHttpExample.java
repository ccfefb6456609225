package io.slabwise.examples.integrations;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslProvider;
import io.slabwise.netty.SlabwiseAllocator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.Http2SslContextSpec;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.tcp.SslProvider.ProtocolSslContextSpec;

import javax.net.ssl.SSLException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Reactor Netty's HTTP server and client on Slabwise, over TLS, with HTTP/1.1
 * or HTTP/2: the allocator goes to the server with
 * {@code .option(ChannelOption.ALLOCATOR, a).childOption(ChannelOption.ALLOCATOR, a)}
 * and to the client with {@code .option(ChannelOption.ALLOCATOR, a)}.
 *
 * <p>The client posts every body of a {@link BodyPlan} to the server over a
 * pool of connections (HTTP/1.1) or concurrent streams of one connection
 * (HTTP/2); the server aggregates each request body and sends it back as the
 * response. Both sides tally what they send and receive in an
 * {@link Exchange}, and check that each whole body they hold lies in their
 * category ({@value #SERVER_CATEGORY} and {@value #CLIENT_CATEGORY}).
 *
 * <p>Run with {@code mvn -q -B install -DskipTests && mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.integrations.ReactorNettyHttpExample}.
 * It runs HTTP/1.1 and then HTTP/2, 64 MiB each way, and exits with status 1
 * if anything went wrong.
 */
public final class ReactorNettyHttpExample {

    /** The server's category. */
    public static final String SERVER_CATEGORY = "http_server";
    /** The client's category. */
    public static final String CLIENT_CATEGORY = "http_client";
    /** Concurrent requests: HTTP/1.1 connections, or HTTP/2 streams. */
    public static final int CONCURRENCY = 8;

    private static final String CRC_HEADER = "x-body-crc32c";

    private ReactorNettyHttpExample() {
    }

    /** Runs HTTP/1.1 and HTTP/2 over TLS with the framework's default TLS provider, and prints what moved. */
    public static void main(String[] args) throws Exception {
        SelfSignedKey key = SelfSignedKey.generate();
        BodyPlan plan = BodyPlan.standard(42);
        boolean ok = true;
        for (HttpProtocol protocol : new HttpProtocol[] {HttpProtocol.HTTP11, HttpProtocol.H2}) {
            try (SlabwiseAllocator allocator = SlabwiseAllocator.builder().build()) {
                Exchange exchange = run(allocator, protocol, SslContext.defaultServerProvider(), key, plan);
                System.out.print(exchange.summary());
                ok &= exchange.intact() && exchange.afterShutdown().requestedBytes() == 0;
            }
        }
        System.exit(ok ? 0 : 1);
    }

    /**
     * Starts a server and a client on {@code allocator}, posts every body of
     * {@code plan} with {@link #CONCURRENCY} requests at a time, shuts both
     * down and waits for their threads to end.
     *
     * @param protocol {@link HttpProtocol#HTTP11} or {@link HttpProtocol#H2}
     * @param tls      the TLS implementation of both sides
     * @throws SSLException when a TLS context cannot be built
     * @throws InterruptedException when interrupted while shutting down
     */
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    public static Exchange run(SlabwiseAllocator allocator, HttpProtocol protocol, SslProvider tls, SelfSignedKey key,
                               BodyPlan plan) throws SSLException, InterruptedException {
        Exchange exchange = new Exchange("Reactor Netty " + protocol + " over TLS (" + tls + ")", allocator,
                SERVER_CATEGORY, CLIENT_CATEGORY);
        RecordedThreads threads = new RecordedThreads();
        EventLoopGroup serverLoops = new NioEventLoopGroup(2, threads.factory("http-server"));
        EventLoopGroup clientLoops = new NioEventLoopGroup(2, threads.factory("http-client"));
        ConnectionProvider connections = ConnectionProvider.builder("slabwise-example")
                .maxConnections(CONCURRENCY).pendingAcquireMaxCount(-1).build();
        DisposableServer server = null;
        try {
            SslContext serverTls = serverTls(protocol, tls, key).sslContext();
            SslContext clientTls = clientTls(protocol, tls, key).sslContext();
            server = HttpServer.create()
                    .host("127.0.0.1").port(0)
                    .runOn(serverLoops)
                    .option(ChannelOption.ALLOCATOR, exchange.serverAllocator())
                    .childOption(ChannelOption.ALLOCATOR, exchange.serverAllocator())
                    // an HTTP/2 stream is a channel of its own, whose allocator is Netty's default: give it ours
                    .doOnConnection(connection -> exchange.adoptServerChannel(connection.channel()))
                    .protocol(protocol)
                    .secure(spec -> spec.sslContext(serverTls))
                    .handle((request, response) -> {
                        response.header(HttpHeaderNames.CONTENT_LENGTH, request.requestHeaders().get(HttpHeaderNames.CONTENT_LENGTH));
                        return response.send(request.receive().aggregate().retain().map(body -> {
                            int crc = BodyPlan.crc(body);
                            exchange.serverReceived().add(crc, body.readableBytes());
                            exchange.serverHolds(body, body.readableBytes());
                            if (!Integer.toString(crc).equals(request.requestHeaders().get(CRC_HEADER))) {
                                exchange.fail("server: a request body differs from what the client sent");
                            }
                            exchange.serverSent().add(crc, body.readableBytes()); // the echo
                            return body;
                        }));
                    })
                    .bindNow(Duration.ofSeconds(30));

            HttpClient client = HttpClient.create(connections)
                    .runOn(clientLoops)
                    .option(ChannelOption.ALLOCATOR, exchange.clientAllocator())
                    .doOnRequest((request, connection) -> exchange.adoptClientChannel(connection.channel()))
                    .protocol(protocol)
                    .secure(spec -> spec.sslContext(clientTls))
                    .baseUrl("https://127.0.0.1:" + server.port());
            exchange.trafficStarts();
            Flux.range(0, plan.bodies())
                    .flatMap(i -> post(client, exchange, plan, i), CONCURRENCY)
                    .onErrorResume(e -> {
                        exchange.fail("client", e);
                        return Mono.empty();
                    })
                    .blockLast(Duration.ofMinutes(3));
        } finally {
            connections.disposeLater().block(Duration.ofSeconds(30));
            if (server != null) {
                server.disposeNow(Duration.ofSeconds(30));
            }
            clientLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            serverLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            threads.awaitEnd(Duration.ofSeconds(30));
        }
        exchange.finish(threads);
        return exchange;
    }

    /** Posts body {@code i}; the response must be the same body. */
    private static Mono<Integer> post(HttpClient client, Exchange exchange, BodyPlan plan, int i) {
        int size = plan.size(i);
        return client
                .headers(headers -> headers.set(HttpHeaderNames.CONTENT_LENGTH, size).set(CRC_HEADER, plan.crc(i)))
                .post().uri("/echo")
                .send(Mono.fromSupplier(() -> {
                    ByteBuf body = exchange.clientAllocator().directBuffer(size);
                    plan.write(i, body);
                    return body;
                }))
                .responseSingle((response, content) -> content.map(body -> {
                    exchange.clientSent().add(plan.crc(i), size);
                    int crc = BodyPlan.crc(body);
                    exchange.clientReceived().add(crc, body.readableBytes());
                    exchange.clientHolds(body, body.readableBytes());
                    if (response.status().code() != 200 || crc != plan.crc(i) || body.readableBytes() != size) {
                        exchange.fail("client: body " + i + " (" + size + " bytes) came back as " + response.status() + " with "
                                + body.readableBytes() + " bytes" + (crc != plan.crc(i) ? ", not the same bytes" : ""));
                    }
                    return size;
                }));
    }

    private static ProtocolSslContextSpec serverTls(HttpProtocol protocol, SslProvider tls, SelfSignedKey key) {
        ProtocolSslContextSpec spec = protocol == HttpProtocol.H2
                ? Http2SslContextSpec.forServer(key.privateKey(), key.certificate())
                : Http11SslContextSpec.forServer(key.privateKey(), key.certificate());
        return spec.configure(builder -> builder.sslProvider(tls));
    }

    private static ProtocolSslContextSpec clientTls(HttpProtocol protocol, SslProvider tls, SelfSignedKey key) {
        ProtocolSslContextSpec spec = protocol == HttpProtocol.H2 ? Http2SslContextSpec.forClient() : Http11SslContextSpec.forClient();
        return spec.configure(builder -> builder.sslProvider(tls).trustManager(key.certificate()));
    }
}
