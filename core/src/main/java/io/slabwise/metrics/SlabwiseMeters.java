package io.slabwise.metrics;

import io.micrometer.core.instrument.binder.BaseUnits;

import java.util.List;

/**
 * Every meter Slabwise publishes, declared once: its name (lowercase, dotted,
 * under {@code slabwise.}), its type, its base unit, its description and its
 * tag keys. {@link SlabwiseMetrics} registers exactly these; registries rename
 * them to their own conventions (Prometheus:
 * {@code slabwise_memory_committed_bytes}).
 *
 * <p>Every meter carries {@link TagKey#ALLOCATOR}, the name given to
 * {@link SlabwiseMetrics}, and the two tags Micrometer's own
 * {@code NettyAllocatorMetrics} puts on its {@code netty.allocator.*} series:
 * {@link TagKey#ID} and {@link TagKey#ALLOCATOR_TYPE}. Bound with
 * {@link SlabwiseMetrics#forAllocator}, both take the values that binder gives
 * the same allocator, so the two sets of series join on them. Category meters
 * also carry {@link TagKey#CATEGORY} (one series per category: a handful,
 * named by the application), {@link #CHUNKS} carries {@link TagKey#STATE}
 * ({@code used} or {@code idle}), and the limit meters {@link TagKey#KIND}
 * ({@code ceiling} or {@code quota}). No tag takes per-buffer or per-thread
 * values.
 *
 * <p>The ratios are named as ratios ({@code ....ratio}) and have no base unit;
 * {@link #OVERHEAD} reads NaN while nothing is requested, as it has no value
 * then. {@link #LIMIT_WAIT} is a timer: its count is the number of waits, its
 * total the time spent waiting, in the registry's base time unit; so is
 * {@link #COMPACTION}, for compactions. The compaction meters read the pool's
 * running totals ({@code MemoryPool.compactionTotals()}), not a snapshot.
 */
public enum SlabwiseMeters {

