package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

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
        // the native heap trim (glibc without MALLOC_ variables) goes through the platform MBean server, whose
        // diagnostic command bean loads JFR's command and management classes without starting the recorder;
        // NativeHeapTrimTest checks that the recorder stays off
        String output = ForkedJvm.run(List.of("-Xmx64m", "-Xlog:class+load=info", "-Dslabwise.noNativeHeapTrim=true"),
                false, Workload.class);
        assertTrue(output.contains("workload done"), "the workload ran: " + ForkedJvm.tail(output));
        assertTrue(output.contains("io.slabwise.CommittedMemory "), "the class log is there: " + ForkedJvm.tail(output));
        assertFalse(output.contains("io.slabwise.PoolEvents$"), "an event class was loaded");
        assertFalse(output.contains("jdk.jfr.internal."), "the flight recorder's machinery was started");
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
