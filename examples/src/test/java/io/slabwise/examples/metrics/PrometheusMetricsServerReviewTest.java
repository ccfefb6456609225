package io.slabwise.examples.metrics;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Review findings on the metrics server's lifecycle. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PrometheusMetricsServerReviewTest {

    /** The server made its allocator, so closing the server closes it: its memory goes back, not at exit. */
    @Test
    void closeClosesTheAllocatorItMade() throws Exception {
        PrometheusMetricsServer server = PrometheusMetricsServer.start(0);
        server.allocator().forCategory(PrometheusMetricsServer.PAYLOAD_CATEGORY).directBuffer(100_000).release();
        server.close();
        assertTrue(server.allocator().pool().isClosed(), "the server's allocator is still open after close()");
    }
}
