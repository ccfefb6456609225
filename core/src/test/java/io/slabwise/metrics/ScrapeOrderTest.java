package io.slabwise.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.slabwise.Allocation;
import io.slabwise.ConcurrentTasks;
import io.slabwise.MemoryPool;
import io.slabwise.PoolConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Scrapes that run at once (two registries, or a scrape and a push) each
 * take a snapshot; the one the binder keeps for the next meters must never
 * be older than one it kept before, or a counter read from it goes back.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ScrapeOrderTest {

    /**
     * Bounded stress: two scrapers whose clock always finds the kept
     * snapshot too old (so each takes and keeps a new one) while a thread
     * allocates; a reader whose clock always finds the kept snapshot fresh
     * reads the allocation counter from whatever snapshot was kept last. An
     * older snapshot kept after a newer one shows as that counter going back.
     */
    @Test
    void theKeptSnapshotNeverGoesBackWhileScrapesRunAtOnce() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).build());
        AtomicLong scrapeClock = new AtomicLong();
        ThreadLocal<Boolean> reading = ThreadLocal.withInitial(() -> false);
        SlabwiseMetrics metrics = new SlabwiseMetrics(pool, "test",
                () -> reading.get() ? 0 : scrapeClock.addAndGet(1_000_000_000L));
        // a registry per thread: a Micrometer function counter read by two threads at once may itself
        // return one thread's older value after the other's newer one
        List<FunctionCounter> counters = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            metrics.bindTo(registry);
            counters.add(registry.get("slabwise.category.allocations")
                    .tag("category", pool.defaultCategory().name()).functionCounter());
        }

        AtomicBoolean done = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        threads.add(ConcurrentTasks.startCapturingFailure(() -> {
            Allocation a = new Allocation();
            while (!done.get()) {
                pool.allocate(16, a);
                pool.free(a);
            }
        }, failure));
        List<Thread> scrapers = new ArrayList<>();
        for (int s = 0; s < 2; s++) {
            FunctionCounter allocations = counters.get(s);
            scrapers.add(ConcurrentTasks.startCapturingFailure(() -> {
                for (int i = 0; i < 20_000; i++) {
                    allocations.count();
                }
            }, failure));
        }
        threads.add(ConcurrentTasks.startCapturingFailure(() -> {
            reading.set(true);
            FunctionCounter allocations = counters.get(2);
            double last = 0;
            while (!done.get()) {
                double now = allocations.count();
                if (now < last) {
                    throw new AssertionError("the allocation counter went back from " + last + " to " + now);
                }
                last = now;
            }
        }, failure));
        for (Thread scraper : scrapers) {
            scraper.join();
        }
        done.set(true);
        for (Thread thread : threads) {
            thread.join();
        }
        assertNull(failure.get());
    }
}
