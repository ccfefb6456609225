package io.slabwise;

import java.util.ArrayList;
import java.util.List;

/**
 * Reads which chunks of a pool's arenas are marked for evacuation, for tests
 * that check that a compaction leaves no mark behind: a chunk that stayed
 * marked would never take new memory again.
 */
final class EvacuationMarks {

    private EvacuationMarks() {
    }

    /** Chunks of the pool's arenas marked as being evacuated now (whole chunks lent to cache allocators included). */
    static int markedArenaChunks(MemoryPool pool) {
        int marked = 0;
        for (Arena arena : arenas(pool)) {
            for (Chunk chunk : chunksOf(arena)) {
                if (chunk.evacuating) {
                    marked++;
                }
            }
        }
        return marked;
    }

    /** Chunks held by the pool's arenas, idle ones and those lent whole included. */
    static int arenaChunks(MemoryPool pool) {
        int n = 0;
        for (Arena arena : arenas(pool)) {
            n += chunksOf(arena).size();
        }
        return n;
    }

    private static Arena[] arenas(MemoryPool pool) {
        return pool.arenas;
    }

    /** The arena's chunks, read under its lock. */
    private static List<Chunk> chunksOf(Arena arena) {
        List<Chunk> chunks = new ArrayList<>();
        arena.forEachChunk(chunks::add);
        return chunks;
    }
}
