package io.slabwise;

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
 *                 regions += region
 * </pre>
 *
 * <p>Committed bytes are the limit's atomic counter. The set of regions held
 * is what the cleaner of a pool dropped without {@code close()} frees
 * ({@link #reclaimerOnCollection()}); it refers to this object's set and
 * source, never to the pool. Any thread.
 */
final class CommittedMemory {

    private static final System.Logger LOGGER = System.getLogger(CommittedMemory.class.getName());

    private final ChunkSource source;
    private final MemoryLimit limit;
    private final Set<NativeRegion> regions = ConcurrentHashMap.newKeySet();
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
     * Takes {@code size} bytes from the chunk source. Whatever the chunk
     * source throws leaves the committed bytes as they were.
     *
     * @throws CeilingReached when that would pass the ceiling
     */
    NativeRegion commit(int size) {
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
        regions.add(region);
        return region;
    }

    /** Gives a region taken with {@link #commit} back to the chunk source. */
    void decommit(NativeRegion region) {
        regions.remove(region);
        source.release(region);
        limit.uncommit(region.size());
    }

    /** The work of a cleaner for a pool collected without {@code close()}: gives back every region still held. */
    Runnable reclaimerOnCollection() {
        return new Reclaimer(regions, source);
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
