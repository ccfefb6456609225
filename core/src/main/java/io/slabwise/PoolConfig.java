package io.slabwise;

import java.util.Objects;

/**
 * The settings of a {@link MemoryPool}, immutable. Build one with
 * {@link #builder()}; every setting starts from a {@code slabwise.*} system
 * property when it is set, and from the documented default otherwise.
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>setting</th><th>system property</th><th>default</th></tr>
 *   <tr><td>chunk size</td><td>{@code slabwise.chunkSize}</td><td>4 MiB (a power of two, 64 KiB to 256 MiB)</td></tr>
 *   <tr><td>arenas</td><td>{@code slabwise.arenas}</td><td>2 x available processors</td></tr>
 *   <tr><td>largest cached size</td><td>{@code slabwise.maxCachedSize}</td><td>64 KiB (0 turns thread caches off)</td></tr>
 *   <tr><td>cached bytes per size class</td><td>{@code slabwise.maxCachedBytesPerClass}</td><td>1 MiB</td></tr>
 *   <tr><td>cached entries per size class</td><td>{@code slabwise.maxCachedEntriesPerClass}</td><td>256</td></tr>
 *   <tr><td>idle chunks kept per arena</td><td>{@code slabwise.maxIdleChunksPerArena}</td><td>1</td></tr>
 * </table>
 *
 * The page size is fixed at 8 KiB.
 */
public final class PoolConfig {

    /** The size of a page, the granule of runs. */
    public static final int PAGE_SIZE = 8192;
    static final int MIN_CHUNK_SIZE = 64 * 1024;
    static final int MAX_CHUNK_SIZE = 256 * 1024 * 1024;

    private final int chunkSize;
    private final int arenas;
    private final int maxCachedSize;
    private final int maxCachedBytesPerClass;
    private final int maxCachedEntriesPerClass;
    private final int maxIdleChunksPerArena;
    private final int remoteFreeQueueCapacity;
    private final ChunkSource chunkSource;

    private PoolConfig(Builder b) {
        this.chunkSize = b.chunkSize;
        this.arenas = b.arenas;
        this.maxCachedSize = b.maxCachedSize;
        this.maxCachedBytesPerClass = b.maxCachedBytesPerClass;
        this.maxCachedEntriesPerClass = b.maxCachedEntriesPerClass;
        this.maxIdleChunksPerArena = b.maxIdleChunksPerArena;
        this.remoteFreeQueueCapacity = b.remoteFreeQueueCapacity;
        this.chunkSource = b.chunkSource;
    }

    /** A builder that starts from the system properties and the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** The default configuration (system properties and defaults). */
    public static PoolConfig defaults() {
        return builder().build();
    }

    /** The chunk size in bytes. */
    public int chunkSize() {
        return chunkSize;
    }

    /** The page size in bytes (always {@link #PAGE_SIZE}). */
    public int pageSize() {
        return PAGE_SIZE;
    }

    /** The number of arenas. */
    public int arenas() {
        return arenas;
    }

    /** The largest request a thread cache keeps; 0 when thread caches are off. */
    public int maxCachedSize() {
        return maxCachedSize;
    }

    /** How many bytes a thread cache keeps at most for one size class. */
    public int maxCachedBytesPerClass() {
        return maxCachedBytesPerClass;
    }

    /** How many entries a thread cache keeps at most for one size class. */
    public int maxCachedEntriesPerClass() {
        return maxCachedEntriesPerClass;
    }

    /** How many idle chunks each arena keeps for reuse instead of giving them back. */
    public int maxIdleChunksPerArena() {
        return maxIdleChunksPerArena;
    }

    /** The capacity of each arena's queue of frees from other threads. */
    public int remoteFreeQueueCapacity() {
        return remoteFreeQueueCapacity;
    }

    /** Where native memory comes from. */
    public ChunkSource chunkSource() {
        return chunkSource;
    }

