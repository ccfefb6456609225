package io.slabwise.benchmarks.simulator;

import java.util.concurrent.CountDownLatch;

/**
 * Where the workloads of one run meet when their work is done, still holding
 * their buffers. The last to arrive takes the final sample (so "final" is the
 * state with every cache full, before anything is drained); then all of them
 * release what they hold. A workload alone in its run arrives at a line of one.
 *
 * <pre>
 *  fifo ──traffic done──▶ arrive ─ wait ─┐
 *  lru  ─────traffic done──────▶ arrive ─┴─ final sample ─▶ both drain
 *  phase, network: run until {@link #passed()}
 * </pre>
 */
final class FinishLine {

    private final CountDownLatch waiting;

    FinishLine(int workloads) {
        waiting = new CountDownLatch(workloads);
    }

    /** Arrives; the last one takes the final sample. Returns once every workload has arrived. */
    void arrive(BufferSource source, Samples samples) throws InterruptedException {
        synchronized (this) {
            if (waiting.getCount() == 1) {
                samples.finish(source);
            }
            waiting.countDown();
        }
        waiting.await();
    }

    /** Lets everyone through at once, after a workload failed and will never arrive. */
    void abandon() {
        while (waiting.getCount() > 0) {
            waiting.countDown();
        }
    }

    /** Whether every workload has arrived; the mix's helper threads stop then. */
    boolean passed() {
        return waiting.getCount() == 0;
    }
}
