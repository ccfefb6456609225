package io.slabwise.examples.metrics;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Scrapes the example server's /metrics over a real socket and checks the Slabwise series. */
class PrometheusMetricsServerTest {

    private static final Pattern SAMPLE = Pattern.compile("^(slabwise_[a-z_]+)\\{([^}]*)} ([0-9.eE+\\-]+|NaN)$",
            Pattern.MULTILINE);

    @Test
    void metricsEndpointServesSaneSlabwiseSeries() throws Exception {
        try (PrometheusMetricsServer server = PrometheusMetricsServer.start(0)) {
            for (int size : new int[] {100, 5000, 70_000}) {
                String payload = get(server.port(), "/payload?size=" + size);
                assertTrue(payload.startsWith("HTTP/1.1 200"), payload.lines().findFirst().orElse(""));
            }
            String response = get(server.port(), "/metrics");
            assertTrue(response.startsWith("HTTP/1.1 200"));
            Map<String, Double> values = new HashMap<>();
            Matcher m = SAMPLE.matcher(response);
            while (m.find()) {
                String labels = m.group(2);
                String key = m.group(1) + (labels.contains("category=\"network\"") ? "{network}" : "")
                        + (labels.contains("state=\"used\"") ? "{used}" : "");
                values.put(key, Double.parseDouble(m.group(3)));
                assertTrue(labels.contains("allocator=\"http\""), labels);
            }
            double requested = values.get("slabwise_memory_requested_bytes");
            double reserved = values.get("slabwise_memory_reserved_bytes");
            double committed = values.get("slabwise_memory_committed_bytes");
            assertTrue(requested >= 0 && requested <= reserved && reserved <= committed,
                    requested + " " + reserved + " " + committed);
            assertTrue(committed > 0, "the payloads made the pool commit chunks");
            assertTrue(values.get("slabwise_category_allocations_buffers_total{network}") >= 3);
            assertTrue(values.containsKey("slabwise_chunks{used}") || values.containsKey("slabwise_chunks_chunks{used}"),
                    values.keySet().toString());
            assertTrue(response.contains("netty_allocator_memory_used"), "Micrometer's stock Netty meters too");
            assertTrue(response.contains("# HELP slabwise_memory_committed_bytes Native memory"), "descriptions");
        }
    }

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
            return all.toString(StandardCharsets.UTF_8);
        }
    }
}
