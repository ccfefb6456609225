package io.slabwise;

import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The native memory a pool holds from its chunk source: the only place a
 * region is taken or given back, so the ceiling is enforced here and every
 * region still held is known.
 *
 * <pre>
 *  commit(size) ── limit.tryCommit ──no──▶ CeilingReached
 *                        │yes
 *                        ▼
 *                 chunkSource.allocate ──throws──▶ limit.uncommit, rethrow (nothing changed)
 *                        │
 *                        ▼
 *                 regions += region, with its kind ──▶ JFR io.slabwise.ChunkCommitted
 * </pre>
 *
 * <p>Committed bytes are the limit's atomic counter. The regions held, each
 * with its {@link RegionKind}, are what the cleaner of a pool dropped without
 * {@code close()} frees ({@link #reclaimerOnCollection()}); it refers to this
 * object's map and source, never to the pool. A region given back
 * ({@link #decommit}) is reported as {@code io.slabwise.ChunkReleased} with the
 * kind it was committed as. Both events are on the slow path only (see
 * {@link PoolEvents}). Any thread.
 */
final class CommittedMemory {

    private static final System.Logger LOGGER = System.getLogger(CommittedMemory.class.getName());

    /** What a region is for; named in the JFR events. */
    enum RegionKind {
        /** A pooled chunk, carved by an arena. */
        CHUNK,
        /** One request larger than a chunk. */
        HUGE,
        /** A block region of a block pool. */
        BLOCK;

        /** The lowercase name, as the events show it. */
        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final ChunkSource source;
    private final MemoryLimit limit;
    /** The chunk size, to tell a chunk from a block region when a caller does not say; 0 when unknown. */
    private final ConcurrentHashMap<NativeRegion, RegionKind> regions = new ConcurrentHashMap<>();
    /** Bytes of chunks and block regions handed out whole to sequential allocators and block pools. */
    final AtomicLong wholeChunkBytes = new AtomicLong();
    /** Bytes and count of huge regions (requests larger than a chunk). */
    final AtomicLong hugeBytes = new AtomicLong();
    final AtomicLong hugeCount = new AtomicLong();
    /** Bytes of the block regions block pools hold, in use or idle. */
    final AtomicLong blockRegionBytes = new AtomicLong();

    CommittedMemory(ChunkSource source, MemoryLimit limit) {
        this.source = source;
        this.limit = limit;
    }

    /** Native memory currently taken from the chunk source. */
    long committed() {
        return limit.committed();
    }

    /**
     * What the pool holds by kind, read one figure after another.
     *
     * @param hugeBytes        bytes of huge regions (requests larger than a chunk)
     * @param hugeCount        live huge regions
     * @param blockRegionBytes bytes of the block regions block pools hold, in use or idle
     * @param wholeChunkBytes  bytes of chunks and block regions lent whole to the cache allocators
     */
    record Figures(long hugeBytes, long hugeCount, long blockRegionBytes, long wholeChunkBytes) {
    }

    /** The figures by kind, for a snapshot. */
    Figures figures() {
        return new Figures(hugeBytes.get(), hugeCount.get(), blockRegionBytes.get(), wholeChunkBytes.get());
    }

    /**
     * Takes {@code size} bytes from the chunk source for a region of that
     * kind. Whatever the chunk source throws leaves the committed bytes as they
     * were.
     *
     * @throws CeilingReached when that would pass the ceiling
     */
    NativeRegion commit(int size, RegionKind kind) {
        if (!limit.tryCommit(size)) {
            throw CeilingReached.INSTANCE;
        }
        NativeRegion region;
        try {
            region = source.allocate(size);
        } catch (RuntimeException | Error e) {
            limit.uncommit(size);
            throw e;
        }
        if (region.size() != size) {
            source.release(region);
            limit.uncommit(size);
            throw new IllegalStateException("chunk source returned " + region.size() + " bytes for " + size);
        }
        regions.put(region, kind);
        PoolEvents.chunkCommitted(size, kind, limit.committed());
        return region;
    }

    /** Gives a region taken with {@link #commit} back to the chunk source. */
    void decommit(NativeRegion region) {
        RegionKind kind = regions.remove(region);
        source.release(region);
        limit.uncommit(region.size());
        PoolEvents.chunkReleased(region.size(), kind != null ? kind : RegionKind.CHUNK, limit.committed());
    }

    /** The work of a cleaner for a pool collected without {@code close()}: gives back every region still held. */
    Runnable reclaimerOnCollection() {
        return new Reclaimer(regions.keySet(), source);
    }

    /** Refers to the regions and the source only, so that it does not keep the pool reachable. */
    private static final class Reclaimer implements Runnable {
        private final Set<NativeRegion> regions;
        private final ChunkSource source;

        Reclaimer(Set<NativeRegion> regions, ChunkSource source) {
            this.regions = regions;
            this.source = source;
        }

        @Override
        public void run() {
            for (NativeRegion region : regions) {
                try {
                    source.release(region);
                } catch (RuntimeException e) {
                    LOGGER.log(System.Logger.Level.WARNING, "could not give back a region of a dropped pool", e);
                }
            }
            regions.clear();
        }
    }
}
