package io.slabwise.benchmarks.soak;

import io.netty.util.ResourceLeakDetector;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Netty's leak detector with a reporter that records each report, so that
 * the soak can count them at every check and fail on the first. The soak
 * installs it through Netty's {@code io.netty.customResourceLeakDetector}
 * system property before any buffer class loads (Netty makes the buffers'
 * detector once, then); reports are also logged as Netty's own are.
 *
 * @param <T> the tracked resource type
 */
public final class LeakRecorder<T> extends ResourceLeakDetector<T> {

    private static final List<String> REPORTS = new CopyOnWriteArrayList<>();
    private static volatile boolean installed;

    /**
     * The constructor Netty's detector factory calls.
     *
     * @param resourceType     the class of the tracked resources
     * @param samplingInterval one in how many resources is tracked below the paranoid level
     */
    @SuppressWarnings("deprecation")
    public LeakRecorder(Class<?> resourceType, int samplingInterval) {
        super(resourceType, samplingInterval);
        installed = true;
    }

    /**
     * The constructor Netty's detector factory tries first (it logs an error
     * when a custom detector lacks it).
     *
     * @param resourceType     the class of the tracked resources
     * @param samplingInterval one in how many resources is tracked below the paranoid level
     * @param maxActive        ignored by Netty
     */
    @SuppressWarnings("deprecation")
    public LeakRecorder(Class<?> resourceType, int samplingInterval, long maxActive) {
        super(resourceType, samplingInterval, maxActive);
        installed = true;
    }

    @Override
    protected void reportTracedLeak(String resourceType, String records) {
        REPORTS.add(resourceType + " leaked:" + records);
        super.reportTracedLeak(resourceType, records);
    }

    @Override
    protected void reportUntracedLeak(String resourceType) {
        REPORTS.add(resourceType + " leaked (no access records at this level)");
        super.reportUntracedLeak(resourceType);
    }

    /** Whether Netty made a detector of this kind: the recorder is installed. */
    static boolean installed() {
        return installed;
    }

    /** Every report made so far, in order. */
    static List<String> reports() {
        return List.copyOf(REPORTS);
    }
}
