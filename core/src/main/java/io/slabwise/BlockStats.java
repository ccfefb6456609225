package io.slabwise;

/**
 * A snapshot of a {@link BlockPool}.
 *
 * @param category    the category it accounts to
 * @param blockSize   the size of one block
 * @param chunkSize   the size of the chunks blocks are cut from
 * @param chunks      chunks held for blocks
 * @param emptyChunks chunks with every block free, kept for reuse
 * @param liveBlocks  blocks in use
 * @param freeBlocks  free blocks inside the chunks held
 */
public record BlockStats(String category, int blockSize, int chunkSize, int chunks, int emptyChunks,
                         long liveBlocks, long freeBlocks) {

    /** Bytes of chunks held for blocks. */
    public long chunkBytes() {
        return (long) chunks * chunkSize;
    }
}
