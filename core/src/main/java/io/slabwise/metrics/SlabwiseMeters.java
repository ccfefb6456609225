package io.slabwise.metrics;

/**
 * Every meter Slabwise publishes, declared once: its name (lowercase, dotted,
 * under {@code slabwise.}), its type, its base unit and its description.
 * Registries rename them to their own conventions (Prometheus:
 * {@code slabwise_memory_committed_bytes}).
 *
 * <p>All meters carry the tag {@code allocator} (the name given to
 * {@link SlabwiseMetrics}); category meters also carry {@code category}, and
 * {@link #CHUNKS} carries {@code state} ({@code used} or {@code idle}).
 */
public enum SlabwiseMeters {

    /** Bytes live buffers asked for. */
    MEMORY_REQUESTED("slabwise.memory.requested", Type.GAUGE, "bytes",
            "Bytes that live buffers asked for (their capacities)"),
    /** Bytes set aside for live buffers. */
    MEMORY_RESERVED("slabwise.memory.reserved", Type.GAUGE, "bytes",
            "Bytes set aside for live buffers after size-class rounding"),
    /** Native memory held from the OS. */
    MEMORY_COMMITTED("slabwise.memory.committed", Type.GAUGE, "bytes",
            "Native memory the pool holds from the operating system: used, free, cached and idle chunks and huge regions"),
    /** Bytes released by buffers but kept in thread caches. */
    MEMORY_CACHED("slabwise.memory.cached", Type.GAUGE, "bytes",
            "Bytes released by buffers and kept in thread caches and remote-free queues for reuse"),
    /** Free room inside chunks held by sequential allocators and block pools. */
    MEMORY_CARVED_FREE("slabwise.memory.carved.free", Type.GAUGE, "bytes",
            "Bytes free inside chunks held by sequential allocators and block pools: open and spare chunks, retired tails, free blocks"),
    /** The process's resident memory. */
    MEMORY_RESIDENT("slabwise.memory.resident", Type.GAUGE, "bytes",
            "Resident memory of the whole process, as the operating system reports it (absent where it does not)"),
    /** The ceiling on committed bytes. */
    MEMORY_MAX("slabwise.memory.max", Type.GAUGE, "bytes",
            "The ceiling on committed bytes (absent when the pool has none)"),
    /** Pooled chunks by state. */
    CHUNKS("slabwise.chunks", Type.GAUGE, "chunks",
            "Pooled chunks: state=used has something allocated, state=idle is empty and kept for reuse"),
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
    CATEGORY_REQUESTED("slabwise.category.requested", Type.GAUGE, "bytes",
            "Bytes that live buffers of the category asked for"),
    /** Per category: bytes set aside. */
    CATEGORY_RESERVED("slabwise.category.reserved", Type.GAUGE, "bytes",
            "Bytes set aside for live buffers of the category"),
    /** Per category: live buffers. */
    CATEGORY_BUFFERS("slabwise.category.buffers", Type.GAUGE, "buffers",
            "Live buffers of the category"),
    /** Per category: allocations so far. */
    CATEGORY_ALLOCATIONS("slabwise.category.allocations", Type.FUNCTION_COUNTER, "buffers",
            "Buffers allocated for the category since the pool was built");

    /** How a meter is registered. */
    public enum Type {
        /** A gauge: a value sampled when read. */
        GAUGE,
        /** A monotonically increasing count read from the pool. */
        FUNCTION_COUNTER
    }

    private final String meterName;
    private final Type type;
    private final String baseUnit;
    private final String description;

    SlabwiseMeters(String meterName, Type type, String baseUnit, String description) {
        this.meterName = meterName;
        this.type = type;
        this.baseUnit = baseUnit;
        this.description = description;
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
}
