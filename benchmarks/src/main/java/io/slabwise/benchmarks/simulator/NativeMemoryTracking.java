package io.slabwise.benchmarks.simulator;

import java.lang.management.ManagementFactory;
import java.util.Locale;

import javax.management.ObjectName;

/**
 * The JVM's own account of its native memory, where it runs with
 * {@code -XX:NativeMemoryTracking=summary} (or {@code detail}): a baseline
 * before a run and, after it, the change since, by JVM category (Java heap,
 * class metadata, code, compiler, GC, threads, and "Other" for malloc'ed
 * direct buffers). It says which part of a rise in resident memory is the
 * JVM's and which the allocator's. Nothing happens without the flag.
 */
final class NativeMemoryTracking {

    private static final boolean ON = ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
            .anyMatch(a -> a.startsWith("-XX:NativeMemoryTracking=") && !a.endsWith("=off"));

    private NativeMemoryTracking() {
    }

    /** Whether the JVM tracks its native memory. */
    static boolean on() {
        return ON;
    }

    /** Takes the baseline the next {@link #changeSinceBaseline()} compares with. */
    static void baseline() {
        if (ON) {
            command("baseline");
        }
    }

    /** The summary of what changed since {@link #baseline()}, in MiB; empty without tracking. */
    static String changeSinceBaseline() {
        return ON ? command("summary.diff", "scale=MB") : "";
    }

    private static String command(String... arguments) {
        try {
            Object out = ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                    new Object[] {arguments}, new String[] {String[].class.getName()});
            return String.valueOf(out);
        } catch (Exception e) {
            return String.format(Locale.ROOT, "(native memory tracking failed: %s)", e);
        }
    }
}