    /** Bytes live buffers asked for. */
    MEMORY_REQUESTED("slabwise.memory.requested", Type.GAUGE, BaseUnits.BYTES,
            "Bytes that live buffers asked for (their capacities)"),
    /** Bytes set aside for live buffers. */
    MEMORY_RESERVED("slabwise.memory.reserved", Type.GAUGE, BaseUnits.BYTES,
            "Bytes set aside for live buffers after size-class rounding"),
    /** Native memory held from the OS. */
    MEMORY_COMMITTED("slabwise.memory.committed", Type.GAUGE, BaseUnits.BYTES,
            "Native memory the pool holds from the operating system: used, free, cached and idle chunks and huge regions"),
    /** Bytes released by buffers but kept in thread caches. */
    MEMORY_CACHED("slabwise.memory.cached", Type.GAUGE, BaseUnits.BYTES,
            "Bytes released by buffers and kept in thread caches and remote-free queues for reuse"),
    /** Free room inside chunks held by sequential allocators and block pools. */
    MEMORY_CARVED_FREE("slabwise.memory.carved.free", Type.GAUGE, BaseUnits.BYTES,
            "Bytes free inside chunks held by sequential allocators and block pools: open and spare chunks, retired tails, free blocks"),
    /** The process's resident memory; registered only where the platform reports it. */
    MEMORY_RESIDENT("slabwise.memory.resident", Type.GAUGE, BaseUnits.BYTES,
            "Resident memory of the whole process, as the operating system reports it (absent where it does not)"),
    /** The ceiling on committed bytes; registered only when the pool has one. */
    MEMORY_MAX("slabwise.memory.max", Type.GAUGE, BaseUnits.BYTES,
            "The ceiling on committed bytes (absent when the pool has none)"),
    /** Pooled chunks by state. */
    CHUNKS("slabwise.chunks", Type.GAUGE, "chunks",
            "Pooled chunks: state=used has something allocated, state=idle is empty and kept for reuse",
            TagKey.STATE),
    /** 1 - requested/reserved. */
    FRAGMENTATION_INTERNAL("slabwise.fragmentation.internal.ratio", Type.GAUGE, null,
            "Internal fragmentation, 1 - requested/reserved: what size-class rounding wastes (0 when nothing is live)"),
    /** 1 - reserved/committed. */
    FRAGMENTATION_EXTERNAL("slabwise.fragmentation.external.ratio", Type.GAUGE, null,
            "External fragmentation, 1 - reserved/committed: committed memory not set aside for live buffers"
                    + " (0 when nothing is committed)"),
    /** committed/requested; NaN while nothing is requested. */
    OVERHEAD("slabwise.overhead.ratio", Type.GAUGE, null,
            "Native bytes held per byte asked for, committed/requested (NaN while nothing is requested)"),
    /** Allocations waiting at a limit now; registered only when the pool has a ceiling or a quota. */
    LIMIT_WAITING("slabwise.limit.waiting", Type.GAUGE, "allocations",
            "Allocations waiting for memory at the ceiling or a quota right now (absent when the pool has neither)"),
    /** Per category: bytes asked for. */
    CATEGORY_REQUESTED("slabwise.category.requested", Type.GAUGE, BaseUnits.BYTES,
            "Bytes that live buffers of the category asked for", TagKey.CATEGORY),
    /** Per category: bytes set aside. */
    CATEGORY_RESERVED("slabwise.category.reserved", Type.GAUGE, BaseUnits.BYTES,
            "Bytes set aside for live buffers of the category", TagKey.CATEGORY),
    /** Per category: live buffers. */
    CATEGORY_BUFFERS("slabwise.category.buffers", Type.GAUGE, BaseUnits.BUFFERS,
            "Live buffers of the category", TagKey.CATEGORY),
    /** Per category: allocations so far. */
    CATEGORY_ALLOCATIONS("slabwise.category.allocations", Type.FUNCTION_COUNTER, BaseUnits.BUFFERS,
            "Buffers allocated for the category since the pool was built", TagKey.CATEGORY),
    /**
     * Per category and limit: refused allocations so far. {@code kind=ceiling}
     * is registered when the pool has a ceiling, {@code kind=quota} for the
     * categories with a quota.
     */
    LIMIT_REFUSALS("slabwise.limit.refusals", Type.FUNCTION_COUNTER, "refusals",
            "Allocations of the category refused at the limit since the pool was built: returned nothing or threw"
                    + " MemoryLimitException, at once or after waiting",
            TagKey.CATEGORY, TagKey.KIND),
    /**
     * Per category and limit: waits for memory so far and their time; for the
     * same series as {@link #LIMIT_REFUSALS}.
     */
    LIMIT_WAIT("slabwise.limit.wait", Type.FUNCTION_TIMER, null,
            "Waits of the category's allocations for memory at the limit, counted when over (served, timed out,"
                    + " interrupted or closed), and the time they took",
            TagKey.CATEGORY, TagKey.KIND),
    /** Compactions so far and the time they took (choosing and moving). */
    COMPACTION("slabwise.compaction", Type.FUNCTION_TIMER, null,
            "Compactions (explicit, background and at the ceiling) since the pool was built, and the time they took"),
    /** Bytes of relocatable entries moved by compactions. */
    COMPACTION_MOVED("slabwise.compaction.moved", Type.FUNCTION_COUNTER, BaseUnits.BYTES,
            "Bytes of live entries their owners moved to new memory during compactions (each copied once)"),
    /** Entries moved by compactions. */
    COMPACTION_MOVED_ENTRIES("slabwise.compaction.moved.entries", Type.FUNCTION_COUNTER, "entries",
            "Live entries their owners moved to new memory during compactions"),
    /** Bytes of chunks and blocks that compactions emptied. */
    COMPACTION_FREED("slabwise.compaction.freed", Type.FUNCTION_COUNTER, BaseUnits.BYTES,
            "Bytes of chunks and blocks that compactions emptied and gave back"),
    /** Entries that stayed where they were. */
    COMPACTION_REFUSED("slabwise.compaction.refused", Type.FUNCTION_COUNTER, "entries",
            "Entries in chunks being emptied that stayed: their owner kept them (in use), or a limit or the budget did"),
    /** Moved entries whose old memory readers still held. */
    COMPACTION_HELD_BY_READERS("slabwise.compaction.held.by.readers", Type.FUNCTION_COUNTER, "entries",
            "Moved entries whose old memory readers still held, so that their chunk went back only when they let go"),
    /** Times committed memory crossed the high watermark and background shrinking began; with a ceiling. */
    PRESSURE_CROSSINGS("slabwise.pressure.crossings", Type.FUNCTION_COUNTER, "crossings",
            "Times committed memory was found above the high watermark and the pool began asking shrinkers"),
    /** Committed bytes that fell while the background asked shrinkers; with a ceiling. */
    PRESSURE_GIVEN_BACK("slabwise.pressure.given.back", Type.FUNCTION_COUNTER, BaseUnits.BYTES,
            "Committed bytes that fell during background shrinking, by the pool's own accounting"),
    /** Allocations at the ceiling or a quota that asked shrinkers before their policy applied; with a ceiling. */
    PRESSURE_LIMIT_SHRINKS("slabwise.pressure.limit.shrinks", Type.FUNCTION_COUNTER, "allocations",
            "Allocations at the ceiling or a quota that asked shrinkers for memory before their policy applied"),
    /** Of those, the ones served after shrinking. */
    PRESSURE_LIMIT_SERVED("slabwise.pressure.limit.served", Type.FUNCTION_COUNTER, "allocations",
            "Allocations at a limit that were served after shrinkers freed memory"),
    /** Shrinker calls and the time they took, every category and cause; with a ceiling. */
    PRESSURE_SHRINK("slabwise.pressure.shrink", Type.FUNCTION_TIMER, null,
            "Calls of the caches' shrinkers (background, at the ceiling, at a quota) and the time they took"),
    /** Per category: bytes the pool asked its shrinker to free. */
    PRESSURE_ASKED("slabwise.pressure.asked", Type.FUNCTION_COUNTER, BaseUnits.BYTES,
            "Bytes the pool asked the category's shrinker to free", TagKey.CATEGORY),
    /** Per category: bytes its shrinker answered it freed. */
    PRESSURE_FREED("slabwise.pressure.freed", Type.FUNCTION_COUNTER, BaseUnits.BYTES,
            "Bytes the category's shrinker answered it freed", TagKey.CATEGORY),
    /** Per category: calls its shrinker answered busy, or that threw. */
    PRESSURE_SKIPPED("slabwise.pressure.skipped", Type.FUNCTION_COUNTER, "calls",
            "Calls of the category's shrinker that freed nothing because it was busy (reason=busy) or threw"
                    + " (reason=failed)", TagKey.CATEGORY, TagKey.REASON);

