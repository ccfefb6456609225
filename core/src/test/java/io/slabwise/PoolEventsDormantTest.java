package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * With no flight recorder in the JVM, a pool's life (chunks committed and
 * given back, huge regions, a trim, a refusal at the ceiling) loads none of
 * its event classes and does not start the recorder's machinery, which would
 * cost the thread that commits the first chunk some 100 ms. Runs
 * {@link Workload} in a JVM of its own that logs every class it loads.
 */
@Timeout(120)
class PoolEventsDormantTest {

    @Test
    void noEventClassIsLoadedWithoutARecorder() throws Exception {
        String javaBinary = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(List.of(javaBinary, "-Xmx64m", "-Xlog:class+load=info",
                "-cp", System.getProperty("java.class.path"), Workload.class.getName()));
        builder.redirectErrorStream(true);
        Process process = builder.start();
        String output;
        try (InputStream in = process.getInputStream()) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            in.transferTo(bytes);
            output = bytes.toString(StandardCharsets.UTF_8);
        }
        assertTrue(process.waitFor(100, TimeUnit.SECONDS), "the forked JVM did not finish");
        assertEquals(0, process.exitValue(), output);
        assertTrue(output.contains("workload done"), "the workload ran: " + tail(output));
        assertTrue(output.contains("io.slabwise.CommittedMemory "), "the class log is there: " + tail(output));
        assertFalse(output.contains("io.slabwise.PoolEvents$"), "an event class was loaded");
        assertFalse(output.contains("jdk.jfr.internal."), "the flight recorder's machinery was started");
    }

    private static String tail(String output) {
        return output.substring(Math.max(0, output.length() - 2000));
    }

    /** A pool's whole life on the slow paths that emit events. */
    public static final class Workload {
        private Workload() {
        }

        /**
         * Commits chunks and a huge region, gives them back, trims, and is
         * refused at a small ceiling.
         *
         * @param args unused
         */
        public static void main(String[] args) {
            PoolConfig config = PoolConfig.builder().chunkSize(1 << 20).maxMemory(4L << 20).minIdleChunks(0)
                    .limitPolicy(LimitPolicy.RETURN_NULL).build();
            try (MemoryPool pool = new MemoryPool(config)) {
                Allocation small = new Allocation();
                Allocation huge = new Allocation();
                Allocation refused = new Allocation();
                if (!pool.allocate(1024, small) || !pool.allocate(2 << 20, huge)) {
                    throw new AssertionError("the pool refused below its ceiling");
                }
                if (pool.allocate(3 << 20, refused)) {
                    throw new AssertionError("the pool went past its ceiling");
                }
                pool.free(huge);
                pool.free(small);
                pool.trim();
            }
            System.out.println("workload done");
        }
    }
}
