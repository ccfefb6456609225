package io.slabwise;

import java.util.function.Consumer;

/**
 * An arena's chunks by how much of them is handed out, in six bands, each a
 * count and an intrusive doubly linked list through the chunks' own links:
 *
 * <pre>
 *  band 0 idle ── band 1 under 25% ── band 2 25-50% ── band 3 50-75% ── band 4 75% up to full ── band 5 full
 *  counts[b]: chunks in band b        heads[b] ──▶ chunk ⇄ chunk ⇄ ...
 * </pre>
 *
 * A chunk moves between bands in O(1) as it fills and drains
 * ({@link Chunk#occupancyBandOf}), so a snapshot reads six counts, and a
 * compaction looking for sparse chunks visits only the low bands, never the
 * full chunks of a large pool. Not thread-safe: the arena's lock guards it.
 */
final class OccupancyBands {

    /** Bands: idle, under 25%, 25-50%, 50-75%, 75% up to full, full. */
    static final int COUNT = 6;

    private final int[] counts = new int[COUNT];
    private final Chunk[] heads = new Chunk[COUNT];

    /** Adds {@code chunk} to the band it names ({@link Chunk#occupancyBand}). */
    void add(Chunk chunk) {
        int band = chunk.occupancyBand;
        counts[band]++;
        Chunk head = heads[band];
        chunk.bandPrev = null;
        chunk.bandNext = head;
        if (head != null) {
            head.bandPrev = chunk;
        }
        heads[band] = chunk;
    }

    /** Takes {@code chunk} out of its band. */
    void remove(Chunk chunk) {
        int band = chunk.occupancyBand;
        counts[band]--;
        if (chunk.bandPrev != null) {
            chunk.bandPrev.bandNext = chunk.bandNext;
        } else {
            heads[band] = chunk.bandNext;
        }
        if (chunk.bandNext != null) {
            chunk.bandNext.bandPrev = chunk.bandPrev;
        }
        chunk.bandPrev = null;
        chunk.bandNext = null;
    }

    /** Moves {@code chunk} to the band its used bytes put it in now, if that changed. */
    void update(Chunk chunk) {
        int band = chunk.occupancyBandOf(chunk.usedBytes);
        if (band != chunk.occupancyBand) {
            remove(chunk);
            chunk.occupancyBand = band;
            add(chunk);
        }
    }

    /** The chunks per band, as {@link PoolStats#chunksByOccupancy()} gives them (a copy). */
    int[] counts() {
        return counts.clone();
    }

    /**
     * Runs {@code action} on the chunks of the bands a chunk at most
     * {@code maxOccupancy} used can be in (band b holds chunks from
     * (b - 1) / 4 of their size up), idle ones only with {@code idleToo}; the
     * caller checks each chunk's exact occupancy.
     */
    void forEachAtMost(double maxOccupancy, boolean idleToo, Consumer<Chunk> action) {
        for (int band = idleToo ? 0 : 1; band < COUNT && (band <= 1 || (band - 1) / 4.0 <= maxOccupancy); band++) {
            for (Chunk chunk = heads[band]; chunk != null; chunk = chunk.bandNext) {
                action.accept(chunk);
            }
        }
    }
}
