package io.slabwise.examples.integrations;

import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.handler.ssl.SslContext;
import io.slabwise.metrics.SlabwiseMetrics;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reactor Netty's HTTP server and client on one {@link SlabwiseAllocator}
 * (a category each), over TLS with the framework's default TLS provider:
 * 64 MiB each way in bodies of 1 B to 5 MiB, eight at a time, echoed. See
 * {@link FrameworkTrafficTest} for what is checked.
 */
@Timeout(180)
class ReactorNettyHttpTest extends FrameworkTrafficTest {

    private static SelfSignedKey key;

    @BeforeAll
    static void generateKey() throws Exception {
        key = SelfSignedKey.generate();
    }

    /**
     * HTTP/1.1 over eight connections, or HTTP/2 with eight streams on one
     * connection; on HTTP/2 every stream's channel had to be given the
     * allocator, on HTTP/1.1 none.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = HttpProtocol.class, names = {"HTTP11", "H2"})
    void everyBodyEchoedThroughSlabwiseAndEverythingGivenBack(HttpProtocol protocol) throws Exception {
        BodyPlan plan = BodyPlan.standard(protocol.ordinal() + 7);
        Exchange exchange = ReactorNettyHttpExample.run(SlabwiseAllocator.builder().build(), protocol,
                SslContext.defaultServerProvider(), key, plan);
        assertServedIntactAndReturned(exchange, plan);
        if (protocol == HttpProtocol.H2) {
            // each request's stream came with Netty's default allocator, not the connection's (see docs/integrations.md)
            assertTrue(exchange.serverChannelsAdopted() >= plan.bodies(), exchange::summary);
            assertTrue(exchange.clientChannelsAdopted() >= plan.bodies(), exchange::summary);
        } else {
            assertEquals(0, exchange.serverChannelsAdopted() + exchange.clientChannelsAdopted(), exchange::summary);
        }
    }

    /**
     * Reactor Netty's allocator meters ({@code reactor.netty.bytebuf.allocator.*})
     * are made only for Netty's own allocators: with Slabwise on the channels
     * they say nothing, while its HTTP meters and Slabwise's own binder, in
     * the same registry, show the traffic.
     */
    @Test
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    void reactorNettysAllocatorMetersSayNothingOfSlabwiseWhileItsOwnMetersDo() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Metrics.addRegistry(registry);
        EventLoopGroup loops = new NioEventLoopGroup(1);
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().build();
        DisposableServer server = null;
        try {
            SlabwiseMetrics.forAllocator(allocator, allocator.pool(), "http").bindTo(registry);
            server = HttpServer.create().host("127.0.0.1").port(0).runOn(loops)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .childOption(ChannelOption.ALLOCATOR, allocator)
                    .metrics(true, uri -> "/")
                    .handle((request, response) -> response.sendString(Mono.just("served")))
                    .bindNow(Duration.ofSeconds(30));
            String body = HttpClient.newConnection().runOn(loops)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .get().uri("http://127.0.0.1:" + server.port() + "/")
                    .responseContent().aggregate().asString().block(Duration.ofSeconds(30));
            assertEquals("served", body);

            List<String> names = registry.getMeters().stream().map(meter -> meter.getId().getName()).distinct().sorted().toList();
            assertTrue(names.stream().anyMatch(name -> name.startsWith("reactor.netty.http.server.")), names::toString);
            assertTrue(names.stream().noneMatch(name -> name.startsWith("reactor.netty.bytebuf.allocator.")), names::toString);
            double allocations = registry.get("slabwise.category.allocations").tag("category", "network").functionCounter().count();
            assertTrue(allocations > 0, names::toString);
        } finally {
            if (server != null) {
                server.disposeNow(Duration.ofSeconds(30));
            }
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            Metrics.removeRegistry(registry);
            registry.close();
            allocator.close();
        }
    }
}
