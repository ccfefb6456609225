package io.slabwise.examples.metrics;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Starts the example server on a free port, sends it traffic, and scrapes
 * {@code /metrics} over a real socket: the Slabwise series are there, tagged,
 * described and consistent, next to Micrometer's stock Netty series.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PrometheusMetricsServerTest {

    private static final int HELD = 100_000;

    /** One sample line: name, labels, value. */
    private static final Pattern SAMPLE = Pattern.compile("^([a-z_]+)\\{([^}]*)} (\\S+)$", Pattern.MULTILINE);
    /** The labels every series of an allocator carries to join Micrometer's Netty series; checked on their own. */
    private static final Pattern JOIN_LABELS = Pattern.compile("(?<![a-z_])(allocator_type|id)=\"[^\"]*\",?");

    @Test
    void metricsEndpointServesSaneSlabwiseSeries() throws Exception {
        try (PrometheusMetricsServer server = PrometheusMetricsServer.start(0)) {
            assertTrue(server.port() > 0);
            for (int size : new int[] {100, 5000, 70_000, 3 << 20}) {
                String payload = get(server.port(), "/payload?size=" + size);
                assertEquals("HTTP/1.1 200 OK", statusLine(payload));
                assertTrue(payload.contains("content-length: " + size), payload.lines().limit(4).toList().toString());
            }
            assertEquals("HTTP/1.1 400 Bad Request", statusLine(get(server.port(), "/payload?size=lots")));
            assertEquals("HTTP/1.1 404 Not Found", statusLine(get(server.port(), "/nothing")));

            // a buffer live across the scrape, so that the figures are not all zero
            ByteBuf held = server.allocator().forCategory(PrometheusMetricsServer.PAYLOAD_CATEGORY).directBuffer(HELD);
            String response;
            try {
                response = get(server.port(), "/metrics");
            } finally {
                held.release();
            }
            assertEquals("HTTP/1.1 200 OK", statusLine(response));
            Map<String, Double> samples = samples(response);
            System.out.println("scraped /metrics (slabwise and netty allocator lines):");
            response.lines().filter(l -> l.matches("(# [A-Z]+ )?(slabwise|netty_allocator_memory)_.*"))
                    .forEach(System.out::println);

            for (Map.Entry<String, Double> e : samples.entrySet()) {
                if (e.getKey().startsWith("slabwise_")) {
                    assertTrue(e.getKey().contains("allocator=\"http\""), e.getKey());
                }
            }
            response.lines().filter(l -> l.startsWith("slabwise_")).forEach(line ->
                    assertTrue(line.contains("allocator_type=\"") && line.contains(",id=\""),
                            "every series carries the labels of Micrometer's Netty series: " + line));
            for (String category : new String[] {"network", "payload"}) {
                for (String series : new String[] {"slabwise_category_requested_bytes", "slabwise_category_reserved_bytes",
                        "slabwise_category_buffers", "slabwise_category_allocations_buffers_total"}) {
                    sample(samples, series + "{allocator=\"http\",category=\"" + category + "\"}");
                }
            }
            double requested = sample(samples, "slabwise_memory_requested_bytes{allocator=\"http\"}");
            double reserved = sample(samples, "slabwise_memory_reserved_bytes{allocator=\"http\"}");
            double committed = sample(samples, "slabwise_memory_committed_bytes{allocator=\"http\"}");
            assertTrue(0 <= requested && requested <= reserved && reserved <= committed,
                    requested + " <= " + reserved + " <= " + committed);
            assertTrue(requested >= HELD, "the held buffer is live: " + requested);
            assertTrue(committed >= 3 << 20, "the payloads made the pool commit memory: " + committed);
            assertEquals(HELD, sample(samples,
                    "slabwise_category_requested_bytes{allocator=\"http\",category=\"payload\"}"));
            assertEquals(1, sample(samples, "slabwise_category_buffers{allocator=\"http\",category=\"payload\"}"));
            assertTrue(sample(samples, "slabwise_category_reserved_bytes{allocator=\"http\",category=\"payload\"}")
                    >= HELD);
            assertTrue(sample(samples,
                    "slabwise_category_allocations_buffers_total{allocator=\"http\",category=\"payload\"}") >= 4,
                    "every payload was allocated in its category");
            assertTrue(sample(samples,
                    "slabwise_category_allocations_buffers_total{allocator=\"http\",category=\"network\"}") >= 1,
                    "the channels' own buffers are in the default category");
            assertTrue(sample(samples, "slabwise_chunks{allocator=\"http\",state=\"used\"}") >= 0);
            double internal = sample(samples, "slabwise_fragmentation_internal_ratio{allocator=\"http\"}");
            assertTrue(internal >= 0 && internal < 1, "internal fragmentation is a ratio: " + internal);

            double nettyDirect = samples.entrySet().stream()
                    .filter(e -> e.getKey().startsWith("netty_allocator_memory_used{")
                            && e.getKey().contains("memory_type=\"direct\""))
                    .mapToDouble(Map.Entry::getValue).findFirst().orElse(Double.NaN);
            assertEquals(committed, nettyDirect, "Micrometer's stock Netty meter reads the same allocator's committed bytes");

            assertTrue(response.contains("# HELP slabwise_memory_committed_bytes Native memory"), "descriptions");
            assertTrue(response.contains("# TYPE slabwise_category_allocations_buffers_total counter"), "a counter");
        }
    }

    /**
     * Every labelled sample of a scrape, keyed by {@code name{labels}} without
     * the {@code allocator_type} and {@code id} labels (their values differ from
     * run to run).
     */
    private static Map<String, Double> samples(String scrape) {
        Map<String, Double> samples = new TreeMap<>();
        Matcher m = SAMPLE.matcher(scrape);
        while (m.find()) {
            String labels = JOIN_LABELS.matcher(m.group(2)).replaceAll("").replaceAll(",$", "");
            samples.put(m.group(1) + "{" + labels + "}", Double.parseDouble(m.group(3)));
        }
        return samples;
    }

    private static double sample(Map<String, Double> samples, String series) {
        Double value = samples.get(series);
        assertNotNull(value, series + " in " + samples.keySet());
        return value;
    }

    /** The server made its allocator, so closing the server closes it: its memory goes back, not at exit. */
    @Test
    void closeClosesTheAllocatorItMade() throws Exception {
        PrometheusMetricsServer server = PrometheusMetricsServer.start(0);
        server.allocator().forCategory(PrometheusMetricsServer.PAYLOAD_CATEGORY).directBuffer(HELD).release();
        server.close();
        assertTrue(server.allocator().pool().isClosed(), "the server's allocator is still open after close()");
    }

    private static String statusLine(String response) {
        return response.lines().findFirst().orElse("");
    }

    /** One HTTP/1.1 GET over a plain socket to 127.0.0.1; the whole response, headers included. */
    private static String get(int port, String path) throws Exception {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            in.transferTo(all);
            return all.toString(StandardCharsets.ISO_8859_1);
        }
    }
}
