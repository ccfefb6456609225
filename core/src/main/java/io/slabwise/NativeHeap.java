package io.slabwise;

import java.lang.management.ManagementFactory;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * Asks glibc to give the free memory in malloc's arenas back to the operating
 * system, through the JVM's {@code System.trim_native_heap} diagnostic command
 * (which calls {@code malloc_trim(0)}; present in the HotSpot JDK 17 and 25
 * builds tested here).
 *
 * <p>Why it is needed: the direct chunk source takes its memory from malloc.
 * Regions taken there on their own (a pool's first few MiB, see
 * {@link CommittedMemory}, or every chunk with
 * {@code -Dslabwise.noRegionGroups=true}) come from malloc's arenas once a
 * freed region has raised glibc's dynamic mmap threshold, and when given back
 * they may stay resident. Groups of 32 MiB are always mapped and unmapped by
 * glibc and need nothing.
 *
 * <p>Only where it helps: on glibc without {@code MALLOC_MMAP_THRESHOLD_} in
 * the environment ({@link MallocWarning#glibcKeepsFreedChunks()}), and unless
 * {@code -Dslabwise.noNativeHeapTrim=true}. The trim is never on an
 * allocation's path: a pool asks for it from {@code trim()}, its once-a-second
 * decay and {@code close()} (and the last release after a close), and only
 * when it has given regions back to malloc since the last one. The command
 * walks every arena, holding each one's lock while it works on it: 0.05-0.07
 * ms a call on a JVM that had freed 200 MB of direct buffers (JDK 17 and 25);
 * the first call in a process also sets up the JVM's platform MBean server,
 * about 100 ms. It gives back the free memory inside each arena, though not
 * the top of any arena but the main one; {@link MallocArenaThread} bounds
 * that. Where the command is missing (another JVM, a runtime image without
 * {@code jdk.management}) the first attempt finds out and none is made again.
 *
 * <p>Any thread; one trim runs at a time in the process.
 */
final class NativeHeap {

    private static final System.Logger LOGGER = System.getLogger("io.slabwise");

    /** Whether pools here ask for the trim at all. */
    private static final boolean WANTED = MallocWarning.glibcKeepsFreedChunks()
            && !Boolean.getBoolean("slabwise.noNativeHeapTrim");

    /** The command's report, for example {@code Trim native heap: RSS+Swap: 2237M->2230M (-6452K)}; B for bytes. */
    private static final Pattern REPORT = Pattern.compile("RSS\\+Swap: (\\d+)([KMGB]?)->(\\d+)([KMGB]?)");

    private static final Object LOCK = new Object();
    /** Set once the command turned out to be missing; guarded by {@link #LOCK}. */
    private static boolean missing;

    private NativeHeap() {
    }

    /** Whether regions given back to malloc should be followed by a trim in this process. */
    static boolean wanted() {
        return WANTED;
    }

    /**
     * Trims malloc's arenas now, if wanted here and available.
     *
     * @return the bytes of resident memory the trim gave back by the command's
     *         own report; 0 when none; -1 when no trim was made
     */
    static long trim() {
        if (!WANTED) {
            return -1;
        }
        synchronized (LOCK) {
            if (missing) {
                return -1;
            }
            String report;
            try {
                MBeanServer server = ManagementFactory.getPlatformMBeanServer();
                Object out = server.invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"),
                        "systemTrimNativeHeap", new Object[] {null}, new String[] {String[].class.getName()});
                report = String.valueOf(out);
            } catch (Exception | LinkageError e) {
                missing = true;
                LOGGER.log(System.Logger.Level.DEBUG, "the JVM cannot trim the native heap; freed malloc memory may"
                        + " stay resident (set MALLOC_MMAP_THRESHOLD_=131072 to avoid it)", e);
                return -1;
            }
            return givenBack(report);
        }
    }

    /** The bytes a report of the command says went back; 0 when it does not say. */
    static long givenBack(String report) {
        Matcher m = REPORT.matcher(report);
        if (!m.find()) {
            return 0;
        }
        long before = bytes(Long.parseLong(m.group(1)), m.group(2));
        long after = bytes(Long.parseLong(m.group(3)), m.group(4));
        return Math.max(0, before - after);
    }

    private static long bytes(long value, String unit) {
        return switch (unit) {
            case "K" -> value << 10;
            case "M" -> value << 20;
            case "G" -> value << 30;
            default -> value;
        };
    }
}
