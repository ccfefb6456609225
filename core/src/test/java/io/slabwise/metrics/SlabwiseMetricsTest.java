package io.slabwise.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.slabwise.Allocation;
import io.slabwise.Category;
import io.slabwise.CompactionStats;
import io.slabwise.LimitPolicy;
import io.slabwise.MemoryLimitException;
import io.slabwise.MemoryPool;
import io.slabwise.PoolConfig;
import io.slabwise.PoolStats;
import io.slabwise.PressureStats;
import io.slabwise.Shrinker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Micrometer binder: every declared meter as declared, values that follow
 * the pool, categories created after binding, one snapshot per scrape, and the
 * weak hold on the pool, the limit meters, and the tags that join Micrometer's
 * Netty series. The snapshot clock is faked, so no test sleeps.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SlabwiseMetricsTest {

    /** Longer than a snapshot lives: the next read takes a new one. */
    private static final long NEXT_SCRAPE = 1_000_000_000L;

    private final AtomicLong clock = new AtomicLong();

    private static MemoryPool newPool() {
        return new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxMemory(64L << 20).build());
    }

    /** A pool with a ceiling of two chunks and a quota of 256 KiB on {@code limited}, where nothing waits. */
    private static MemoryPool limitedPool() {
        return new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxCachedSize(0).maxMemory(2L << 20)
                .quota("limited", 256 << 10).limitPolicy(LimitPolicy.RETURN_NULL).build());
    }

    @Test
    void everyDeclaredMeterIsRegisteredAsDeclared() {
        MemoryPool pool = limitedPool();
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
                assertEquals(meter.type() == SlabwiseMeters.Type.FUNCTION_TIMER ? "seconds" : meter.baseUnit(),
                        id.getBaseUnit(), name + ": a timer takes the registry's base time unit");
                assertEquals(tagKeys(meter), keysOf(id.getTags()), name);
                assertEquals("test", id.getTag("allocator"), name);
                assertEquals(String.valueOf(pool.hashCode()), id.getTag("id"), name);
                assertEquals("MemoryPool", id.getTag("allocator.type"), name);
                switch (meter.type()) {
                    case GAUGE -> assertInstanceOf(Gauge.class, m, name);
                    case FUNCTION_COUNTER -> assertInstanceOf(FunctionCounter.class, m, name);
                    case FUNCTION_TIMER -> assertInstanceOf(FunctionTimer.class, m, name);
                    default -> throw new AssertionError(meter.type());
                }
            }
        }
        assertEquals(List.of("network/ceiling", "limited/ceiling", "limited/quota").stream().sorted().toList(),
                registry.find("slabwise.limit.refusals").meters().stream()
                        .map(m -> m.getId().getTag("category") + "/" + m.getId().getTag("kind")).sorted().toList(),
                "a ceiling series per category, a quota series per category with a quota");
        assertEquals(3, registry.find("slabwise.limit.wait").meters().size());
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
        assertEquals(stats.internalFragmentation(), gauge(registry, "slabwise.fragmentation.internal.ratio", null), 1e-12);
        assertEquals(stats.externalFragmentation(), gauge(registry, "slabwise.fragmentation.external.ratio", null), 1e-12);
        assertEquals(stats.overhead(), gauge(registry, "slabwise.overhead.ratio", null), 1e-12);
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
        assertTrue(Double.isNaN(gauge(registry, "slabwise.overhead.ratio", null)),
                "no overhead while nothing is requested: there is no ratio");
    }

    @Test
    void refusalsAndWaitsAreCountedPerCategoryAndLimit() {
        MemoryPool pool = limitedPool();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        Category limited = pool.category("limited");
        Allocation held = new Allocation();
        pool.allocate(limited, 200 << 10, held);
        assertFalse(pool.allocate(limited, 100 << 10, new Allocation()));
        assertFalse(pool.allocate(limited, 100 << 10, new Allocation()));
        Allocation whole = new Allocation();
        pool.allocate(1 << 20, whole); // the second chunk: at the ceiling
        assertFalse(pool.allocate(1 << 20, new Allocation()));
        clock.addAndGet(NEXT_SCRAPE);

        assertEquals(2, refusals(registry, "limited", "quota"));
        assertEquals(0, refusals(registry, "limited", "ceiling"));
        assertEquals(1, refusals(registry, "network", "ceiling"));
        assertEquals(0, gauge(registry, "slabwise.limit.waiting", null));
        FunctionTimer wait = registry.find("slabwise.limit.wait").tag("category", "limited").tag("kind", "quota")
                .functionTimer();
        assertNotNull(wait);
        assertEquals(0, wait.count());

        MemoryPool waiting = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxCachedSize(0)
                .maxMemory(Long.MAX_VALUE) // no ceiling, whatever the chunk source's default
                .quota("limited", 256 << 10).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(Duration.ofMillis(20)).build());
        SimpleMeterRegistry second = new SimpleMeterRegistry();
        new SlabwiseMetrics(waiting, "waiting", clock::get).bindTo(second);
        Allocation quotaHeld = new Allocation();
        waiting.allocate(waiting.category("limited"), 200 << 10, quotaHeld);
        assertThrows(MemoryLimitException.class,
                () -> waiting.allocate(waiting.category("limited"), 100 << 10, new Allocation()));
        clock.addAndGet(NEXT_SCRAPE);
        FunctionTimer timedOut = second.find("slabwise.limit.wait").tag("category", "limited").tag("kind", "quota")
                .functionTimer();
        assertNotNull(timedOut);
        assertEquals(1, timedOut.count());
        // within a nanosecond: Micrometer converts the total through its base unit in doubles
        assertEquals(waiting.limitStats().waitNanos("limited", MemoryLimitException.Kind.QUOTA),
                timedOut.totalTime(TimeUnit.NANOSECONDS), 1.0);
        assertTrue(timedOut.totalTime(TimeUnit.MILLISECONDS) >= 10, "about the 20 ms timeout");
        assertEquals(1, refusals(second, "limited", "quota"), "a wait that timed out is also a refusal");
        assertNull(second.find("slabwise.limit.refusals").tag("kind", "ceiling").functionCounter(),
                "no ceiling series for a pool without one");
        pool.free(held);
        pool.free(whole);
        waiting.free(quotaHeld);
    }

    @Test
    void forAllocatorTagsAsMicrometersNettyBinderDoes() {
        MemoryPool pool = newPool();
        Object allocator = new Object() { // stands for a Netty allocator built on the pool
            @Override
            public int hashCode() {
                return 42;
            }

            @Override
            public boolean equals(Object o) {
                return o == this;
            }
        };
        class ServerAllocator {
        }
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        SlabwiseMetrics.forAllocator(new ServerAllocator(), pool, "server").bindTo(registry);
        Meter.Id committed = registry.find("slabwise.memory.committed").gauge().getId();
        assertEquals("ServerAllocator", committed.getTag("allocator.type"));
        assertEquals("server", committed.getTag("allocator"));

        SimpleMeterRegistry other = new SimpleMeterRegistry();
        SlabwiseMetrics.forAllocator(allocator, pool, "server", Tag.of("zone", "a")).bindTo(other);
        for (Meter m : other.getMeters()) {
            assertEquals("42", m.getId().getTag("id"), "the allocator's hashCode, as NettyAllocatorMetrics uses");
            assertEquals("a", m.getId().getTag("zone"));
        }
        assertFalse(other.getMeters().isEmpty());
    }

    @Test
    void limitCountsStayOnceThePoolIsGone() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        refuseOnceAndDrop(registry);
        FunctionCounter refusals = registry.find("slabwise.limit.refusals").tag("category", "limited")
                .tag("kind", "quota").functionCounter();
        assertNotNull(refusals);
        Gauge committed = registry.find("slabwise.memory.committed").gauge();
        boolean collected = false;
        for (int i = 0; i < 50 && !collected; i++) {
            System.gc();
            clock.addAndGet(NEXT_SCRAPE);
            collected = Double.isNaN(committed.value());
        }
        assertTrue(collected, "the pool was collected");
        assertEquals(1, refusals.count(), "a count never goes back");
    }

    private void refuseOnceAndDrop(SimpleMeterRegistry registry) {
        MemoryPool pool = limitedPool();
        new SlabwiseMetrics(pool, "gone", clock::get).bindTo(registry);
        pool.allocate(pool.category("limited"), 200 << 10, new Allocation());
        assertFalse(pool.allocate(pool.category("limited"), 100 << 10, new Allocation()));
        clock.addAndGet(NEXT_SCRAPE);
        assertEquals(1, refusals(registry, "limited", "quota"));
    }

    @Test
    void thePressureMetersFollowTheShrinkersAskedAtTheCeiling() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxCachedSize(0)
                .maxMemory(8L << 20).limitPolicy(LimitPolicy.FAIL).categoryPolicy("log_cache", LimitPolicy.RETURN_NULL)
                .build());
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        java.util.ArrayDeque<Allocation> log = new java.util.ArrayDeque<>();
        while (true) {
            Allocation a = new Allocation();
            if (!pool.sequential("log_cache").allocate(64 << 10, a)) {
                break;
            }
            log.add(a);
        }
        pool.setShrinker("log_cache", new Shrinker() {
            @Override
            public long reclaimable() {
                return log.size() * (64L << 10);
            }

            @Override
            public long shrink(long bytes) {
                long freed = 0;
                while (freed < bytes && !log.isEmpty()) {
                    Allocation a = log.removeFirst();
                    freed += a.requestedBytes();
                    pool.free(a);
                }
                return freed;
            }
        });
        Allocation burst = new Allocation();
        assertTrue(pool.allocate(2 << 20, burst), "served after the log cache shrank");
        clock.addAndGet(NEXT_SCRAPE);
        gauge(registry, "slabwise.memory.requested", null);
        PressureStats stats = pool.pressureStats();
        assertEquals(1, counter(registry, "slabwise.pressure.limit.shrinks", null, null));
        assertEquals(1, counter(registry, "slabwise.pressure.limit.served", null, null));
        assertEquals(stats.category("log_cache").asked(), counter(registry, "slabwise.pressure.asked", "category", "log_cache"));
        assertEquals(stats.freed(), counter(registry, "slabwise.pressure.freed", "category", "log_cache"));
        assertTrue(stats.freed() >= 2 << 20);
        assertEquals(0, counter(registry, "slabwise.pressure.freed", "category", "network"), "no shrinker, zero");
        assertEquals(0, registry.find("slabwise.pressure.skipped").tag("category", "log_cache").tag("reason", "busy")
                .functionCounter().count());
        FunctionTimer timer = registry.find("slabwise.pressure.shrink").functionTimer();
        assertEquals(stats.category("log_cache").calls(), (long) timer.count());
        pool.free(burst);
        log.forEach(pool::free);
        pool.close();
    }

    private static double counter(SimpleMeterRegistry registry, String name, String tagKey, String tagValue) {
        FunctionCounter counter = tagKey == null ? registry.find(name).functionCounter()
                : registry.find(name).tag(tagKey, tagValue).functionCounter();
        assertNotNull(counter, name + " " + tagValue);
        return counter.count();
    }

    private static double refusals(SimpleMeterRegistry registry, String category, String kind) {
        FunctionCounter counter = registry.find("slabwise.limit.refusals").tag("category", category).tag("kind", kind)
                .functionCounter();
        assertNotNull(counter, category + "/" + kind);
        return counter.count();
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

    @Test
    void compactionMetersCountWhatCompactionsDid() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).build());
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "test", clock::get).bindTo(registry);
        Category cache = pool.category("cache");
        List<Allocation> kept = new ArrayList<>();
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < 512; i++) {
            Allocation a = new Allocation();
            pool.allocate(cache, 8192, a); // 4 chunks of 128 runs
            all.add(a);
        }
        for (int i = 0; i < all.size(); i++) {
            if (i % 16 == 0) {
                kept.add(all.get(i)); // 8 runs in each chunk
            } else {
                pool.free(all.get(i));
            }
        }
        pool.trim();
        pool.setRelocator("cache", evacuation -> {
            for (int i = 0; i < kept.size(); i++) {
                Allocation old = kept.get(i);
                Allocation fresh = new Allocation();
                if (evacuation.contains(old) && evacuation.moveInto(old, fresh)) {
                    kept.set(i, fresh);
                    pool.free(old);
                }
            }
        });
        CompactionStats done = pool.compact();
        assertTrue(done.movedEntries() > 0 && done.chunksFreed() > 0, done::toString);
        assertEquals(done.movedBytes(), registry.get("slabwise.compaction.moved").functionCounter().count());
        assertEquals(done.movedEntries(), registry.get("slabwise.compaction.moved.entries").functionCounter().count());
        assertEquals(done.bytesFreed(), registry.get("slabwise.compaction.freed").functionCounter().count());
        assertEquals(0, registry.get("slabwise.compaction.refused").functionCounter().count());
        assertEquals(0, registry.get("slabwise.compaction.held.by.readers").functionCounter().count());
        FunctionTimer timer = registry.get("slabwise.compaction").functionTimer();
        assertEquals(1, timer.count());
        assertEquals(done.nanos(), timer.totalTime(TimeUnit.NANOSECONDS), 1);
        kept.forEach(pool::free);
        pool.close();
    }

    private static double gauge(SimpleMeterRegistry registry, String name, String category) {
        return category == null ? gauge(registry, name, null, null) : gauge(registry, name, "category", category);
    }

    private static double gauge(SimpleMeterRegistry registry, String name, String tagKey, String tagValue) {
        Gauge gauge = tagKey == null ? registry.find(name).gauge() : registry.find(name).tag(tagKey, tagValue).gauge();
        assertNotNull(gauge, name + " " + tagValue);
        return gauge.value();
    }

    /**
     * A registry whose filter lets only some counters through registers no
     * gauge; the binder, which nothing else refers to, must still live as
     * long as its meters, and its counters keep counting.
     */
    @Test
    void countersKeepCountingWhenAFilterLetsNoGaugeThrough() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxCachedSize(0)
                .quota("limited", 256 << 10).limitPolicy(LimitPolicy.RETURN_NULL).build());
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        registry.config().meterFilter(MeterFilter.denyUnless(id -> id.getName().startsWith("slabwise.limit.refusals")));
        WeakReference<SlabwiseMetrics> binder = bindAndDrop(pool, registry);
        FunctionCounter refusals = registry.find("slabwise.limit.refusals").tag("category", "limited")
                .tag("kind", "quota").functionCounter();
        assertNotNull(refusals);
        assertTrue(registry.find("slabwise.memory.committed").gauges().isEmpty(), "no gauge let through");
        for (int i = 0; i < 10 && binder.get() != null; i++) {
            System.gc();
        }
        assertNotNull(binder.get(), "the counter's function keeps its binder alive");
        Allocation a = new Allocation();
        assertTrue(pool.allocate(pool.category("limited"), 200 << 10, a));
        assertFalse(pool.allocate(pool.category("limited"), 100 << 10, new Allocation()));
        clock.addAndGet(TimeUnit.SECONDS.toNanos(10));
        assertEquals(1, refusals.count());
        pool.free(a);
        pool.close();
    }

    /** Binds a binder nothing else refers to. */
    private WeakReference<SlabwiseMetrics> bindAndDrop(MemoryPool pool, SimpleMeterRegistry registry) {
        SlabwiseMetrics metrics = new SlabwiseMetrics(pool, "t", clock::get);
        metrics.bindTo(registry);
        return new WeakReference<>(metrics);
    }
}
