package io.slabwise.examples.integrations;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import reactor.netty.http.server.HttpServer;

import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * What {@link WebFluxExample} hands to the Spring application it starts, for
 * its {@code NettyServerCustomizer} (in {@code SlabwiseServerConfiguration},
 * one per Spring Boot major version) to put on the Reactor Netty server
 * Spring Boot builds: the allocator, what to do with a channel that came with
 * another (an HTTP/2 stream's), the event loops the server runs on, and
 * whether Reactor Netty's own meters are on. It also learns the port the
 * server bound to.
 *
 * <p>The event loops are the example's own, made by a {@link RecordedThreads},
 * so that after the application has closed the example can wait until every
 * thread that held a thread cache of the pool has ended; an application that
 * keeps Spring Boot's event loops needs only the allocator lines.
 */
public final class WebFluxServerSide {

    private final ByteBufAllocator allocator;
    private final Consumer<Channel> adopt;
    private final EventLoopGroup loops;
    private final boolean reactorNettyMetrics;
    private final CompletableFuture<Integer> port = new CompletableFuture<>();

    /**
     * @param allocator           the allocator of the server's channels
     * @param loops               the event loops the server runs on
     * @param reactorNettyMetrics whether to turn on Reactor Netty's meters ({@code HttpServer.metrics})
     */
    public WebFluxServerSide(ByteBufAllocator allocator, EventLoopGroup loops, boolean reactorNettyMetrics) {
        this(allocator, channel -> channel.config().setAllocator(allocator), loops, reactorNettyMetrics);
    }

    /**
     * The server side of {@code exchange}: its server view, and channels that
     * came with another allocator given it and counted by the exchange.
     */
    public WebFluxServerSide(Exchange exchange, EventLoopGroup loops, boolean reactorNettyMetrics) {
        this(exchange.serverAllocator(), exchange::adoptServerChannel, loops, reactorNettyMetrics);
    }

    private WebFluxServerSide(ByteBufAllocator allocator, Consumer<Channel> adopt, EventLoopGroup loops,
                              boolean reactorNettyMetrics) {
        this.allocator = allocator;
        this.adopt = adopt;
        this.loops = loops;
        this.reactorNettyMetrics = reactorNettyMetrics;
    }

    /** The allocator to give the listening channel and each accepted connection. */
    public ByteBufAllocator allocator() {
        return allocator;
    }

    /**
     * Gives {@code channel} the allocator if it came with another: an HTTP/2
     * stream's channel starts on Netty's default allocator, not its
     * connection's. A connection's channel already has it.
     */
    public void adopt(Channel channel) {
        adopt.accept(channel);
    }

    /**
     * The rest of the example's set-up, after the allocator lines: its
     * event loops, the port once bound and, when asked, Reactor Netty's meters.
     */
    public HttpServer configure(HttpServer server) {
        HttpServer configured = server.runOn(loops).doOnBound(bound -> port.complete(bound.port()));
        return reactorNettyMetrics ? configured.metrics(true, uri -> "/echo") : configured;
    }

    /** The port the server bound to; completes when it has. */
    public CompletableFuture<Integer> port() {
        return port;
    }
}
