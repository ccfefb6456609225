package io.slabwise;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A chunk lent whole to a sequential allocator is marked so ({@code lentWhole})
 * under the arena's lock, in the same step as its allocation and its return,
 * so that a compaction, which reads the mark under that lock, never takes a
 * sequential allocator's chunk for a general-pool one.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LentWholeMarkTest {

    private static final int CHUNK = 64 * 1024;
    /** Times the lender takes the chunk whole and gives it back: a bounded run, about half a second. */
    private static final int CYCLES = 400_000;

    /**
     * One thread takes a chunk whole and gives it back, over and over (a
     * sequential allocator's slice, then its trim); another starts an
     * evacuation of that chunk as a compaction with region groups does for a
     * general-pool chunk (idle ones and full ones too) and looks, under the
     * same lock, at what it marked. Only an idle chunk may be marked so: a
     * full one is the sequential allocator's, its mark not yet set, or
     * already cleared while the chunk is still allocated.
     */
    @Test
    void aCompactionNeverMarksAChunkLentWhole() throws Exception {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1)
                .maxIdleChunksPerArena(1).chunkSource(PoolMemory.chunkByChunk()).build())) {
            SequentialAllocator log = pool.sequential("log", 1, 1024);
            Allocation probe = new Allocation();
            log.allocate(8, probe);
            Arena arena = probe.chunk.arena;
            pool.free(probe);
            log.trim();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failed = new AtomicReference<>();
            AtomicLong cycles = new AtomicLong();
            Thread lender = new Thread(() -> {
                try {
                    Allocation slice = new Allocation();
                    for (int i = 0; i < CYCLES && !stop.get(); i++) {
                        log.allocate(8, slice); // takes the chunk whole (the spare is given back at every trim)
                        pool.free(slice);
                        log.trim(); // retires it: it becomes the spare, which goes back to the arena
                        cycles.incrementAndGet();
                    }
                } catch (Throwable e) {
                    failed.set(e);
                }
            });
            lender.start();
            long marked = 0;
            long markedWhileLent = 0;
            long markedWhileGivenBack = 0;
            while (lender.isAlive() && failed.get() == null) {
                Chunk chunk = arena.chunk(0);
                if (chunk == null) {
                    continue;
                }
                synchronized (arena) {
                    // as Compaction's ArenaChunk.start() with region groups: idle chunks too, full ones too
                    if (!arena.startEvacuation(chunk, true, CHUNK, false)) {
                        continue;
                    }
                    marked++;
                    if (chunk.isEmpty()) {
                        arena.endEvacuation(chunk); // idle: it goes back, and the lender takes a new one
                        continue;
                    }
                }
                // a full chunk marked as a general-pool chunk: one just lent whole, whose mark comes next, or one
                // whose mark was cleared on its way back to the arena; a chunk marked for evacuation is never lent
                // again (once empty it goes back to the source), so the lender's mark now tells which
                for (int i = 0; i < 2000; i++) {
                    Thread.onSpinWait();
                }
                if (chunk.lentWhole) {
                    markedWhileLent++;
                } else {
                    markedWhileGivenBack++;
                }
                arena.endEvacuation(chunk);
            }
            stop.set(true);
            lender.join();
            if (failed.get() != null) {
                throw new AssertionError(failed.get());
            }
            long total = marked;
            long lent = markedWhileLent;
            long givenBack = markedWhileGivenBack;
            assertEquals(CYCLES, cycles.get());
            assertEquals(0, lent + givenBack, () -> lent + " of " + total + " marks fell on a chunk being lent whole, "
                    + givenBack + " on one being given back, in " + cycles.get() + " cycles");
            assertEquals(0, EvacuationMarks.markedArenaChunks(pool));
            log.trim();
            pool.trim();
            assertEquals(0, pool.committedBytes());
        }
    }
}
