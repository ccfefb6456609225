package io.slabwise.examples.integrations;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.util.Version;
import io.slabwise.examples.integrations.WebFluxExample.Mode;
import io.slabwise.metrics.SlabwiseMetrics;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.boot.SpringBootVersion;
import reactor.netty.http.server.HttpServer;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Spring WebFlux on Spring Boot's Reactor Netty server and a {@code WebClient},
 * on one {@link SlabwiseAllocator} (a category each): 64 MiB each way in
 * bodies of 1 B to 5 MiB, eight at a time, echoed, in each {@link Mode}:
 * HTTP/1.1 in clear text over eight connections, HTTP/1.1 over TLS over
 * eight connections, and HTTP/2 over TLS with eight streams, the server set
 * up by Spring Boot's {@code server.ssl.bundle} and {@code server.http2.enabled}
 * with a key and certificate made for the test. See {@link FrameworkTrafficTest}
 * for what is checked. The server runs with Reactor Netty's meters on, in
 * Micrometer's global registry beside Slabwise's own: Reactor Netty's
 * allocator meters say nothing of Slabwise.
 */
@Timeout(180)
class WebFluxTest extends FrameworkTrafficTest {

    private static SelfSignedKey key;

    @BeforeAll
    static void generateKey() throws Exception {
        System.out.println("Spring Boot " + SpringBootVersion.getVersion() + ", Reactor Netty "
                + HttpServer.class.getPackage().getImplementationVersion() + ", Netty "
                + Version.identify().get("netty-buffer").artifactVersion());
        key = SelfSignedKey.generate();
    }

    /**
     * Each mode moves the same checks; besides, each request and response
     * came in the mode's protocol version, as the server's Reactor Netty
     * request and the client's response tell, and on HTTP/2 every stream's
     * channel had to be given the allocator (by the customizer on the server,
     * by {@code doOnRequest} on the client), on HTTP/1.1 none.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Mode.class)
    void everyBodyEchoedThroughSlabwiseAndEverythingGivenBack(Mode mode) throws Exception {
        BodyPlan plan = BodyPlan.standard(31 + mode.ordinal());
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().build();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Metrics.addRegistry(registry);
        Exchange exchange;
        try {
            exchange = WebFluxExample.run(allocator, mode, key, plan, true);
            // bound once the run has made its categories: a binder has a meter per category it finds
            SlabwiseMetrics.forAllocator(allocator, allocator.pool(), "webflux").bindTo(registry);

            List<String> reactorAllocatorMeters = names(registry, "reactor.netty.bytebuf.allocator.");
            List<String> reactorHttpMeters = names(registry, "reactor.netty.http.server.");
            double serverAllocations = registry.get("slabwise.category.allocations")
                    .tag("category", WebFluxExample.SERVER_CATEGORY).functionCounter().count();
            System.out.println("Reactor Netty's allocator meters: " + reactorAllocatorMeters);
            System.out.println("Reactor Netty's HTTP server meters: " + reactorHttpMeters);
            System.out.println("slabwise.category.allocations{category=" + WebFluxExample.SERVER_CATEGORY + "}: " + serverAllocations);
            assertTrue(reactorAllocatorMeters.isEmpty(), reactorAllocatorMeters::toString);
            assertTrue(!reactorHttpMeters.isEmpty(), "Reactor Netty's meters were on");
            assertTrue(serverAllocations >= plan.bodies(), () -> "server allocations " + serverAllocations);
        } finally {
            Metrics.removeRegistry(registry);
            registry.close();
        }
        assertServedIntactAndReturned(exchange, plan);

        long bodies = plan.bodies();
        assertEquals(Map.of("client " + mode.version(), bodies, "server " + mode.version(), bodies), exchange.protocolsSeen(),
                exchange::summary);
        if (mode == Mode.H2_TLS) {
            // each request's stream came with Netty's default allocator, not the connection's (see docs/integrations.md)
            assertTrue(exchange.serverChannelsAdopted() >= bodies, exchange::summary);
            assertTrue(exchange.clientChannelsAdopted() >= bodies, exchange::summary);
        } else {
            assertEquals(0, exchange.serverChannelsAdopted() + exchange.clientChannelsAdopted(), exchange::summary);
        }
    }

    private static List<String> names(SimpleMeterRegistry registry, String prefix) {
        return registry.getMeters().stream().map(Meter::getId).map(Meter.Id::getName)
                .filter(name -> name.startsWith(prefix)).distinct().sorted().toList();
    }
}