    @Override
    public String toString() {
        return "PoolConfig(chunkSize=" + chunkSize + ", arenas=" + arenas + ", maxCachedSize=" + maxCachedSize
                + ", maxCachedBytesPerClass=" + maxCachedBytesPerClass + ", maxCachedEntriesPerClass=" + maxCachedEntriesPerClass
                + ", maxIdleChunksPerArena=" + maxIdleChunksPerArena + ", chunkSource=" + chunkSource + ')';
    }

    /** Builds a {@link PoolConfig}; each setter validates its argument. */
    public static final class Builder {

        private int chunkSize = intProperty("slabwise.chunkSize", 4 * 1024 * 1024);
        private int arenas = intProperty("slabwise.arenas", 2 * Runtime.getRuntime().availableProcessors());
        private int maxCachedSize = intProperty("slabwise.maxCachedSize", 64 * 1024);
        private int maxCachedBytesPerClass = intProperty("slabwise.maxCachedBytesPerClass", 1024 * 1024);
        private int maxCachedEntriesPerClass = intProperty("slabwise.maxCachedEntriesPerClass", 256);
        private int maxIdleChunksPerArena = intProperty("slabwise.maxIdleChunksPerArena", 1);
        private int remoteFreeQueueCapacity = 4096;
        private ChunkSource chunkSource = ChunkSource.direct();

        private Builder() {
        }

        /** The chunk size: a power of two from 64 KiB to 256 MiB. */
        public Builder chunkSize(int bytes) {
            if (bytes < MIN_CHUNK_SIZE || bytes > MAX_CHUNK_SIZE || Integer.bitCount(bytes) != 1) {
                throw new IllegalArgumentException("chunk size must be a power of two from " + MIN_CHUNK_SIZE
                        + " to " + MAX_CHUNK_SIZE + ": " + bytes);
            }
            this.chunkSize = bytes;
            return this;
        }

        /** The number of arenas, at least 1. */
        public Builder arenas(int count) {
            if (count < 1 || count > 1024) {
                throw new IllegalArgumentException("arenas must be from 1 to 1024: " + count);
            }
            this.arenas = count;
            return this;
        }

        /** The largest request a thread cache keeps; 0 turns thread caches off. */
        public Builder maxCachedSize(int bytes) {
            this.maxCachedSize = requireNonNegative("maxCachedSize", bytes);
            return this;
        }

        /** How many bytes a thread cache keeps at most for one size class. */
        public Builder maxCachedBytesPerClass(int bytes) {
            this.maxCachedBytesPerClass = requireNonNegative("maxCachedBytesPerClass", bytes);
            return this;
        }

        /** How many entries a thread cache keeps at most for one size class. */
        public Builder maxCachedEntriesPerClass(int entries) {
            this.maxCachedEntriesPerClass = requireNonNegative("maxCachedEntriesPerClass", entries);
            return this;
        }

        /** How many idle chunks each arena keeps for reuse. */
        public Builder maxIdleChunksPerArena(int chunks) {
            this.maxIdleChunksPerArena = requireNonNegative("maxIdleChunksPerArena", chunks);
            return this;
        }

        /** The capacity of each arena's queue of frees from other threads (at least 2). */
        public Builder remoteFreeQueueCapacity(int entries) {
            if (entries < 2) {
                throw new IllegalArgumentException("remoteFreeQueueCapacity must be at least 2: " + entries);
            }
            this.remoteFreeQueueCapacity = entries;
            return this;
        }

        /** Where native memory comes from. */
        public Builder chunkSource(ChunkSource source) {
            this.chunkSource = Objects.requireNonNull(source, "chunkSource");
            return this;
        }

        /** Validates the settings together and builds the configuration. */
        public PoolConfig build() {
            chunkSize(chunkSize);
            arenas(arenas);
            return new PoolConfig(this);
        }

        private static int requireNonNegative(String name, int value) {
            if (value < 0) {
                throw new IllegalArgumentException(name + " must not be negative: " + value);
            }
            return value;
        }

        private static int intProperty(String name, int fallback) {
            String value = System.getProperty(name);
            if (value == null || value.isBlank()) {
                return fallback;
            }
            try {
                return Integer.parseInt(value.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("system property " + name + " is not an integer: " + value, e);
            }
        }
    }
}
