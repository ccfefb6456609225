package io.slabwise;

/**
 * A snapshot of a {@link SequentialAllocator}.
 *
 * @param category           the category it accounts to
 * @param chunkSize          the size of its chunks
 * @param chunks             chunks it holds: open, pinned and spare
 * @param openChunks         chunks being carved (at most two per stripe: current and overflow)
 * @param pinnedChunks       retired chunks kept alive by slices not yet released
 * @param spareChunks        emptied chunks kept for the next chunk it needs (0 or 1)
 * @param liveBytes          bytes reserved by live slices (requests rounded to 8 bytes)
 * @param pinnedLiveBytes    the part of {@code liveBytes} that sits in pinned chunks
 * @param wastedTailBytes    tails given up when chunks with live slices were retired, since the start
 * @param slicesCarved       slices carved since the start
 * @param fallbackAllocations requests served by the general pool instead (too large for a slice)
 */
public record SequentialStats(String category, int chunkSize, int chunks, int openChunks, int pinnedChunks,
                              int spareChunks, long liveBytes, long pinnedLiveBytes, long wastedTailBytes,
                              long slicesCarved, long fallbackAllocations) {

    /** Bytes of chunks held by this allocator. */
    public long chunkBytes() {
        return (long) chunks * chunkSize;
    }

    /**
     * How full the pinned chunks are: live bytes in them over their size; 0
     * when none is pinned. A low value means a few long-lived slices hold whole
     * chunks.
     */
    public double pinnedOccupancy() {
        return pinnedChunks == 0 ? 0 : (double) pinnedLiveBytes / ((long) pinnedChunks * chunkSize);
    }
}
