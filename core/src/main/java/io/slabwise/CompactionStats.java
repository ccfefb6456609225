package io.slabwise;

/**
 * What one compaction did, or (from {@link MemoryPool#compactionTotals()}) all
 * compactions of a pool together.
 *
 * @param compactions        how many compactions these figures cover (0 or 1 for one compaction, unless it found nothing)
 * @param chunksEvacuated    chunks and blocks chosen to be emptied
 * @param chunksFreed        of those, the ones that emptied and left the pool, as many as {@code bytesFreed} covers
 * @param bytesFreed         the bytes by which the compaction lowered committed memory: what it gave back to the
 *                           operating system less what its moves took, never below 0; a chunk emptied into new
 *                           memory, or kept as an allocator's spare, frees nothing
 * @param movedEntries       entries moved to new memory
 * @param movedBytes         their bytes (requested): copied once each
 * @param refusedEntries     entries the owners would not move (in use), or that a limit or the budget kept in place
 * @param heldByReaders      moved entries whose old memory readers still held when the owner let go; their chunk goes
 *                           back when the last reader releases
 * @param nanos              time spent, choosing and moving, as the pool's {@link Ticker} measures it
 */
public record CompactionStats(long compactions, long chunksEvacuated, long chunksFreed, long bytesFreed,
                              long movedEntries, long movedBytes, long refusedEntries, long heldByReaders, long nanos) {

    /** Nothing done. */
    public static final CompactionStats NONE = new CompactionStats(0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** Bytes copied for every byte given back: the cost of the compaction; 0 when nothing was given back. */
    public double movedPerFreedByte() {
        return bytesFreed == 0 ? 0 : (double) movedBytes / bytesFreed;
    }

    /** These figures and {@code other}'s added up. */
    public CompactionStats plus(CompactionStats other) {
        return new CompactionStats(compactions + other.compactions, chunksEvacuated + other.chunksEvacuated,
                chunksFreed + other.chunksFreed, bytesFreed + other.bytesFreed, movedEntries + other.movedEntries,
                movedBytes + other.movedBytes, refusedEntries + other.refusedEntries,
                heldByReaders + other.heldByReaders, nanos + other.nanos);
    }

    @Override
    public String toString() {
        return "compaction: " + chunksFreed + " of " + chunksEvacuated + " chunks freed (" + bytesFreed + " B), "
                + movedEntries + " entries moved (" + movedBytes + " B), " + refusedEntries + " refused, "
                + heldByReaders + " held by readers, " + nanos / 1_000_000 + " ms";
    }
}
