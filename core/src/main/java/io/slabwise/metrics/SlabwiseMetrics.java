package io.slabwise.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.slabwise.CategoryStats;
import io.slabwise.MemoryPool;
import io.slabwise.PoolStats;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.ToDoubleFunction;

/**
 * Binds a pool's figures to a Micrometer registry: the meters of
 * {@link SlabwiseMeters}, tagged with the allocator name given here.
 *
 * <pre>{@code
 * new SlabwiseMetrics(allocator.pool(), "server").bindTo(registry);
 * }</pre>
 *
 * <p>The pool is held weakly: binding does not keep it alive, and once it is
 * collected its gauges read NaN. The registry holds this binder strongly, so
 * it needs no other reference. One {@link PoolStats} snapshot serves every
 * meter for {@value #SNAPSHOT_MILLIS} ms, so a scrape takes one snapshot, not
 * one per meter. Categories created after binding get their meters when a
 * snapshot first sees them. Thread-safe.
 */
public final class SlabwiseMetrics implements MeterBinder {

    /** How long one snapshot serves the meters. */
    static final long SNAPSHOT_MILLIS = 100;

    private final WeakReference<MemoryPool> pool;
    private final Tags tags;
    private final LongSupplier nanoClock;
    private final Set<String> boundCategories = ConcurrentHashMap.newKeySet();
    private final List<MeterRegistry> registries = new ArrayList<>();
    private volatile PoolStats snapshot;
    private volatile long snapshotAt;

    /**
     * Metrics of {@code pool}, tagged {@code allocator=allocatorName}.
     *
     * @param extraTags further tags for every meter (keep them low-cardinality)
     */
    public SlabwiseMetrics(MemoryPool pool, String allocatorName, Tag... extraTags) {
        this(pool, allocatorName, System::nanoTime, extraTags);
    }

    SlabwiseMetrics(MemoryPool pool, String allocatorName, LongSupplier nanoClock, Tag... extraTags) {
        this.pool = new WeakReference<>(pool);
        this.tags = Tags.of("allocator", allocatorName).and(extraTags);
        this.nanoClock = nanoClock;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        synchronized (registries) {
            registries.add(registry);
        }
        gauge(registry, SlabwiseMeters.MEMORY_REQUESTED, tags, PoolStats::requestedBytes);
        gauge(registry, SlabwiseMeters.MEMORY_RESERVED, tags, PoolStats::reservedBytes);
        gauge(registry, SlabwiseMeters.MEMORY_COMMITTED, tags, PoolStats::committedBytes);
        gauge(registry, SlabwiseMeters.MEMORY_CACHED, tags, PoolStats::cachedBytes);
        gauge(registry, SlabwiseMeters.MEMORY_CARVED_FREE, tags, PoolStats::carvedFreeBytes);
        MemoryPool p = pool.get();
        PoolStats now = p == null ? null : p.stats(); // not cached: the first scrape must see fresh figures
        if (now != null && now.residentBytes().isPresent()) {
            gauge(registry, SlabwiseMeters.MEMORY_RESIDENT, tags, s -> s.residentBytes().orElse(-1) < 0
                    ? Double.NaN : s.residentBytes().getAsLong());
        }
        if (p != null && p.maxMemory() != Long.MAX_VALUE) {
            long max = p.maxMemory();
            gauge(registry, SlabwiseMeters.MEMORY_MAX, tags, s -> max);
        }
        gauge(registry, SlabwiseMeters.CHUNKS, tags.and("state", "used"), s -> s.chunks() - s.idleChunks());
        gauge(registry, SlabwiseMeters.CHUNKS, tags.and("state", "idle"), PoolStats::idleChunks);
        gauge(registry, SlabwiseMeters.FRAGMENTATION_INTERNAL, tags, PoolStats::internalFragmentation);
        gauge(registry, SlabwiseMeters.FRAGMENTATION_EXTERNAL, tags, PoolStats::externalFragmentation);
        gauge(registry, SlabwiseMeters.OVERHEAD, tags, PoolStats::overhead);
        if (now != null) {
            bindNewCategories(now, List.of(registry));
        }
    }

    private void gauge(MeterRegistry registry, SlabwiseMeters meter, Tags meterTags, ToDoubleFunction<PoolStats> value) {
        Gauge.builder(meter.meterName(), this, m -> m.read(value))
                .strongReference(true) // the registry keeps this binder (not the pool) alive
                .description(meter.description())
                .baseUnit(meter.baseUnit())
                .tags(meterTags)
                .register(registry);
    }

    private double read(ToDoubleFunction<PoolStats> value) {
        PoolStats s = stats();
        return s == null ? Double.NaN : value.applyAsDouble(s);
    }

    /** The current snapshot, taken again when older than {@value #SNAPSHOT_MILLIS} ms; null once the pool is gone. */
    PoolStats stats() {
        long now = nanoClock.getAsLong();
        PoolStats s = snapshot;
        if (s == null || now - snapshotAt > TimeUnit.MILLISECONDS.toNanos(SNAPSHOT_MILLIS)) {
            MemoryPool p = pool.get();
            if (p == null) {
                snapshot = null;
                return null;
            }
            s = p.stats();
            snapshot = s;
            snapshotAt = now;
            List<MeterRegistry> bound;
            synchronized (registries) {
                bound = List.copyOf(registries);
            }
            bindNewCategories(s, bound);
        }
        return s;
    }

    private void bindNewCategories(PoolStats s, List<MeterRegistry> bound) {
        for (CategoryStats c : s.categories()) {
            if (boundCategories.add(c.name())) {
                String name = c.name();
                Tags categoryTags = tags.and("category", name);
                for (MeterRegistry registry : bound) {
                    gauge(registry, SlabwiseMeters.CATEGORY_REQUESTED, categoryTags, st -> categoryValue(st, name, 0));
                    gauge(registry, SlabwiseMeters.CATEGORY_RESERVED, categoryTags, st -> categoryValue(st, name, 1));
                    gauge(registry, SlabwiseMeters.CATEGORY_BUFFERS, categoryTags, st -> categoryValue(st, name, 2));
                    FunctionCounter.builder(SlabwiseMeters.CATEGORY_ALLOCATIONS.meterName(), this,
                                    m -> m.read(st -> categoryValue(st, name, 3)))
                            .description(SlabwiseMeters.CATEGORY_ALLOCATIONS.description())
                            .baseUnit(SlabwiseMeters.CATEGORY_ALLOCATIONS.baseUnit())
                            .tags(categoryTags)
                            .register(registry);
                }
            }
        }
    }

    private static double categoryValue(PoolStats s, String category, int field) {
        CategoryStats c = s.category(category);
        if (c == null) {
            return Double.NaN;
        }
        switch (field) {
            case 0:
                return c.requested();
            case 1:
                return c.reserved();
            case 2:
                return c.liveBuffers();
            default:
                return c.allocations();
        }
    }
}
