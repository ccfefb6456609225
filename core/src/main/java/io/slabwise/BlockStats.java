package io.slabwise;

/**
 * A snapshot of a {@link BlockPool}.
 *
 * @param category        the category it accounts to
 * @param blockSize       the size of one block
 * @param subBlockSize    the size of one sub-block
 * @param miniBlockSize   the size of one mini-block
 * @param blocks          blocks held: in use whole, cut into sub-blocks, or idle
 * @param liveBlocks      blocks in use as whole blocks (not counting blocks cut into sub-blocks)
 * @param idleBlocks      free blocks kept for reuse
 * @param liveSubBlocks   sub-blocks in use as whole sub-blocks (not counting those cut into mini-blocks)
 * @param freeSubBlocks   free sub-blocks inside the blocks cut into sub-blocks
 * @param liveMiniBlocks  mini-blocks in use
 * @param freeMiniBlocks  free mini-blocks inside the sub-blocks cut into mini-blocks
 */
public record BlockStats(String category, int blockSize, int subBlockSize, int miniBlockSize, long blocks,
                         long liveBlocks, long idleBlocks, long liveSubBlocks, long freeSubBlocks,
                         long liveMiniBlocks, long freeMiniBlocks) {

    /** Bytes of the blocks held, the native memory this block pool holds. */
    public long blockBytes() {
        return blocks * blockSize;
    }

    /** Bytes of free slots of every size inside the blocks held: the block pool's own external fragmentation. */
    public long freeSlotBytes() {
        return idleBlocks * blockSize + freeSubBlocks * subBlockSize + freeMiniBlocks * miniBlockSize;
    }
}
