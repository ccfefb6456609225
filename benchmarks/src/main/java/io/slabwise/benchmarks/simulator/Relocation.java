package io.slabwise.benchmarks.simulator;

import io.slabwise.CompactionStats;
import io.slabwise.netty.BufferRelocator;

/**
 * What an allocator that can move buffers offers the owners of the
 * {@code -moving} workloads: registering an owner's {@link BufferRelocator}
 * for its category, compacting when an owner chooses to, and what all
 * compactions of the run did. Only Slabwise's dedicated source has one
 * ({@link BufferSource#relocation()}); Netty's allocators and the drop-in
 * never move a buffer.
 *
 * <pre>
 *  owner ── setRelocator("phase", r) ──▶ pool
 *  owner ── compact(occupancy, budget) ──▶ pool ── r.relocate(evacuation) on this thread, for every owner
 *  pool's scheduler (--compaction background) ── the same, once a second, within its budget
 * </pre>
 */
interface Relocation {

    /** Registers the relocator of the owner of {@code category}'s buffers. */
    void setRelocator(String category, BufferRelocator relocator);

    /**
     * Compacts now, on the calling thread: empties the chunks used at most
     * {@code maxOccupancy} of their size, moving at most {@code maxBytesToMove}
     * bytes, by calling every registered relocator.
     */
    CompactionStats compact(double maxOccupancy, long maxBytesToMove);

    /** Every compaction of the allocator so far, added up: the owners', the background's and the ceiling's. */
    CompactionStats totals();
}
