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
 * <h2>One snapshot per scrape</h2>
 * Every meter reads a {@link PoolStats} snapshot, and a snapshot visits every
 * arena and category. Instead of one snapshot per meter, the first meter read
 * takes one and the others reuse it for {@value #SNAPSHOT_MILLIS} ms, so a
 * scrape costs one snapshot and all its figures come from the same moment.
 * Two scrapes less than that apart may show the same figures.
 *
 * <h2>Lifetime</h2>
 * The pool is held weakly: binding does not keep it alive, and once it is
 * collected every meter reads NaN. The registry holds this binder strongly
 * (the binder, not the pool, is what its meters observe), so the binder needs
 * no other reference.
 *
 * <h2>Categories</h2>
 * Categories are created as the application goes. Those that exist when
 * binding get their meters then; every later snapshot looks for new ones and
 * registers their meters, in every registry this binder is bound to, so a
 * category created after binding appears from the scrape after the one that
 * first saw it. Categories are few and named by the application, so the
 * {@code category} tag stays low-cardinality.
 *
 * <p>Thread-safe: scrapes may run concurrently with each other, with binding
 * and with the pool's own work.
 */
public final class SlabwiseMetrics implements MeterBinder {

    /** How long one snapshot serves the meters. */
    static final long SNAPSHOT_MILLIS = 100;

    private static final long SNAPSHOT_NANOS = TimeUnit.MILLISECONDS.toNanos(SNAPSHOT_MILLIS);

    private final WeakReference<MemoryPool> pool;
    private final Tags tags;
    private final LongSupplier nanoClock;
    /** Guards {@link #registries} and additions to {@link #boundCategories}. */
    private final Object bindLock = new Object();
    private final List<MeterRegistry> registries = new ArrayList<>();
    /** Categories whose meters are in every registry of {@link #registries}; read without the lock. */
    private final Set<String> boundCategories = ConcurrentHashMap.newKeySet();
    private volatile Snapshot snapshot;

    /** A snapshot and the clock reading when it was taken, published together. */
    private record Snapshot(PoolStats stats, long takenAt) {
    }

    /**
     * Metrics of {@code pool}, tagged {@code allocator=allocatorName}.
     *
     * @param pool          the pool to observe; held weakly
     * @param allocatorName the value of the {@code allocator} tag, to tell pools apart
     * @param extraTags     further tags for every meter (keep them low-cardinality)
     */
    public SlabwiseMetrics(MemoryPool pool, String allocatorName, Tag... extraTags) {
        this(pool, allocatorName, System::nanoTime, extraTags);
    }

    /** As the public constructor, with the clock that ages snapshots (nanoseconds, as {@link System#nanoTime()}). */
    SlabwiseMetrics(MemoryPool pool, String allocatorName, LongSupplier nanoClock, Tag... extraTags) {
        this.pool = new WeakReference<>(pool);
        this.tags = Tags.of(SlabwiseMeters.TagKey.ALLOCATOR.key(), allocatorName).and(extraTags);
        this.nanoClock = nanoClock;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        MemoryPool p = pool.get();
        // Not cached: the first scrape takes its own snapshot rather than serving this one.
        PoolStats now = p == null ? null : p.stats();

        register(registry, SlabwiseMeters.MEMORY_REQUESTED, tags, pool(PoolStats::requestedBytes));
        register(registry, SlabwiseMeters.MEMORY_RESERVED, tags, pool(PoolStats::reservedBytes));
        register(registry, SlabwiseMeters.MEMORY_COMMITTED, tags, pool(PoolStats::committedBytes));
        register(registry, SlabwiseMeters.MEMORY_CACHED, tags, pool(PoolStats::cachedBytes));
        register(registry, SlabwiseMeters.MEMORY_CARVED_FREE, tags, pool(PoolStats::carvedFreeBytes));
        if (now != null && now.residentBytes().isPresent()) {
            register(registry, SlabwiseMeters.MEMORY_RESIDENT, tags,
                    pool(s -> s.residentBytes().isPresent() ? s.residentBytes().getAsLong() : Double.NaN));
        }
        if (p != null && p.maxMemory() != Long.MAX_VALUE) {
            long max = p.maxMemory();
            register(registry, SlabwiseMeters.MEMORY_MAX, tags, pool(s -> max));
        }
        String state = SlabwiseMeters.TagKey.STATE.key();
        register(registry, SlabwiseMeters.CHUNKS, tags.and(state, "used"), pool(s -> s.chunks() - s.idleChunks()));
        register(registry, SlabwiseMeters.CHUNKS, tags.and(state, "idle"), pool(PoolStats::idleChunks));
        register(registry, SlabwiseMeters.FRAGMENTATION_INTERNAL, tags, pool(PoolStats::internalFragmentation));
        register(registry, SlabwiseMeters.FRAGMENTATION_EXTERNAL, tags, pool(PoolStats::externalFragmentation));
        register(registry, SlabwiseMeters.OVERHEAD, tags, pool(PoolStats::overhead));

        synchronized (bindLock) {
            registries.add(registry);
            for (String category : boundCategories) {
                registerCategory(registry, category);
            }
        }
        if (now != null) {
            bindNewCategories(now);
        }
    }

    /** The current snapshot, taken again when older than {@value #SNAPSHOT_MILLIS} ms; null once the pool is gone. */
    PoolStats stats() {
        long now = nanoClock.getAsLong();
        Snapshot s = snapshot;
        if (s != null && now - s.takenAt() <= SNAPSHOT_NANOS) {
            return s.stats();
        }
        MemoryPool p = pool.get();
        if (p == null) {
            snapshot = null;
            return null;
        }
        PoolStats stats = p.stats();
        snapshot = new Snapshot(stats, now);
        bindNewCategories(stats);
        return stats;
    }

    private void bindNewCategories(PoolStats stats) {
        for (CategoryStats c : stats.categories()) {
            if (!boundCategories.contains(c.name())) {
                synchronized (bindLock) {
                    if (boundCategories.add(c.name())) {
                        for (MeterRegistry registry : registries) {
                            registerCategory(registry, c.name());
                        }
                    }
                }
            }
        }
    }

    private void registerCategory(MeterRegistry registry, String category) {
        Tags categoryTags = tags.and(SlabwiseMeters.TagKey.CATEGORY.key(), category);
        register(registry, SlabwiseMeters.CATEGORY_REQUESTED, categoryTags, category(category, CategoryStats::requested));
        register(registry, SlabwiseMeters.CATEGORY_RESERVED, categoryTags, category(category, CategoryStats::reserved));
        register(registry, SlabwiseMeters.CATEGORY_BUFFERS, categoryTags, category(category, CategoryStats::liveBuffers));
        register(registry, SlabwiseMeters.CATEGORY_ALLOCATIONS, categoryTags,
                category(category, CategoryStats::allocations));
    }

    /** Registers {@code meter} as its declared type, reading {@code value} from this binder. */
    private void register(MeterRegistry registry, SlabwiseMeters meter, Tags meterTags,
                          ToDoubleFunction<SlabwiseMetrics> value) {
        switch (meter.type()) {
            case GAUGE:
                Gauge.builder(meter.meterName(), this, value)
                        .strongReference(true) // the registry keeps this binder alive; the binder holds the pool weakly
                        .description(meter.description())
                        .baseUnit(meter.baseUnit())
                        .tags(meterTags)
                        .register(registry);
                break;
            case FUNCTION_COUNTER:
                FunctionCounter.builder(meter.meterName(), this, value)
                        .description(meter.description())
                        .baseUnit(meter.baseUnit())
                        .tags(meterTags)
                        .register(registry);
                break;
            default:
                throw new AssertionError(meter.type());
        }
    }

    /** A pool-wide figure of the current snapshot; NaN once the pool is gone. */
    private static ToDoubleFunction<SlabwiseMetrics> pool(ToDoubleFunction<PoolStats> figure) {
        return m -> {
            PoolStats s = m.stats();
            return s == null ? Double.NaN : figure.applyAsDouble(s);
        };
    }

    /** A figure of one category in the current snapshot; NaN once the pool is gone. */
    private static ToDoubleFunction<SlabwiseMetrics> category(String name, ToDoubleFunction<CategoryStats> figure) {
        return m -> {
            PoolStats s = m.stats();
            CategoryStats c = s == null ? null : s.category(name);
            return c == null ? Double.NaN : figure.applyAsDouble(c);
        };
    }
}
