package io.slabwise;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An allocation applies one policy from start to end, whatever
 * {@link MemoryPool#setPolicy} does meanwhile: a caller that lines up under
 * {@link LimitPolicy#WAIT} waits its turn; none is refused without a try.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PolicyChangeWhileQueuingTest {

    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;

    /**
     * A caller waits at the ceiling for a new chunk; a small request of
     * {@code cache}, whose policy is WAIT, lines up behind it, and the policy
     * turns to FAIL just after that decision (forced through the pool's
     * wait-allowed check, the decision's last step). The caller was refused
     * at once, untried, although 512 KiB were free in a chunk: under WAIT it
     * waits its turn, under FAIL it is not held back and is served.
     */
    @Test
    void aPolicyChangedAsACallerLinesUpNeverRefusesItUntried() throws Exception {
        Thread[] switching = new Thread[1];
        AtomicReference<MemoryPool> pool = new AtomicReference<>();
        MemoryPool built = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).dedicatedAbove(MIB)
                .arenas(1).limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(50)).maxMemory(4L * MIB)
                .chunkSource(ChunkSource.direct())
                .waitAllowed(() -> {
                    if (Thread.currentThread() == switching[0]) {
                        pool.get().setPolicy("cache", LimitPolicy.FAIL); // after the line-up decision read WAIT
                    }
                    return true;
                }).build());
        pool.set(built);
        Category cache = built.category("cache");
        Allocation[] held = new Allocation[3];
        for (int i = 0; i < held.length; i++) {
            held[i] = new Allocation();
            built.allocate(MIB, held[i]); // a whole chunk each
        }
        Allocation half = new Allocation();
        built.allocate(MIB / 2, half); // the fourth chunk, half free
        assertEquals(4L * MIB, built.committedBytes());

        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation large = new Allocation();
        Thread first = ConcurrentTasks.startCapturingFailure(() -> built.allocate(600 * KIB, large), failure);
        ConcurrentTasks.awaitWaiting(built, 1); // needs a new chunk: waits at the ceiling

        Allocation small = new Allocation();
        Thread second = new Thread(() -> {
            try {
                built.allocate(cache, KIB, small);
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        });
        switching[0] = second;
        second.start();
        while (second.isAlive() && built.waitingAllocations() < 2) {
            Thread.onSpinWait(); // until it waits in line, or is done
        }
        assertNull(failure.get(), "refused without a try");
        built.free(held[0]); // a chunk for the first; the second, behind it, is served next
        first.join();
        second.join();
        assertNull(failure.get());
        assertTrue(large.isLive() && small.isLive());
        for (Allocation a : new Allocation[] {large, small, half, held[1], held[2]}) {
            built.free(a);
        }
        assertEquals(0, built.waitingAllocations());
    }
}
