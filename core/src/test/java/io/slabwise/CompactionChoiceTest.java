package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a compaction chooses to empty, and whether the choice pays: the byte
 * budget, chunks that hold nothing relocatable, a compaction that cannot
 * give anything back, memory cached by the compacting thread, and a chunk
 * whose use changes between the choice and the marking, and moves that land
 * in the arena (block pool stripe) whose room was counted for them.
 *
 * <p>Where a test names what a wrong choice would show, it is what the test
 * saw before the choice was mended.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CompactionChoiceTest {

    /** Every chunk of this size ({@code firstChunkSize} too): the tests count pages and bytes per chunk. */
    private static final int CHUNK = 1 << 20;
    private static final int PAGE = PoolConfig.PAGE_SIZE;

    /** Allocates {@code count} allocations of {@code size} bytes in {@code category}. */
    private static List<Allocation> allocate(MemoryPool pool, Category category, int count, int size) {
        List<Allocation> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Allocation a = new Allocation();
            pool.allocate(category, size, a);
            out.add(a);
        }
        return out;
    }

    @Test
    void aZeroBudgetChoosesNothingAndCallsNoOwner() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxCachedSize(0).build())) {
            MovingOwner owner = new MovingOwner(pool);
            pool.setRelocator("cache", owner);
            List<Allocation> all = allocate(pool, pool.category("cache"), 2 * CHUNK / PAGE, PAGE);
            for (int i = 0; i < all.size(); i++) {
                if (i % 16 == 0) {
                    owner.adopt(all.get(i));
                } else {
                    pool.free(all.get(i));
                }
            }
            CompactionStats none = pool.compact(0.5, 0);
            assertEquals(1, none.compactions());
            assertEquals(0, none.chunksEvacuated(), none::toString);
            assertEquals(0, owner.calls);
            CompactionStats one = pool.compact(0.5, 8 * PAGE); // the used bytes of one chunk, not of two
            assertEquals(1, one.chunksEvacuated(), one::toString);
            assertEquals(8, one.movedEntries(), one::toString);
            owner.freeAll();
        }
    }

    @Test
    void twoOwnersAreEachCalledOnceAndTheirChunksEmpty() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxCachedSize(0).build())) {
            MovingOwner cache = new MovingOwner(pool);
            MovingOwner log = new MovingOwner(pool);
            pool.setRelocator("cache", cache);
            pool.setRelocator("log", log);
            List<Allocation> a = allocate(pool, pool.category("cache"), CHUNK / PAGE, PAGE);
            List<Allocation> b = allocate(pool, pool.category("log"), CHUNK / PAGE, PAGE);
            for (int i = 0; i < a.size(); i++) {
                if (i % 16 == 0) {
                    cache.adopt(a.get(i));
                    log.adopt(b.get(i));
                } else {
                    pool.free(a.get(i));
                    pool.free(b.get(i));
                }
            }
            // two chunks of 8 pages each fit the budget; each owner is called once and moves its own entries
            CompactionStats done = pool.compact(0.5, 16 * PAGE);
            assertEquals(2, done.chunksEvacuated(), done::toString);
            assertEquals(16, done.movedEntries(), done::toString);
            assertEquals(1, cache.calls);
            assertEquals(1, log.calls);
            cache.freeAll();
            log.freeAll();
            assertEquals(0, pool.requestedBytes());
        }
    }

    /**
     * A compaction that empties the only sparse chunk moves its entries to a
     * new chunk: nothing is given back, the same bytes are copied again by
     * every later compaction, and background compaction does it every second.
     */
    @Test
    void aSecondCompactionMovesNothingOnceNothingCanBeGivenBack() {
        ManualTime time = new ManualTime();
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).ticker(time).scheduler(time)
                .compactionBytesPerSecond(CHUNK).build())) {
            MovingOwner owner = new MovingOwner(pool);
            owner.entries.addAll(allocate(pool, pool.category("cache"), 8, 16 * 1024)); // one chunk, an eighth used
            pool.setRelocator("cache", owner);
            long committed = pool.committedBytes();
            CompactionStats first = pool.compact();
            for (int second = 0; second < 3; second++) {
                time.advance(Duration.ofSeconds(1));
                time.runScheduled(); // background compaction
            }
            CompactionStats all = pool.compactionTotals();
            assertEquals(committed, pool.committedBytes());
            // a wrong choice shows as a chunk freed (1 MiB) and 8 entries moved by every compaction, committed never changing
            assertEquals(0, first.movedEntries(), first::toString);
            assertEquals(0, all.movedEntries(), all::toString);
            owner.freeAll();
        }
    }

    /** The same for a block pool: one sparse block is emptied into a new block by every compaction. */
    @Test
    void aSecondCompactionOfBlocksMovesNothingOnceNothingCanBeGivenBack() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).build())) {
            BlockPool blocks = pool.blocks("blocks");
            List<List<Allocation>> kept = new ArrayList<>();
            kept.add(blocks.allocate(100_000));
            kept.add(blocks.allocate(100_000));
            pool.setRelocator("blocks", payloadMover(pool, kept));
            CompactionStats first = pool.compact();
            CompactionStats second = pool.compact();
            assertEquals(1, blocks.stats().blocks());
            // a wrong choice shows as its block freed and both payloads moved by each, the block count staying 1
            assertEquals(0, first.movedEntries() + second.movedEntries(), () -> first + " / " + second);
            kept.forEach(parts -> parts.forEach(pool::free));
        }
    }

    /**
     * With two arenas, a move lands in the arena of the memory it leaves, so
     * only that arena's free room counts for it. This thread compacts from an
     * arena that holds nothing; the entries of a sparse chunk of the other
     * arena move into the free room of that arena's other chunk, the sparse
     * chunk goes back, and later compactions find nothing to move. Before,
     * the room of every arena counted while the moves landed in the
     * compacting thread's arena: each compaction emptied the chunk into a new
     * one there, just as sparse, and gave nothing back, again and again.
     */
    @Test
    void entriesMoveIntoTheRoomOfTheirOwnArenaSoACompactedPoolMovesNothing() throws Exception {
        PoolConfig config = PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(2).arenaSpreadBytes(0)
                .maxCachedSize(0).chunkSource(PoolMemory.chunkByChunk()).build();
        try (MemoryPool pool = new MemoryPool(config)) {
            Category cache = pool.category("cache");
            Category other = pool.category("other");
            MovingOwner owner = new MovingOwner(pool);
            pool.setRelocator("cache", owner);
            Allocation probe = new Allocation();
            pool.allocate(other, PAGE, probe); // this thread binds first: to an arena left empty
            Arena compacting = probe.chunk.arena;
            pool.free(probe);
            pool.trim();
            List<Allocation> others = new ArrayList<>();
            ConcurrentTasks.runConcurrently(List.of(() -> {
                // the other arena: a chunk 90% used by a category without relocator, 13 pages free; 12 entries in a second
                others.addAll(allocate(pool, other, CHUNK / PAGE - 13, PAGE));
                List<Allocation> filler = allocate(pool, other, 13, PAGE);
                List<Allocation> entries = allocate(pool, cache, 12, PAGE);
                filler.forEach(pool::free);
                for (int i = 0; i < entries.size(); i++) {
                    owner.add(entries.get(i), i);
                }
            }));
            Arena entryArena = owner.entries.get(0).chunk.arena;
            assertNotSame(compacting, entryArena, "the entries are in the other thread's arena");
            long committed = pool.committedBytes();

            CompactionStats first = pool.compact();
            assertEquals(12, first.movedEntries(), first::toString);
            assertEquals(committed - CHUNK, pool.committedBytes(), first::toString);
            for (Allocation entry : owner.entries) {
                assertSame(entryArena, entry.chunk.arena, "a moved entry stays in its arena");
            }
            CompactionStats second = pool.compact();
            CompactionStats third = pool.compact();
            assertEquals(0, second.movedBytes() + third.movedBytes(), () -> second + " / " + third);
            assertEquals(committed - CHUNK, pool.committedBytes());
            owner.check();
            owner.freeAll();
            others.forEach(pool::free);
        }
    }

    /**
     * The same for a block pool's stripes: a payload moves into blocks of the
     * stripe it leaves, so only that stripe's free sub-blocks count for it.
     * Two payloads of a sparse block of the other stripe move into the two
     * free sub-blocks of that stripe's full block, and the sparse block goes
     * back; before, they moved into a new block of the compacting thread's
     * stripe, by every compaction.
     */
    @Test
    void payloadsMoveIntoTheRoomOfTheirOwnStripeSoCompactedBlocksMoveNothing() throws Exception {
        PoolConfig config = PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1)
                .chunkSource(PoolMemory.chunkByChunk()).build();
        try (MemoryPool pool = new MemoryPool(config)) {
            BlockPool blocks = pool.blocks("blocks", CHUNK, 2);
            int subBlock = CHUNK / BlockPool.SUB_BLOCKS_PER_BLOCK;
            List<List<Allocation>> kept = new ArrayList<>();
            runOnTheOtherOfTwoStripes(() -> {
                for (int i = 0; i < BlockPool.SUB_BLOCKS_PER_BLOCK + 2; i++) {
                    kept.add(blocks.allocate(subBlock)); // a sub-block each: a full block, and two in a second block
                }
                kept.remove(0).forEach(pool::free); // room for the two in the full block
                kept.remove(0).forEach(pool::free);
            });
            for (int i = 0; i < kept.size(); i++) {
                for (Allocation part : kept.get(i)) {
                    MovingOwner.fill(part, i);
                }
            }
            pool.setRelocator("blocks", payloadMover(pool, kept));
            pool.trim();
            long committed = pool.committedBytes();

            CompactionStats first = pool.compact();
            pool.trim();
            assertEquals(2, first.movedEntries(), first::toString);
            assertEquals(committed - CHUNK, pool.committedBytes(), () -> first + " " + blocks.stats());
            CompactionStats second = pool.compact();
            CompactionStats third = pool.compact();
            pool.trim();
            assertEquals(0, second.movedBytes() + third.movedBytes(), () -> second + " / " + third);
            assertEquals(committed - CHUNK, pool.committedBytes(), () -> blocks.stats().toString());
            for (int i = 0; i < kept.size(); i++) {
                for (Allocation part : kept.get(i)) {
                    MovingOwner.verify(part, i);
                }
            }
            kept.forEach(parts -> parts.forEach(pool::free));
        }
    }

    /** Runs {@code task} on a new thread whose id picks the other of two stripes than this thread's. */
    private static void runOnTheOtherOfTwoStripes(Runnable task) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable capturing = () -> {
            try {
                task.run();
            } catch (Throwable t) {
                failure.set(t);
            }
        };
        Thread thread = new Thread(capturing);
        while (thread.getId() % 2 == Thread.currentThread().getId() % 2) {
            thread = new Thread(capturing); // ids are handed out in turn: the next one is of the other parity
        }
        thread.start();
        thread.join();
        if (failure.get() != null) {
            throw new AssertionError("the thread of the other stripe failed", failure.get());
        }
    }

    /**
     * Chunks that hold only memory of categories without a relocator can
     * never be emptied. The pool cannot tell them from the others at first,
     * so the first compaction chooses them, least used first, and their bytes
     * use up the budget; but it learns that nothing in them moved (the owner
     * refused nothing and the budget was not spent), and the next compaction
     * leaves them and empties the chunk of entries.
     */
    @Test
    void chunksWithNothingRelocatableDoNotUseUpTheBudget() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxCachedSize(0).build())) {
            Category network = pool.category("network");
            MovingOwner owner = new MovingOwner(pool);
            pool.setRelocator("cache", owner);
            int perChunk = CHUNK / PAGE;
            List<Allocation> foreign = allocate(pool, network, 4 * perChunk, PAGE);
            List<Allocation> cache = allocate(pool, pool.category("cache"), perChunk, PAGE);
            List<Allocation> kept = new ArrayList<>();
            for (int i = 0; i < foreign.size(); i++) {
                if (i % perChunk == 0) {
                    kept.add(foreign.get(i)); // four chunks, one page of network memory in each
                } else {
                    pool.free(foreign.get(i));
                }
            }
            for (int i = 0; i < cache.size(); i++) {
                if (i % 16 == 0) {
                    owner.adopt(cache.get(i)); // one chunk, 8 pages of entries
                } else {
                    pool.free(cache.get(i));
                }
            }
            assertEquals(5, pool.stats().chunks());
            CompactionStats first = pool.compact(0.5, 8 * PAGE); // enough for the chunk of entries
            assertEquals(0, first.movedEntries(), first::toString); // the four network chunks (4 pages) came first
            assertEquals(4, first.chunksEvacuated(), first::toString);
            CompactionStats done = pool.compact(0.5, 8 * PAGE);
            assertEquals(8, done.movedEntries(), done::toString);
            assertEquals(1, done.chunksFreed(), done::toString);
            owner.freeAll();
            kept.forEach(pool::free);
        }
    }

    /**
     * The compaction chooses before it flushes its own thread's cache, so a
     * chunk whose memory sits in that cache looks used and is not chosen; the
     * entries moved out of the chunks that were chosen go into it, and the
     * next compaction moves them again.
     */
    @Test
    void memoryCachedByTheCompactingThreadDoesNotHideASparseChunk() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).build())) {
            MovingOwner owner = new MovingOwner(pool);
            pool.setRelocator("cache", owner);
            List<Allocation> all = allocate(pool, pool.category("cache"), 2 * CHUNK / (16 * 1024), 16 * 1024);
            for (int i = 0; i < all.size(); i++) {
                if (i % 8 == 0) {
                    owner.adopt(all.get(i));
                } else {
                    pool.free(all.get(i)); // into this thread's cache, up to its 1 MiB for the class
                }
            }
            CompactionStats first = pool.compact();
            // a wrong choice shows as one chunk emptied into the other (8 moved), the next compaction emptying that one
            assertEquals(2, first.chunksEvacuated(), first::toString);
            assertEquals(16, first.movedEntries(), first::toString);
            owner.freeAll();
        }
    }

    /** A ticker that runs a task once, the next time the pool reads it; the pool reads it when a chunk empties. */
    private static final class HookTicker implements Ticker {
        final AtomicReference<Runnable> next = new AtomicReference<>();

        @Override
        public long read() {
            Runnable task = next.getAndSet(null);
            if (task != null) {
                task.run();
            }
            return System.nanoTime();
        }
    }

    /**
     * The race: a chunk is chosen as sparse, then, before it is marked, its
     * last allocation is freed and the emptied chunk is lent whole to a
     * sequential allocator as its open chunk. The marking checks only that
     * the chunk is still held and not empty, so the open chunk is marked: the
     * slices carved in it are offered to the owner, and their copies are
     * carved from the same open chunk, inside the chunk being emptied.
     *
     * <p>The interleaving is forced: choosing drains each arena's remote
     * frees, the drain that empties a chunk of the second arena reads the
     * ticker, and the ticker frees the chosen chunk's allocation and carves a
     * slice, all on the compacting thread, after the first arena's chunks
     * were chosen.
     */
    @Test
    void aChunkLentWholeAfterTheChoiceIsNotMarked() throws Exception {
        HookTicker ticker = new HookTicker();
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(2).arenaSpreadBytes(0)
                .maxCachedSize(0).ticker(ticker).build())) {
            Category cache = pool.category("cache");
            SequentialAllocator log = pool.sequential("cache", 1, CHUNK);
            MovingOwner owner = new MovingOwner(pool);
            Allocation sparse = new Allocation();
            pool.allocate(cache, PAGE, sparse); // this thread's arena: the chunk to be chosen
            Allocation elsewhere = new Allocation();
            Thread other = new Thread(() -> pool.allocate(pool.category("other"), PAGE, elsewhere));
            other.start();
            other.join();
            assertNotEquals(sparse.chunk.arena, elsewhere.chunk.arena, "the two threads use two arenas");
            assertTrue(sparse.chunk.arena.index < elsewhere.chunk.arena.index, "this thread's arena is chosen from first");
            pool.free(elsewhere); // from another arena's thread: queued until that arena's lock holder drains it
            Allocation slice = new Allocation();
            AtomicBoolean ran = new AtomicBoolean();
            ticker.next.set(() -> {
                pool.free(sparse); // its chunk is empty and idle now
                log.allocate(100, slice); // and taken whole as the sequential allocator's open chunk
                owner.adopt(slice);
                ran.set(true);
            });
            pool.setRelocator("cache", owner);
            CompactionStats done = pool.compact();
            assertTrue(ran.get(), "the forced interleaving ran");
            // the open chunk is not marked: its slice is not offered (before: moved, its copy in the same chunk)
            assertEquals(0, owner.copiesInsideEvacuatedChunks, done::toString);
            assertEquals(0, done.movedEntries(), done::toString);
            assertFalse(slice.chunk.evacuating, "the sequential allocator's open chunk");
            owner.freeAll();
        }
    }

    /** The owner of block pool payloads: moves every payload with a part in a block being emptied. */
    private static Relocator payloadMover(MemoryPool pool, List<List<Allocation>> kept) {
        return evacuation -> {
            for (int i = 0; i < kept.size(); i++) {
                List<Allocation> parts = kept.get(i);
                if (parts.stream().anyMatch(evacuation::contains)) {
                    List<Allocation> moved = evacuation.movePayload(parts);
                    if (moved != null) {
                        kept.set(i, moved);
                        parts.forEach(pool::free);
                    }
                }
            }
        };
    }
}
