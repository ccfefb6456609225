package io.slabwise.examples.integrations;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.util.Version;
import io.slabwise.metrics.SlabwiseMetrics;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootVersion;
import reactor.netty.http.server.HttpServer;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Spring WebFlux on Spring Boot's Reactor Netty server and a {@code WebClient},
 * on one {@link SlabwiseAllocator} (a category each): 64 MiB each way in
 * bodies of 1 B to 5 MiB over eight HTTP/1.1 connections, echoed. See
 * {@link FrameworkTrafficTest} for what is checked. The server runs with
 * Reactor Netty's meters on, in Micrometer's global registry beside
 * Slabwise's own: Reactor Netty's allocator meters say nothing of Slabwise.
 */
@Timeout(180)
class WebFluxTest extends FrameworkTrafficTest {

    @Test
    void everyBodyEchoedThroughSlabwiseAndEverythingGivenBack() throws Exception {
        System.out.println("Spring Boot " + SpringBootVersion.getVersion() + ", Reactor Netty "
                + HttpServer.class.getPackage().getImplementationVersion() + ", Netty "
                + Version.identify().get("netty-buffer").artifactVersion());
        BodyPlan plan = BodyPlan.standard(31);
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().build();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Metrics.addRegistry(registry);
        Exchange exchange;
        try {
            exchange = WebFluxExample.run(allocator, plan, true);
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
    }

    private static List<String> names(SimpleMeterRegistry registry, String prefix) {
        return registry.getMeters().stream().map(Meter::getId).map(Meter.Id::getName)
                .filter(name -> name.startsWith(prefix)).distinct().sorted().toList();
    }
}
