package io.slabwise.benchmarks.soak;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.management.JMException;
import javax.management.ObjectName;

/**
 * How much of the process's resident memory is not the JVM's own: the
 * resident set ({@code VmRSS} of {@code /proc/self/status}) less what the JVM
 * says it uses for itself. The soak compares that with the pool's committed
 * bytes: memory the pool gave back but the process kept (malloc's arenas), or
 * chunks the pool lost count of, show as the difference growing.
 *
 * <pre>
 *  with -XX:NativeMemoryTracking=summary:
 *     JVM's own = NMT total committed - NMT "Other"      ("Other" is what Unsafe.allocateMemory took: direct
 *                                                         buffers, the pool's chunks on the direct source)
 *  without it:
 *     JVM's own = heap committed + non-heap pools committed + a baseline measured before the pool existed
 * </pre>
 *
 * <p>Both over-count the JVM's own share (committed memory that was never
 * touched is not resident), so the figure left for the pool is an upper
 * bound: a check that it stays within committed + a margin is conservative
 * in the pool's favour only by memory the JVM committed and never touched,
 * and catches any growth of native memory the pool does not account for.
 */
final class NativeMemory {

    private static final Path STATUS = Path.of("/proc/self/status");
    private static final Pattern TOTAL = Pattern.compile("Total: reserved=(\\d+)KB, committed=(\\d+)KB");
    private static final Pattern OTHER = Pattern.compile("-\\s+Other \\(reserved=(\\d+)KB, committed=(\\d+)KB");

    private final boolean tracking;
    private final long baseline;

    private NativeMemory(boolean tracking, long baseline) {
        this.tracking = tracking;
        this.baseline = baseline;
    }

    /**
     * Chooses the method: native memory tracking where the JVM runs with it,
     * else a baseline measured now (call it before the pool takes memory).
     */
    static NativeMemory start() {
        boolean tracking = ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .anyMatch(a -> a.startsWith("-XX:NativeMemoryTracking=") && !a.endsWith("=off"));
        if (tracking) {
            return new NativeMemory(true, 0);
        }
        long rss = residentBytes();
        return new NativeMemory(false, rss < 0 ? 0 : Math.max(0, rss - heapAndNonHeapCommitted()));
    }

    /** How the JVM's own share is found, for the header of the output. */
    String method() {
        return tracking ? "native memory tracking (NMT total committed less NMT Other)"
                : "heap + non-heap committed + a baseline of " + (baseline >> 20) + " MiB (run with"
                        + " -XX:NativeMemoryTracking=summary for a closer figure)";
    }

    /** The process's resident bytes, or -1 where {@code /proc/self/status} cannot be read. */
    static long residentBytes() {
        try {
            for (String line : Files.readAllLines(STATUS, StandardCharsets.US_ASCII)) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.substring("VmRSS:".length()).trim().split("\\s+")[0]) * 1024;
                }
            }
            return -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * The JVM's own native and heap memory, as this method finds it.
     *
     * @throws IllegalStateException when native memory tracking is on but its summary cannot be read
     */
    long jvmOwnBytes() {
        if (!tracking) {
            return heapAndNonHeapCommitted() + baseline;
        }
        String summary = summary();
        Matcher total = TOTAL.matcher(summary);
        Matcher other = OTHER.matcher(summary);
        if (!total.find()) {
            throw new IllegalStateException("no total in the native memory summary: "
                    + summary.substring(0, Math.min(400, summary.length())));
        }
        long otherKb = other.find() ? Long.parseLong(other.group(2)) : 0;
        return (Long.parseLong(total.group(2)) - otherKb) * 1024;
    }

    private static long heapAndNonHeapCommitted() {
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        return memory.getHeapMemoryUsage().getCommitted() + memory.getNonHeapMemoryUsage().getCommitted();
    }

    private static String summary() {
        try {
            Object out = ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                    new Object[] {new String[] {"summary"}}, new String[] {String[].class.getName()});
            return String.valueOf(out);
        } catch (JMException e) {
            throw new IllegalStateException("the native memory summary could not be read", e);
        }
    }
}
