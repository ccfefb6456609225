package io.slabwise.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.slabwise.Allocation;
import io.slabwise.MemoryPool;
import io.slabwise.PoolConfig;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Micrometer binder: every declared meter as declared, values that follow
 * the pool, categories created after binding, one snapshot per scrape, and the
 * weak hold on the pool. The snapshot clock is faked, so no test sleeps.
 */
class SlabwiseMetricsTest {

    /** Longer than a snapshot lives: the next read takes a new one. */
    private static final long NEXT_SCRAPE = 1_000_000_000L;

    private final AtomicLong clock = new AtomicLong();

    private static MemoryPool newPool() {
        return new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxMemory(64L << 20).build());
    }

    @Test
    void everyDeclaredMeterIsRegisteredAsDeclared() {
        MemoryPool pool = newPool();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        boolean resident = pool.stats().residentBytes().isPresent();
        for (SlabwiseMeters meter : SlabwiseMeters.values()) {
            String name = meter.meterName();
            assertTrue(name.startsWith("slabwise.") && name.equals(name.toLowerCase(Locale.ROOT))
                    && !name.contains("_"), name);
            assertFalse(meter.description() == null || meter.description().isBlank(), name);
            Collection<Meter> registered = registry.find(name).meters();
            if (meter == SlabwiseMeters.MEMORY_RESIDENT && !resident) {
                assertTrue(registered.isEmpty(), "resident is absent where the platform does not report it");
                continue;
            }
            assertFalse(registered.isEmpty(), name);
            for (Meter m : registered) {
                Meter.Id id = m.getId();
                assertEquals(meter.description(), id.getDescription(), name);
                assertEquals(meter.baseUnit(), id.getBaseUnit(), name);
                assertEquals(tagKeys(meter), keysOf(id.getTags()), name);
                assertEquals("test", id.getTag("allocator"), name);
                if (meter.type() == SlabwiseMeters.Type.GAUGE) {
                    assertInstanceOf(Gauge.class, m, name);
                } else {
                    assertInstanceOf(FunctionCounter.class, m, name);
                }
            }
        }
        assertEquals(List.of("idle", "used"), registry.find("slabwise.chunks").meters().stream()
                .map(m -> m.getId().getTag("state")).sorted().toList());
        for (Meter m : registry.getMeters()) {
            String name = m.getId().getName();
            assertTrue(List.of(SlabwiseMeters.values()).stream().anyMatch(d -> d.meterName().equals(name)),
                    name + " is declared in SlabwiseMeters");
        }
    }

    @Test
    void valuesMatchTheSnapshotInTwoCategories() {
        MemoryPool pool = newPool();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        Allocation a = new Allocation();
        pool.allocate(1000, a);
        Allocation b = new Allocation();
        pool.allocate(pool.category("log_cache"), 5000, b); // a category created after binding
        Allocation c = new Allocation();
        pool.allocate(pool.category("log_cache"), 70_000, c);
        clock.addAndGet(NEXT_SCRAPE);
        gauge(registry, "slabwise.memory.requested", null); // the scrape that first sees log_cache
        PoolStats stats = pool.stats();
        assertEquals(stats.requestedBytes(), gauge(registry, "slabwise.memory.requested", null));
        assertEquals(stats.reservedBytes(), gauge(registry, "slabwise.memory.reserved", null));
        assertEquals(stats.committedBytes(), gauge(registry, "slabwise.memory.committed", null));
        assertEquals(stats.cachedBytes(), gauge(registry, "slabwise.memory.cached", null));
        assertEquals(64L << 20, gauge(registry, "slabwise.memory.max", null));
        assertEquals(stats.chunks() - stats.idleChunks(), gauge(registry, "slabwise.chunks", "state", "used"));
        assertEquals(stats.idleChunks(), gauge(registry, "slabwise.chunks", "state", "idle"));
        assertEquals(stats.internalFragmentation(), gauge(registry, "slabwise.fragmentation.internal", null), 1e-12);
        assertEquals(stats.externalFragmentation(), gauge(registry, "slabwise.fragmentation.external", null), 1e-12);
        assertEquals(stats.overhead(), gauge(registry, "slabwise.overhead", null), 1e-12);
        for (String category : List.of("network", "log_cache")) {
            assertEquals(stats.category(category).requested(), gauge(registry, "slabwise.category.requested", category));
            assertEquals(stats.category(category).reserved(), gauge(registry, "slabwise.category.reserved", category));
            assertEquals(stats.category(category).liveBuffers(), gauge(registry, "slabwise.category.buffers", category));
        }
        assertEquals(1000, gauge(registry, "slabwise.category.requested", "network"));
        assertEquals(75_000, gauge(registry, "slabwise.category.requested", "log_cache"));
        assertEquals(2, gauge(registry, "slabwise.category.buffers", "log_cache"));
        assertTrue(stats.committedBytes() >= stats.reservedBytes() && stats.reservedBytes() >= stats.requestedBytes());
        FunctionCounter allocations = registry.find("slabwise.category.allocations")
                .tag("category", "log_cache").functionCounter();
        assertNotNull(allocations);
        assertEquals(2, allocations.count());

        pool.free(a);
        pool.free(b);
        pool.free(c);
        clock.addAndGet(NEXT_SCRAPE);
        assertEquals(0, gauge(registry, "slabwise.memory.requested", null));
        assertEquals(0, gauge(registry, "slabwise.category.buffers", "log_cache"));
        assertEquals(2, allocations.count(), "counters are monotonic");
    }

    @Test
    void aRegistryBoundLaterGetsTheCategoriesBoundBefore() {
        MemoryPool pool = newPool();
        SlabwiseMetrics metrics = new SlabwiseMetrics(pool, "test", clock::get);
        SimpleMeterRegistry first = new SimpleMeterRegistry();
        metrics.bindTo(first);
        pool.category("block_cache");
        clock.addAndGet(NEXT_SCRAPE);
        gauge(first, "slabwise.memory.committed", null); // sees block_cache and binds it
        assertNotNull(first.find("slabwise.category.requested").tag("category", "block_cache").gauge());

        SimpleMeterRegistry second = new SimpleMeterRegistry();
        metrics.bindTo(second);
        for (String category : List.of("network", "block_cache")) {
            assertNotNull(second.find("slabwise.category.reserved").tag("category", category).gauge(), category);
        }
        pool.category("index");
        clock.addAndGet(NEXT_SCRAPE);
        gauge(first, "slabwise.memory.committed", null);
        assertNotNull(first.find("slabwise.category.buffers").tag("category", "index").gauge());
        assertNotNull(second.find("slabwise.category.buffers").tag("category", "index").gauge(),
                "a category seen through one registry gets meters in all of them");
        assertEquals(first.getMeters().size(), second.getMeters().size());
    }

    @Test
    void oneSnapshotServesAScrape() {
        MemoryPool pool = newPool();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        double before = gauge(registry, "slabwise.memory.requested", null);
        Allocation a = new Allocation();
        pool.allocate(4096, a);
        clock.addAndGet(SlabwiseMetrics.SNAPSHOT_MILLIS * 1_000_000L / 2);
        assertEquals(before, gauge(registry, "slabwise.memory.requested", null), "same snapshot within 100 ms");
        assertEquals(before, gauge(registry, "slabwise.category.requested", "network"), "for every meter");
        clock.addAndGet(SlabwiseMetrics.SNAPSHOT_MILLIS * 1_000_000L);
        assertEquals(4096, gauge(registry, "slabwise.memory.requested", null));
        assertEquals(4096, gauge(registry, "slabwise.category.requested", "network"));
        pool.free(a);
    }

    @Test
    void residentBytesAreReportedWhereTheOsSaysSo() {
        MemoryPool pool = newPool();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        PoolStats stats = pool.stats();
        if (!Files.isReadable(Path.of("/proc/self/status"))) {
            assertFalse(stats.residentBytes().isPresent());
            assertFalse(stats.summary().contains("resident="));
            assertNull(registry.find("slabwise.memory.resident").gauge());
            return;
        }
        long resident = stats.residentBytes().orElseThrow();
        assertTrue(resident > 1 << 20 && resident % 1024 == 0, "a JVM's RSS in whole KiB: " + resident);
        assertTrue(stats.summary().contains(" resident=" + PoolStats.bytes(resident) + " "), stats.summary());
        double gauge = gauge(registry, "slabwise.memory.resident", null);
        assertTrue(gauge > 1 << 20, "gauge " + gauge);
    }

    @Test
    void theBinderDoesNotKeepThePoolAlive() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        bindAndDrop(registry);
        Gauge committed = registry.find("slabwise.memory.committed").gauge();
        assertNotNull(committed);
        boolean collected = false;
        for (int i = 0; i < 50 && !collected; i++) {
            System.gc();
            clock.addAndGet(NEXT_SCRAPE);
            collected = Double.isNaN(committed.value());
        }
        assertTrue(collected, "the pool was collected and its gauges read NaN");
        assertTrue(Double.isNaN(gauge(registry, "slabwise.category.requested", "network")));
    }

    private void bindAndDrop(SimpleMeterRegistry registry) {
        new SlabwiseMetrics(newPool(), "gone", clock::get).bindTo(registry);
    }

    private static List<String> tagKeys(SlabwiseMeters meter) {
        List<String> keys = new ArrayList<>();
        for (SlabwiseMeters.TagKey key : meter.tagKeys()) {
            keys.add(key.key());
        }
        keys.sort(null);
        return keys;
    }

    private static List<String> keysOf(List<Tag> tags) {
        return tags.stream().map(Tag::getKey).sorted().toList();
    }

    private static double gauge(SimpleMeterRegistry registry, String name, String category) {
        return category == null ? gauge(registry, name, null, null) : gauge(registry, name, "category", category);
    }

    private static double gauge(SimpleMeterRegistry registry, String name, String tagKey, String tagValue) {
        Gauge gauge = tagKey == null ? registry.find(name).gauge() : registry.find(name).tag(tagKey, tagValue).gauge();
        assertNotNull(gauge, name + " " + tagValue);
        return gauge.value();
    }
}
