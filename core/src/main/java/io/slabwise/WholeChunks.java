package io.slabwise;

/**
 * What the cache allocators (the sequential allocator and the block pool)
 * take from the pool: whole chunks lent by the calling thread's arena, block
 * regions of their own from the chunk source, the counting of what they
 * carve, and the general pool for requests they do not carve themselves.
 * Their narrow view of the engine: they see nothing else of the pool.
 */
final class WholeChunks {

    private final ThreadCaches threadCaches;
    private final CommittedMemory committed;
    private final SizeClasses sizes;
    private final GeneralPool generalPool;

    WholeChunks(ThreadCaches threadCaches, CommittedMemory committed, SizeClasses sizes, GeneralPool generalPool) {
        this.threadCaches = threadCaches;
        this.committed = committed;
        this.sizes = sizes;
        this.generalPool = generalPool;
    }

    /** Gives an allocation back as {@link MemoryPool#free} does: for a payload's parts when the payload fails. */
    void free(Allocation allocation) {
        generalPool.free(allocation);
    }

    /** The size of a chunk. */
    int chunkSize() {
        return sizes.chunkSize();
    }

    /**
     * Takes a whole chunk (an idle one if the arena has it). The chunk counts
     * as committed but not as requested or reserved: the cache allocator counts
     * what it carves from it.
     *
     * @throws CeilingReached when a new chunk would pass the ceiling
     */
    void acquireChunk(Allocation out) {
        int wholeClass = sizes.count() - 1;
        threadCaches.current().arena.lendWhole(wholeClass, out);
        out.place(wholeClass, 0, null, 0, 0);
        committed.wholeChunkBytes.addAndGet(sizes.chunkSize());
    }

    /** Gives back a chunk taken with {@link #acquireChunk}. */
    void releaseChunk(Allocation chunk) {
        committed.wholeChunkBytes.addAndGet(-sizes.chunkSize());
        chunk.chunk.arena.takeBackWhole(chunk.chunk, chunk.handle);
        chunk.clear();
    }

    /**
     * Takes a region of {@code size} bytes from the chunk source for a block
     * pool: committed (and held to the ceiling) like a chunk, with no page
     * structure, so it goes back to the operating system on its own.
     *
     * @throws CeilingReached when that would pass the ceiling
     */
    void acquireBlockRegion(int size, Allocation out) {
        Chunk region = new Chunk(threadCaches.current().arena, committed.commit(size, CommittedMemory.RegionKind.BLOCK));
        committed.blockRegionBytes.addAndGet(size);
        committed.wholeChunkBytes.addAndGet(size);
        out.chunk = region;
        out.handle = 0;
        out.place(-1, 0, null, 0, 0);
    }

    /** Gives back a region taken with {@link #acquireBlockRegion}. */
    void releaseBlockRegion(Allocation region) {
        int size = region.chunk.chunkSize();
        committed.blockRegionBytes.addAndGet(-size);
        committed.wholeChunkBytes.addAndGet(-size);
        committed.decommit(region.chunk.region);
        region.clear();
    }

    /**
     * Marks a block region as being emptied by a compaction, or unmarks it
     * (and counts it so in its region group); idempotent, any thread.
     *
     * @return whether this call changed the mark
     */
    boolean evacuateBlock(Chunk block, boolean on) {
        synchronized (block) {
            if (block.evacuating == on) {
                return false;
            }
            block.evacuating = on;
            committed.evacuating(block.region, on);
            return true;
        }
    }

    /** Counts an allocation carved on the calling thread from one of the whole chunks or blocks. */
    void countCarved(Category category, int requested, int reserved, Allocation out) {
        threadCaches.current().countAllocation(category, requested, reserved, true, out);
    }

    /** One try at the general pool, for a request too large to carve. */
    int tryGeneralPool(Category category, int requested, Allocation out) {
        return generalPool.attempt.tryOnce(category, requested, out);
    }

    /** What a request of {@code requested} bytes reserves in the general pool (see {@link Attempt#leastReserved}). */
    long generalPoolReserves(int requested) {
        return generalPool.attempt.leastReserved(requested);
    }
}
