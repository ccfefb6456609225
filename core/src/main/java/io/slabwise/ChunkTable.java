package io.slabwise;

import java.util.Arrays;

/**
 * An arena's chunks by id, the number a remote-free entry and a thread
 * cache's batch name a chunk by. Ids of released chunks are reused, from a
 * stack, so a new chunk takes its id in O(1) and the table stays as long as
 * the most chunks the arena ever held at once.
 *
 * <p>Written under the arena's lock; {@link #get} is read by any thread
 * without it, which is safe because a chunk with memory the reader owns is
 * not empty, so its slot is never cleared, and a table that grew is
 * published whole through a volatile field.
 */
final class ChunkTable {

    private volatile Chunk[] byId = new Chunk[16];
    /** Ids of released chunks, for the next new chunks; ids from {@link #nextUnused} on were never used. */
    private int[] freeIds = new int[16];
    private int freeIdCount;
    private int nextUnused;

    /** The id the next chunk takes: a released one if any; pass it to a new chunk, then {@link #put} that chunk. */
    int nextId() {
        return freeIdCount > 0 ? freeIds[--freeIdCount] : nextUnused++;
    }

    /** Records {@code chunk} under its id, which {@link #nextId} gave. */
    void put(Chunk chunk) {
        Chunk[] table = byId;
        if (chunk.id >= table.length) {
            table = Arrays.copyOf(table, Math.max(table.length * 2, chunk.id + 1));
            byId = table; // published whole
        }
        table[chunk.id] = chunk;
    }

    /** Forgets {@code chunk}, released; its id serves a later chunk. */
    void remove(Chunk chunk) {
        byId[chunk.id] = null;
        if (freeIdCount == freeIds.length) {
            freeIds = Arrays.copyOf(freeIds, freeIdCount * 2);
        }
        freeIds[freeIdCount++] = chunk.id;
    }

    /** The chunk of id {@code id}, or null; any thread, for a chunk holding memory the caller owns. */
    Chunk get(int id) {
        return byId[id];
    }

    /** Whether {@code chunk} is the one recorded under its id: it has not been released. */
    boolean holds(Chunk chunk) {
        return byId[chunk.id] == chunk;
    }
}
