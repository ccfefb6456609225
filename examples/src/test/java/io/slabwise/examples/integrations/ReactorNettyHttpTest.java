package io.slabwise.examples.integrations;

import io.netty.handler.ssl.SslContext;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.netty.http.HttpProtocol;

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
}
