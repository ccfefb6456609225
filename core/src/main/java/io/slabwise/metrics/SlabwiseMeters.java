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
 * <p>Every meter carries the tag {@link TagKey#ALLOCATOR}, the name given to
 * {@link SlabwiseMetrics}. Category meters also carry {@link TagKey#CATEGORY}
 * (one series per category: a handful, named by the application), and
 * {@link #CHUNKS} carries {@link TagKey#STATE} ({@code used} or {@code idle}).
 * No tag takes per-buffer or per-thread values.
 *
 * <p>The ratios ({@link #FRAGMENTATION_INTERNAL}, {@link #FRAGMENTATION_EXTERNAL},
 * {@link #OVERHEAD}) have no base unit.
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
    FRAGMENTATION_INTERNAL("slabwise.fragmentation.internal", Type.GAUGE, null,
            "Internal fragmentation, 1 - requested/reserved: what size-class rounding wastes"),
    /** 1 - reserved/committed. */
    FRAGMENTATION_EXTERNAL("slabwise.fragmentation.external", Type.GAUGE, null,
            "External fragmentation, 1 - reserved/committed: committed memory not set aside for live buffers"),
    /** committed/requested. */
    OVERHEAD("slabwise.overhead", Type.GAUGE, null,
            "Native bytes held per byte asked for, committed/requested"),
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
            "Buffers allocated for the category since the pool was built", TagKey.CATEGORY);

    /** How a meter is registered. */
    public enum Type {
        /** A {@code Gauge}: a value sampled when read. */
        GAUGE,
        /** A {@code FunctionCounter}: a monotonically increasing count read from the pool. */
        FUNCTION_COUNTER
    }

    /** The tag keys the meters use; every value set they take is small. */
    public enum TagKey {
        /** The name the application gave the pool when binding it; on every meter. */
        ALLOCATOR("allocator"),
        /** The category's name, e.g. {@code network}, {@code log_cache}. */
        CATEGORY("category"),
        /** A chunk's state: {@code used} or {@code idle}. */
        STATE("state");

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
        TagKey[] keys = new TagKey[extraTagKeys.length + 1];
        keys[0] = TagKey.ALLOCATOR;
        System.arraycopy(extraTagKeys, 0, keys, 1, extraTagKeys.length);
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

    /** The base unit, or null for a ratio. */
    public String baseUnit() {
        return baseUnit;
    }

    /** The description every registration carries. */
    public String description() {
        return description;
    }

    /**
     * The tag keys of the meter, {@link TagKey#ALLOCATOR} first; tags the
     * application adds when binding come on top.
     */
    public List<TagKey> tagKeys() {
        return tagKeys;
    }
}
