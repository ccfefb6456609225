package io.slabwise.netty;

import io.netty.util.ResourceLeakDetector;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A leak detector that records its reports instead of logging them, so tests
 * can assert on them. The build installs it for this module's tests through
 * Netty's {@code io.netty.customResourceLeakDetector} system property, because
 * Netty creates the buffers' detector once, when its buffer classes load.
 *
 * @param <T> the tracked resource type
 */
public final class RecordingLeakDetector<T> extends ResourceLeakDetector<T> {

    /** Every report made by any detector of this kind, in order. */
    static final List<String> REPORTS = new CopyOnWriteArrayList<>();

    /** The constructor Netty's factory calls. */
    @SuppressWarnings("deprecation")
    public RecordingLeakDetector(Class<?> resourceType, int samplingInterval) {
        super(resourceType, samplingInterval);
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
