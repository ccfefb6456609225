package io.slabwise;

/**
 * A snapshot of a {@link BlockPool}.
 *
 * @param category        the category it accounts to
 * @param blockSize       the size of one block
 * @param subBlockSize    the size of one sub-block
 * @param chunkSize       the size of the chunks blocks and sub-blocks are cut from
 * @param chunks          chunks held, cut into blocks
 * @param liveBlocks      blocks in use as whole blocks (not counting blocks cut into sub-blocks)
 * @param freeBlocks      free blocks inside the chunks held
 * @param liveSubBlocks   sub-blocks in use
 * @param freeSubBlocks   free sub-blocks inside the chunks held
 */
public record BlockStats(String category, int blockSize, int subBlockSize, int chunkSize, int chunks,
                         long liveBlocks, long freeBlocks, long liveSubBlocks, long freeSubBlocks) {

    /** Bytes of chunks held for blocks and sub-blocks. */
    public long chunkBytes() {
        return (long) chunks * chunkSize;
    }

    /** Bytes of free blocks and sub-blocks inside the chunks held: the block pool's own external fragmentation. */
    public long freeSlotBytes() {
        return freeBlocks * blockSize + freeSubBlocks * subBlockSize;
    }
}
