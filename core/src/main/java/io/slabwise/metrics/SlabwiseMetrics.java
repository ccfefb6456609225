package io.slabwise.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.slabwise.CategoryStats;
import io.slabwise.CompactionStats;
import io.slabwise.LimitStats;
import io.slabwise.MemoryLimitException;
import io.slabwise.MemoryPool;
import io.slabwise.PoolStats;
import io.slabwise.PressureStats;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/**
 * Binds a pool's figures to a Micrometer registry: the meters of
 * {@link SlabwiseMeters}, tagged with the allocator name given here.
 *
 * <pre>{@code
 * SlabwiseMetrics.forAllocator(allocator, allocator.pool(), "server").bindTo(registry);
 * new NettyAllocatorMetrics(allocator).bindTo(registry); // Micrometer's own, if wanted: the series join
 * }</pre>
 *
 * <h2>Joining Micrometer's Netty series</h2>
 * Micrometer's {@code NettyAllocatorMetrics} tags its {@code netty.allocator.*}
 * series with {@code id} (the allocator's hash code) and
 * {@code allocator.type} (its class's simple name). Every Slabwise meter
 * carries the same two tags: bound with {@link #forAllocator}, the values
 * that binder gives the allocator; bound with the constructor, those of the
 * pool itself ({@code allocator.type=MemoryPool}).
 *
 * <h2>One snapshot per scrape</h2>
 * Every meter reads a {@link PoolStats} snapshot (with the pool's
 * {@link LimitStats}), and a snapshot visits every arena and category.
 * Instead of one snapshot per meter, the first meter read takes one and the
 * others reuse it for {@value #SNAPSHOT_MILLIS} ms of the pool's
 * {@link io.slabwise.Ticker}, so a
 * scrape costs one snapshot and all its figures come from the same moment.
 * Two scrapes less than that apart may show the same figures. Scrapes that
 * find the snapshot old at the same time take new ones in turn, so the one
 * kept is never older than one kept before it.
 *
 * <h2>Lifetime</h2>
 * The pool is held weakly: binding does not keep it alive, and once it is
 * collected every gauge and the allocation counters read NaN, while the limit
 * counters and timers keep their last counts (counts never go back). The
 * registry holds this binder strongly through every meter (the binder, not
 * the pool, is what its meters observe: a gauge holds it strongly, and a
 * function counter's or timer's function refers to it, since Micrometer
 * holds their object weakly), so the binder needs no other reference,
 * whichever of its meters a registry's filter lets through.
 *
 * <h2>Limits</h2>
 * Refusals and waits are counted per category and limit: {@code kind=ceiling}
 * when the pool has a ceiling, {@code kind=quota} for the categories built
 * with a quota; {@link SlabwiseMeters#LIMIT_WAITING} when it has either.
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
@SuppressWarnings("exports") // Micrometer is an optional automatic module: a user of the binder requires it
public final class SlabwiseMetrics implements MeterBinder {

    /** How long one snapshot serves the meters. */
    static final long SNAPSHOT_MILLIS = 100;

    private static final long SNAPSHOT_NANOS = TimeUnit.MILLISECONDS.toNanos(SNAPSHOT_MILLIS);

    private final WeakReference<MemoryPool> pool;
    private final Tags tags;
    private final LongSupplier nanoClock;
    /** Whether the pool has a ceiling, and which categories a quota: the limit series that can move. */
    private final boolean hasCeiling;
    private final Set<String> quotaCategories;
    /** Guards {@link #registries} and additions to {@link #boundCategories}. */
    private final Object bindLock = new Object();
    private final List<MeterRegistry> registries = new ArrayList<>();
    /** Categories whose meters are in every registry of {@link #registries}; read without the lock. */
    private final Set<String> boundCategories = ConcurrentHashMap.newKeySet();
    /** Held while a snapshot is taken and kept, so that snapshots are kept in the order they were taken. */
    private final Object snapshotLock = new Object();
    private volatile Snapshot snapshot;
    /** The limit counts of the latest snapshot; kept once the pool is gone, so the counts stay where they were. */
    private volatile LimitStats lastLimits;
    /** The pool's compaction totals when last read, kept for the counters once the pool is gone. */
    private volatile CompactionStats lastCompaction = CompactionStats.NONE;
    /** The pool's pressure totals when last read, kept for the counters once the pool is gone. */
    private volatile PressureStats lastPressure = PressureStats.NONE;

    /** A snapshot and the clock reading when it was taken, published together. */
    private record Snapshot(PoolStats stats, LimitStats limits, long takenAt) {
    }

    /**
     * Metrics of {@code pool}, tagged {@code allocator=allocatorName}, and
     * {@code id} and {@code allocator.type} with the pool's own hash code and
     * class name. To join the series of Micrometer's
     * {@code NettyAllocatorMetrics} for the Netty allocator built on the pool,
     * use {@link #forAllocator} instead.
     *
     * @param pool          the pool to observe; held weakly
     * @param allocatorName the value of the {@code allocator} tag, to tell pools apart
     * @param extraTags     further tags for every meter (keep them low-cardinality)
     */
    public SlabwiseMetrics(MemoryPool pool, String allocatorName, Tag... extraTags) {
        this(pool, pool, allocatorName, pool.config().ticker()::read, extraTags);
    }

    /**
     * Metrics of {@code pool}, the pool under {@code allocator}, tagged as
     * Micrometer's {@code NettyAllocatorMetrics} tags that allocator:
     * {@code id} its {@link Object#hashCode()}, {@code allocator.type} its
     * class's simple name; and {@code allocator=allocatorName}. The
     * allocator is not kept: only those two values are.
     *
     * @param allocator     the allocator built on {@code pool}, e.g. a {@code SlabwiseAllocator}
     * @param pool          the pool to observe; held weakly
     * @param allocatorName the value of the {@code allocator} tag, to tell pools apart
     * @param extraTags     further tags for every meter (keep them low-cardinality)
     */
    public static SlabwiseMetrics forAllocator(Object allocator, MemoryPool pool, String allocatorName,
                                               Tag... extraTags) {
        return new SlabwiseMetrics(pool, allocator, allocatorName, pool.config().ticker()::read, extraTags);
    }

    /** As the public constructor, with the clock that ages snapshots (nanoseconds, as a {@link io.slabwise.Ticker} reads). */
    SlabwiseMetrics(MemoryPool pool, String allocatorName, LongSupplier nanoClock, Tag... extraTags) {
        this(pool, pool, allocatorName, nanoClock, extraTags);
    }

    /** As {@link #forAllocator}, with the clock that ages snapshots. */
    SlabwiseMetrics(MemoryPool pool, Object allocator, String allocatorName, LongSupplier nanoClock, Tag... extraTags) {
        this.pool = new WeakReference<>(pool);
        this.tags = Tags.of(SlabwiseMeters.TagKey.ALLOCATOR.key(), allocatorName,
                        SlabwiseMeters.TagKey.ID.key(), String.valueOf(allocator.hashCode()),
                        SlabwiseMeters.TagKey.ALLOCATOR_TYPE.key(), allocator.getClass().getSimpleName())
                .and(extraTags);
        this.nanoClock = nanoClock;
        this.hasCeiling = pool.maxMemory() != Long.MAX_VALUE;
        this.quotaCategories = Set.copyOf(pool.config().quotas().keySet());
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
        if (p != null && hasCeiling) {
            long max = p.maxMemory();
            register(registry, SlabwiseMeters.MEMORY_MAX, tags, pool(s -> max));
        }
        String state = SlabwiseMeters.TagKey.STATE.key();
        register(registry, SlabwiseMeters.CHUNKS, tags.and(state, "used"), pool(s -> s.chunks() - s.idleChunks()));
        register(registry, SlabwiseMeters.CHUNKS, tags.and(state, "idle"), pool(PoolStats::idleChunks));
        register(registry, SlabwiseMeters.FRAGMENTATION_INTERNAL, tags, pool(PoolStats::internalFragmentation));
        register(registry, SlabwiseMeters.FRAGMENTATION_EXTERNAL, tags, pool(PoolStats::externalFragmentation));
        register(registry, SlabwiseMeters.OVERHEAD, tags, pool(PoolStats::overhead));
        if (hasCeiling || !quotaCategories.isEmpty()) {
            register(registry, SlabwiseMeters.LIMIT_WAITING, tags, m -> {
                Snapshot s = m.current();
                return s == null ? Double.NaN : s.limits().waitingAllocations();
            });
        }

        registerCompaction(registry);
        if (hasCeiling) {
            registerPressure(registry);
        }

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

    /**
     * The current snapshot, taken again when older than {@value #SNAPSHOT_MILLIS} ms; null once the pool is gone.
     * Scrapes that find it old at once take a new one in turn, under {@link #snapshotLock}: each kept snapshot is
     * then newer than the one before, so a counter read from it never goes back, and a scrape that waited reuses
     * the snapshot just taken.
     */
    private Snapshot current() {
        long now = nanoClock.getAsLong();
        Snapshot s = snapshot;
        if (s != null && now - s.takenAt() <= SNAPSHOT_NANOS) {
            return s;
        }
        PoolStats stats;
        synchronized (snapshotLock) {
            s = snapshot;
            if (s != null && now - s.takenAt() <= SNAPSHOT_NANOS) {
                return s; // taken while this scrape waited
            }
            MemoryPool p = pool.get();
            if (p == null) {
                snapshot = null;
                return null;
            }
            stats = p.stats();
            LimitStats limits = p.limitStats();
            s = new Snapshot(stats, limits, now);
            snapshot = s;
            lastLimits = limits;
        }
        bindNewCategories(stats);
        return s;
    }

    /** The limit counts of the current snapshot, or the last ones seen once the pool is gone; null if never seen. */
    private LimitStats limits() {
        Snapshot s = current();
        return s != null ? s.limits() : lastLimits;
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
        if (hasCeiling) {
            registerLimit(registry, categoryTags, category, MemoryLimitException.Kind.CEILING);
            registerCategoryPressure(registry, categoryTags, category);
        }
        if (quotaCategories.contains(category)) {
            registerLimit(registry, categoryTags, category, MemoryLimitException.Kind.QUOTA);
        }
    }

    /** The refusal counter and the wait timer of one category at one limit. */
    private void registerLimit(MeterRegistry registry, Tags categoryTags, String category,
                               MemoryLimitException.Kind kind) {
        Tags limitTags = categoryTags.and(SlabwiseMeters.TagKey.KIND.key(), kind.name().toLowerCase(Locale.ROOT));
        register(registry, SlabwiseMeters.LIMIT_REFUSALS, limitTags, m -> {
            LimitStats l = m.limits();
            return l == null ? 0 : l.refusals(category, kind);
        });
        SlabwiseMeters meter = SlabwiseMeters.LIMIT_WAIT;
        ToLongFunction<SlabwiseMetrics> waits = m -> {
            LimitStats l = m.limits();
            return l == null ? 0 : l.waits(category, kind);
        };
        ToDoubleFunction<SlabwiseMetrics> waitNanos = m -> {
            LimitStats l = m.limits();
            return l == null ? 0 : l.waitNanos(category, kind);
        };
        FunctionTimer.builder(meter.meterName(), this, heldCount(waits), held(waitNanos), TimeUnit.NANOSECONDS)
                .description(meter.description())
                .tags(limitTags)
                .register(registry);
    }

    /** The compaction counters and timer, read from the pool's running totals. */
    private void registerCompaction(MeterRegistry registry) {
        register(registry, SlabwiseMeters.COMPACTION_MOVED, tags, m -> m.compactionTotals().movedBytes());
        register(registry, SlabwiseMeters.COMPACTION_MOVED_ENTRIES, tags, m -> m.compactionTotals().movedEntries());
        register(registry, SlabwiseMeters.COMPACTION_FREED, tags, m -> m.compactionTotals().bytesFreed());
        register(registry, SlabwiseMeters.COMPACTION_REFUSED, tags, m -> m.compactionTotals().refusedEntries());
        register(registry, SlabwiseMeters.COMPACTION_HELD_BY_READERS, tags, m -> m.compactionTotals().heldByReaders());
        SlabwiseMeters meter = SlabwiseMeters.COMPACTION;
        FunctionTimer.builder(meter.meterName(), this, heldCount(m -> m.compactionTotals().compactions()),
                        held(m -> m.compactionTotals().nanos()), TimeUnit.NANOSECONDS)
                .description(meter.description())
                .tags(tags)
                .register(registry);
    }

    /** The pool's pressure counters and shrinker timer, read from its running totals. */
    private void registerPressure(MeterRegistry registry) {
        register(registry, SlabwiseMeters.PRESSURE_CROSSINGS, tags, m -> m.pressure().highWatermarkCrossings());
        register(registry, SlabwiseMeters.PRESSURE_GIVEN_BACK, tags, m -> m.pressure().backgroundGivenBack());
        register(registry, SlabwiseMeters.PRESSURE_LIMIT_SHRINKS, tags, m -> m.pressure().limitShrinks());
        register(registry, SlabwiseMeters.PRESSURE_LIMIT_SERVED, tags, m -> m.pressure().limitShrinksServed());
        SlabwiseMeters meter = SlabwiseMeters.PRESSURE_SHRINK;
        FunctionTimer.builder(meter.meterName(), this, heldCount(m -> {
                            long calls = 0;
                            for (PressureStats.CategoryPressure c : m.pressure().categories()) {
                                calls += c.calls();
                            }
                            return calls;
                        }), held(m -> m.pressure().shrinkNanos()), TimeUnit.NANOSECONDS)
                .description(meter.description())
                .tags(tags)
                .register(registry);
    }

    /** One category's shrinker counters; zeros while it has never had a shrinker. */
    private void registerCategoryPressure(MeterRegistry registry, Tags categoryTags, String category) {
        register(registry, SlabwiseMeters.PRESSURE_ASKED, categoryTags, m -> m.shrinker(category).asked());
        register(registry, SlabwiseMeters.PRESSURE_FREED, categoryTags, m -> m.shrinker(category).freed());
        String reason = SlabwiseMeters.TagKey.REASON.key();
        register(registry, SlabwiseMeters.PRESSURE_SKIPPED, categoryTags.and(reason, "busy"),
                m -> m.shrinker(category).busy());
        register(registry, SlabwiseMeters.PRESSURE_SKIPPED, categoryTags.and(reason, "failed"),
                m -> m.shrinker(category).failures());
    }

    /** The pool's pressure totals, or the last ones seen once the pool is gone: counters never go back. */
    private PressureStats pressure() {
        MemoryPool p = pool.get();
        if (p != null) {
            lastPressure = p.pressureStats();
        }
        return lastPressure;
    }

    /** One category's shrinker counts in {@link #pressure()}; zeros when it never had a shrinker. */
    private PressureStats.CategoryPressure shrinker(String category) {
        PressureStats.CategoryPressure c = pressure().category(category);
        return c != null ? c : new PressureStats.CategoryPressure(category, 0, 0, 0, 0, 0);
    }

    /** The pool's compaction totals, or the last ones seen once the pool is gone: counters never go back. */
    private CompactionStats compactionTotals() {
        MemoryPool p = pool.get();
        if (p != null) {
            lastCompaction = p.compactionTotals();
        }
        return lastCompaction;
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
                FunctionCounter.builder(meter.meterName(), this, held(value))
                        .description(meter.description())
                        .baseUnit(meter.baseUnit())
                        .tags(meterTags)
                        .register(registry);
                break;
            default: // timers have two functions: registerLimit
                throw new AssertionError(meter.type());
        }
    }

    /**
     * {@code value} read from this binder, which the function itself refers to:
     * Micrometer holds a function counter's or timer's object weakly and its
     * functions strongly, so the meter keeps this binder alive even where a
     * filter let no gauge through.
     */
    private ToDoubleFunction<SlabwiseMetrics> held(ToDoubleFunction<SlabwiseMetrics> value) {
        return ignored -> value.applyAsDouble(this);
    }

    /** {@link #held(ToDoubleFunction)} for a count. */
    private ToLongFunction<SlabwiseMetrics> heldCount(ToLongFunction<SlabwiseMetrics> value) {
        return ignored -> value.applyAsLong(this);
    }

    /** A pool-wide figure of the current snapshot; NaN once the pool is gone. */
    private static ToDoubleFunction<SlabwiseMetrics> pool(ToDoubleFunction<PoolStats> figure) {
        return m -> {
            Snapshot s = m.current();
            return s == null ? Double.NaN : figure.applyAsDouble(s.stats());
        };
    }

    /** A figure of one category in the current snapshot; NaN once the pool is gone. */
    private static ToDoubleFunction<SlabwiseMetrics> category(String name, ToDoubleFunction<CategoryStats> figure) {
        return m -> {
            Snapshot s = m.current();
            CategoryStats c = s == null ? null : s.stats().category(name);
            return c == null ? Double.NaN : figure.applyAsDouble(c);
        };
    }
}
