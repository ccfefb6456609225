package io.slabwise;

/**
 * One arena's figures at one moment, taken under its lock.
 *
 * @param index            the arena's number
 * @param threads          threads whose caches are bound to it
 * @param chunks           pooled chunks it holds (huge regions excluded)
 * @param idleChunks       chunks with nothing allocated, kept for reuse
 * @param usedBytes        bytes handed out of its chunks, to live buffers or thread caches
 * @param chunkBytes       bytes of its chunks
 * @param chunksAllocated  chunks it ever took from the chunk source
 * @param chunksReleased   chunks it ever gave back
 * @param chunksByOccupancy its chunks per band of occupancy, as {@link PoolStats#chunksByOccupancy()} gives them
 */
record ArenaSnapshot(int index, int threads, int chunks, int idleChunks, long usedBytes, long chunkBytes,
                     long chunksAllocated, long chunksReleased, int[] chunksByOccupancy) {
}
