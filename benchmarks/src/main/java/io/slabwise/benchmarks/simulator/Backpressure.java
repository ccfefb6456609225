package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.function.Supplier;

/**
 * What a cache workload does when the memory ceiling refuses a buffer and it
 * has nothing left to evict (other workloads hold the memory): it retries
 * every millisecond for up to five seconds, as a broker would hold back a
 * producer, and fails the run only if memory never comes back.
 */
final class Backpressure {

    private static final int MAX_WAIT_MILLIS = 5000;

    private Backpressure() {
    }

    static ByteBuf retry(Supplier<ByteBuf> allocation, int size) {
        for (int waited = 0; waited < MAX_WAIT_MILLIS; waited++) {
            ByteBuf buf = allocation.get();
            if (buf != null) {
                return buf;
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        throw new IllegalStateException("the ceiling refused a " + size + "-byte buffer for " + MAX_WAIT_MILLIS
                + " ms with nothing left to evict");
    }
}