    /** How a meter is registered. */
    public enum Type {
        /** A {@code Gauge}: a value sampled when read. */
        GAUGE,
        /** A {@code FunctionCounter}: a monotonically increasing count read from the pool. */
        FUNCTION_COUNTER,
        /** A {@code FunctionTimer}: a count and a total time read from the pool; its unit is the registry's. */
        FUNCTION_TIMER
    }

    /** The tag keys the meters use; every value set they take is small. */
    public enum TagKey {
        /** The name the application gave the pool when binding it; on every meter. */
        ALLOCATOR("allocator"),
        /**
         * The allocator's hash code, as Micrometer's {@code NettyAllocatorMetrics}
         * tags it ({@code id}); the pool's when bound without an allocator. On every meter.
         */
        ID("id"),
        /**
         * The allocator's class simple name, as {@code NettyAllocatorMetrics}
         * tags it ({@code allocator.type}, {@code allocator_type} in Prometheus);
         * {@code MemoryPool} when bound without an allocator. On every meter.
         */
        ALLOCATOR_TYPE("allocator.type"),
        /** The category's name, e.g. {@code network}, {@code log_cache}. */
        CATEGORY("category"),
        /** A chunk's state: {@code used} or {@code idle}. */
        STATE("state"),
        /** The limit: {@code ceiling} (the pool's, on committed bytes) or {@code quota} (the category's, on reserved bytes). */
        KIND("kind"),
        /** Why a shrinker call freed nothing: {@code busy} or {@code failed}. */
        REASON("reason");

        private final String key;

        TagKey(String key) {
            this.key = key;
        }

        /** The key as it appears on the meter. */
        public String key() {
            return key;
        }
    }

    private final String meterName;
    private final Type type;
    private final String baseUnit;
    private final String description;
    private final List<TagKey> tagKeys;

    SlabwiseMeters(String meterName, Type type, String baseUnit, String description, TagKey... extraTagKeys) {
        this.meterName = meterName;
        this.type = type;
        this.baseUnit = baseUnit;
        this.description = description;
        TagKey[] common = {TagKey.ALLOCATOR, TagKey.ID, TagKey.ALLOCATOR_TYPE}; // on every meter
        TagKey[] keys = new TagKey[common.length + extraTagKeys.length];
        System.arraycopy(common, 0, keys, 0, common.length);
        System.arraycopy(extraTagKeys, 0, keys, common.length, extraTagKeys.length);
        this.tagKeys = List.of(keys);
    }

    /** The meter's name. */
    public String meterName() {
        return meterName;
    }

    /** How the meter is registered. */
    public Type type() {
        return type;
    }

    /** The base unit; null for a ratio, and for a timer, whose unit is the registry's base time unit. */
    public String baseUnit() {
        return baseUnit;
    }

    /** The description every registration carries. */
    public String description() {
        return description;
    }

    /**
     * The tag keys of the meter: {@link TagKey#ALLOCATOR}, {@link TagKey#ID}
     * and {@link TagKey#ALLOCATOR_TYPE} first; tags the application adds when
     * binding come on top.
     */
    public List<TagKey> tagKeys() {
        return tagKeys;
    }
}
