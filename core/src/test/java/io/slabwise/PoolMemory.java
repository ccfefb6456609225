package io.slabwise;

/**
 * The {@link CommittedMemory} behind a pool, for tests that check a pool's
 * accounting: with region groups, committed bytes are the regions handed out
 * plus the room left in their groups; and a source for pools without region
 * groups.
 */
final class PoolMemory {

    private PoolMemory() {
    }

    /** The pool's committed memory. */
    static CommittedMemory of(MemoryPool pool) {
        return pool.committed;
    }

    /** Bytes of the regions the pool holds (chunks, huge regions, block regions), room in groups not included. */
    static long regionBytes(MemoryPool pool) {
        return of(pool).regionBytes();
    }

    /**
     * Direct memory through a source of the caller's own, which the pool
     * never carves from region groups (only the built-in source is): each
     * chunk or block is a region of its own, so committed bytes drop by a
     * chunk as soon as one goes back, and compaction chooses chunk by chunk.
     */
    static ChunkSource chunkByChunk() {
        return new ChunkSource() {
            @Override
            public NativeRegion allocate(int size) {
                return ChunkSource.direct().allocate(size);
            }

            @Override
            public void release(NativeRegion region) {
                ChunkSource.direct().release(region);
            }
        };
    }
}
