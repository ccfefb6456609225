package io.slabwise;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where the arena places runs: in the oldest chunk with a long enough free
 * run, so new memory packs into old chunks and the newest ones drain.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ArenaPlacementTest {

    private static final int PAGE = PoolConfig.PAGE_SIZE;
    /** Eight pages. */
    private static final int CHUNK = 64 * 1024;
    private static final int PAGES = CHUNK / PAGE;

    /** 128 pages. */
    private static final int BIG_CHUNK = 1 << 20;

    private static final SizeClasses SIZES = new SizeClasses(PAGE, CHUNK);

    /** An arena of its own, keeping every idle chunk unless {@code maxIdle} says otherwise. */
    private static Arena arena(int maxIdle) {
        CommittedMemory memory = new CommittedMemory(ChunkSource.direct(), new MemoryLimit(Long.MAX_VALUE));
        return new Arena(memory, 0, SIZES, CHUNK, maxIdle, 64, Ticker.system());
    }

    private static Allocation run(Arena arena, int pages) {
        Allocation a = new Allocation();
        arena.allocate(SizeClasses.indexOf(pages * PAGE), a);
        return a;
    }

    private static void free(Arena arena, Allocation a) {
        arena.free(a.chunk, a.handle);
    }

    @Test
    void aRunGoesToTheOldestChunkWithRoomNotTheFullest() {
        Arena arena = arena(Integer.MAX_VALUE);
        List<Allocation> first = new ArrayList<>();
        List<Allocation> second = new ArrayList<>();
        for (int i = 0; i < PAGES; i++) {
            first.add(run(arena, 1));
        }
        for (int i = 0; i < PAGES; i++) {
            second.add(run(arena, 1));
        }
        Chunk oldest = first.get(0).chunk;
        Chunk newer = second.get(0).chunk;
        assertTrue(oldest != newer, "two chunks");
        // the oldest chunk has four free pages, the newer one a single page: the newer one is the fullest
        for (int i = 0; i < 4; i++) {
            free(arena, first.remove(first.size() - 1));
        }
        free(arena, second.remove(second.size() - 1));
        for (int i = 0; i < 4; i++) {
            assertSame(oldest, run(arena, 1).chunk, "run " + i + " fills the oldest chunk first");
        }
        assertSame(newer, run(arena, 1).chunk, "then the next oldest");
        // a run that fits only in the newer chunk goes there, not into a new chunk
        free(arena, second.remove(second.size() - 1));
        free(arena, second.remove(second.size() - 1));
        assertSame(newer, run(arena, 2).chunk);
    }

    /**
     * A FIFO stream (a log cache) of elements and runs from 100 bytes to 32
     * pages (a quarter of a chunk), log-uniform, evicted oldest first: oldest-first placement packs
     * new records into the old chunks, so fewer chunks hold the same live
     * bytes than when a run goes to the fullest chunk with room (which, under
     * FIFO, is one that has just begun to drain). Then the live bytes fall to
     * a quarter, and the newest chunks empty and go back.
     */
    @Test
    void underAFifoStreamOldChunksRefillAndTheNewestEmpty() {
        SizeClasses sizes = new SizeClasses(PAGE, BIG_CHUNK);
        CommittedMemory memory = new CommittedMemory(ChunkSource.direct(), new MemoryLimit(Long.MAX_VALUE));
        Arena arena = new Arena(memory, 0, sizes, BIG_CHUNK, 0, 64, Ticker.system());
        SplittableRandom random = new SplittableRandom(14);
        ArrayDeque<Allocation> fifo = new ArrayDeque<>();
        ArrayDeque<Integer> fifoBytes = new ArrayDeque<>();
        long live = 0;
        long cap = 32L * BIG_CHUNK;
        long chunkSteps = 0;
        int maxAfter = 0;
        for (int step = 0; step < 60_000; step++) {
            if (step == 40_000) {
                cap = 8L * BIG_CHUNK;
            }
            int size = (int) Math.exp(Math.log(100) + random.nextDouble() * Math.log(32.0 * PAGE / 100));
            int reserved = sizes.size(SizeClasses.indexOf(size));
            while (live + reserved > cap) {
                live -= fifoBytes.pollFirst();
                free(arena, fifo.pollFirst());
            }
            Allocation a = new Allocation();
            arena.allocate(SizeClasses.indexOf(size), a);
            fifo.addLast(a);
            fifoBytes.addLast(reserved);
            live += reserved;
            ArenaSnapshot snapshot = arena.snapshot();
            if (step >= 10_000 && step < 40_000) {
                chunkSteps += snapshot.chunks();
            } else if (step >= 45_000) {
                maxAfter = Math.max(maxAfter, snapshot.chunks());
            }
        }
        // deterministic (one thread, seeded): oldest first holds 38.6 chunks on average and 13 at most after the fall;
        // the fullest chunk with room held 39.9 and 14
        double meanChunks = chunkSteps / 30_000.0;
        assertTrue(meanChunks < 39.0, "chunks held for 32 chunks of live memory, on average: " + meanChunks);
        assertTrue(maxAfter <= 13, "chunks held for 8 chunks of live memory: " + maxAfter);
    }
}
