package io.slabwise.examples.integrations;

import io.netty.util.ResourceLeakDetector;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A leak detector that keeps its reports for the tests to assert on, rather
 * than logging them. The build installs it for this module's tests through
 * Netty's {@code io.netty.customResourceLeakDetector} system property: Netty
 * makes the detector of each resource type (buffers, OpenSSL engines and
 * contexts, ...) once, when the type's class loads.
 *
 * @param <T> the tracked resource type
 */
public final class RecordingLeakDetector<T> extends ResourceLeakDetector<T> {

    /** The reports of every detector of this kind, in order. */
    static final List<String> REPORTS = new CopyOnWriteArrayList<>();

    /** The constructor Netty's factory calls. */
    @SuppressWarnings("deprecation")
    public RecordingLeakDetector(Class<?> resourceType, int samplingInterval) {
        super(resourceType, samplingInterval);
    }

    /** The constructor Netty's factory tries first (and logs an error when it is missing). */
    @SuppressWarnings("deprecation")
    public RecordingLeakDetector(Class<?> resourceType, int samplingInterval, long maxActive) {
        super(resourceType, samplingInterval, maxActive);
    }

    @Override
    protected void reportTracedLeak(String resourceType, String records) {
        REPORTS.add(resourceType + ": " + records);
    }

    @Override
    protected void reportUntracedLeak(String resourceType) {
        REPORTS.add(resourceType);
    }
}
