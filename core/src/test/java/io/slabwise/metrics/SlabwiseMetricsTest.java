package io.slabwise.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.slabwise.Allocation;
import io.slabwise.MemoryPool;
import io.slabwise.PoolConfig;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Micrometer binder: every declared meter, the right values, late categories, the weak hold on the pool. */
class SlabwiseMetricsTest {

    private final AtomicLong clock = new AtomicLong();

    private MemoryPool newPool() {
        return new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxMemory(64L << 20).build());
    }

    @Test
    void everyDeclaredMeterIsRegisteredWithItsDescriptionAndUnit() {
        MemoryPool pool = newPool();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        for (SlabwiseMeters meter : SlabwiseMeters.values()) {
            Meter registered = registry.find(meter.meterName()).meter();
            if (meter == SlabwiseMeters.MEMORY_RESIDENT && !pool.stats().residentBytes().isPresent()) {
                continue;
            }
            assertNotNull(registered, meter.meterName());
            assertEquals(meter.description(), registered.getId().getDescription());
            assertEquals(meter.baseUnit(), registered.getId().getBaseUnit());
            assertEquals("test", registered.getId().getTag("allocator"));
            assertTrue(meter.meterName().startsWith("slabwise.") && meter.meterName().equals(meter.meterName().toLowerCase()));
        }
    }

    @Test
    void valuesFollowThePoolIncludingCategoriesCreatedLater() {
        MemoryPool pool = newPool();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        Allocation a = new Allocation();
        pool.allocate(1000, a);
        Allocation b = new Allocation();
        pool.allocate(pool.category("log_cache"), 5000, b); // created after binding
        clock.addAndGet(1_000_000_000L); // the next read takes a new snapshot
        PoolStats stats = pool.stats();
        assertEquals(stats.requestedBytes(), gauge(registry, "slabwise.memory.requested", null));
        assertEquals(stats.reservedBytes(), gauge(registry, "slabwise.memory.reserved", null));
        assertEquals(stats.committedBytes(), gauge(registry, "slabwise.memory.committed", null));
        assertEquals(64L << 20, gauge(registry, "slabwise.memory.max", null));
        assertEquals(1000, gauge(registry, "slabwise.category.requested", "network"));
        assertEquals(5000, gauge(registry, "slabwise.category.requested", "log_cache"));
        assertEquals(1, gauge(registry, "slabwise.category.buffers", "log_cache"));
        FunctionCounter allocations = registry.find("slabwise.category.allocations").tag("category", "log_cache").functionCounter();
        assertNotNull(allocations);
        assertEquals(1, allocations.count());
        assertEquals(stats.overhead(), gauge(registry, "slabwise.overhead", null), 1e-9);
        pool.free(a);
        pool.free(b);
        clock.addAndGet(1_000_000_000L);
        assertEquals(0, gauge(registry, "slabwise.memory.requested", null));
        assertEquals(0, gauge(registry, "slabwise.category.buffers", "log_cache"));
        assertEquals(1, allocations.count(), "counters are monotonic");
    }

    @Test
    void oneSnapshotServesAScrape() {
        MemoryPool pool = newPool();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        double before = gauge(registry, "slabwise.memory.requested", null);
        Allocation a = new Allocation();
        pool.allocate(4096, a);
        assertEquals(before, gauge(registry, "slabwise.memory.requested", null), "same snapshot within 100 ms");
        clock.addAndGet(200_000_000L);
        assertEquals(4096, gauge(registry, "slabwise.memory.requested", null));
        pool.free(a);
    }

    @Test
    void theBinderDoesNotKeepThePoolAlive() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        bindAndDrop(registry);
        Gauge committed = registry.find("slabwise.memory.committed").gauge();
        boolean collected = false;
        for (int i = 0; i < 50 && !collected; i++) {
            System.gc();
            clock.addAndGet(1_000_000_000L);
            collected = Double.isNaN(committed.value());
        }
        assertTrue(collected, "the pool was collected and its gauges read NaN");
    }

    private void bindAndDrop(SimpleMeterRegistry registry) {
        new SlabwiseMetrics(newPool(), "gone", clock::get).bindTo(registry);
    }

    private static double gauge(SimpleMeterRegistry registry, String name, String category) {
        Gauge gauge = category == null ? registry.find(name).gauge() : registry.find(name).tag("category", category).gauge();
        assertNotNull(gauge, name + " " + category);
        return gauge.value();
    }
}
