package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Compaction against owners that misbehave and callers that misuse it: a
 * relocator that throws (an exception or an error), one that compacts from
 * inside its call, one kept past its call, moves of memory that is not an
 * entry, payload parts that are not a payload, a relocator removed, a
 * closed pool. Whatever happens, no chunk stays marked and no byte stays
 * accounted that nothing holds.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CompactionFailureTest {

    private static final int CHUNK = 1 << 20;
    private static final int PAGE = PoolConfig.PAGE_SIZE;

    /** The pool's three kinds of chunks, each sparse and holding entries of its own owner. */
    private static final class ThreeOwners implements AutoCloseable {
        final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).build());
        final MovingOwner general = new MovingOwner(pool);
        final MovingOwner sequential = new MovingOwner(pool);
        final List<List<Allocation>> payloads = new ArrayList<>();
        int blockCalls;

        ThreeOwners() {
            Category cache = pool.category("cache");
            List<Allocation> all = new ArrayList<>();
            for (int i = 0; i < 2 * CHUNK / PAGE; i++) {
                Allocation a = new Allocation();
                pool.allocate(cache, PAGE, a);
                all.add(a);
            }
            SequentialAllocator log = pool.sequential("log", 1, CHUNK);
            for (int i = 0; i < 2 * CHUNK / 4096; i++) {
                Allocation a = new Allocation();
                log.allocate(4096, a);
                all.add(a);
            }
            log.trim(); // the open chunk retires: both are pinned
            for (int i = 0; i < all.size(); i++) {
                if (i % 16 == 0) {
                    (all.get(i).category() == cache ? general : sequential).adopt(all.get(i));
                } else {
                    pool.free(all.get(i));
                }
            }
            BlockPool blocks = pool.blocks("blocks");
            List<List<Allocation>> made = new ArrayList<>();
            for (int i = 0; i < 96; i++) {
                made.add(blocks.allocate(40_000)); // 20 mini-blocks each: six blocks, each left with a few
            }
            for (int i = 0; i < made.size(); i++) {
                if (i % 8 == 0) {
                    payloads.add(made.get(i));
                } else {
                    made.get(i).forEach(pool::free);
                }
            }
            pool.trim();
        }

        void register(Relocator generalRelocator) {
            pool.setRelocator("cache", generalRelocator);
            pool.setRelocator("log", sequential);
            pool.setRelocator("blocks", this::moveBlocks);
        }

        /** The block pool owner's relocator: moves each payload with a part in a block being emptied. */
        void moveBlocks(Evacuation evacuation) {
            blockCalls++;
            for (int i = 0; i < payloads.size(); i++) {
                List<Allocation> parts = payloads.get(i);
                if (parts.stream().anyMatch(evacuation::contains)) {
                    List<Allocation> moved = evacuation.movePayload(parts);
                    if (moved != null) {
                        payloads.set(i, moved);
                        parts.forEach(pool::free);
                    }
                }
            }
        }

        /** Every chunk and block under an entry, marked or not. */
        List<Chunk> entryChunks() {
            List<Chunk> chunks = new ArrayList<>();
            general.entries.forEach(a -> chunks.add(a.chunk));
            sequential.entries.forEach(a -> chunks.add(a.chunk));
            payloads.forEach(parts -> parts.forEach(a -> chunks.add(a.chunk)));
            return chunks;
        }

        void assertNothingMarked() {
            for (Chunk chunk : entryChunks()) {
                assertFalse(chunk.evacuating, "a chunk stayed marked");
            }
            assertEquals(0, EvacuationMarks.markedArenaChunks(pool));
        }

        @Override
        public void close() {
            general.freeAll();
            sequential.freeAll();
            payloads.forEach(parts -> parts.forEach(pool::free));
            assertEquals(0, pool.requestedBytes());
            pool.close();
        }
    }

    @Test
    void aRelocatorThatThrowsFailsTheCompactionButTheOthersRunAndNothingStaysMarked() {
        try (ThreeOwners owners = new ThreeOwners()) {
            RuntimeException bug = new RuntimeException("owner bug");
            AtomicInteger marked = new AtomicInteger();
            owners.register(evacuation -> {
                for (Chunk chunk : owners.entryChunks()) {
                    if (chunk.evacuating) {
                        marked.incrementAndGet();
                    }
                }
                Allocation first = owners.general.entries.get(0);
                Allocation fresh = new Allocation();
                assertTrue(evacuation.moveInto(first, fresh));
                owners.general.entries.set(0, fresh);
                owners.pool.free(first);
                throw bug; // after one move
            });
            IllegalStateException failed = assertThrows(IllegalStateException.class, () -> owners.pool.compact());
            assertSame(bug, failed.getCause());
            assertTrue(marked.get() > 0, "the entries' chunks were marked during the call");
            assertEquals(1, owners.sequential.calls, "the other owners still ran");
            assertEquals(1, owners.blockCalls, "the other owners still ran");
            owners.assertNothingMarked();
            CompactionStats counted = owners.pool.compactionTotals();
            assertEquals(1, counted.compactions(), counted::toString);
            assertTrue(counted.movedEntries() > 1, counted::toString); // the one before the throw, and the others'
            owners.pool.setRelocator("cache", owners.general);
            CompactionStats next = owners.pool.compact();
            assertTrue(next.movedEntries() > 0 && next.chunksFreed() > 0, next::toString);
            owners.assertNothingMarked();
        }
    }

    @Test
    void aRelocatorThatThrowsAnErrorLeavesNothingMarked() {
        try (ThreeOwners owners = new ThreeOwners()) {
            AssertionError bug = new AssertionError("owner assertion");
            owners.register(evacuation -> {
                throw bug;
            });
            AssertionError thrown = assertThrows(AssertionError.class, () -> owners.pool.compact());
            assertSame(bug, thrown, "an error goes through as it is");
            owners.assertNothingMarked();
            owners.pool.setRelocator("cache", owners.general);
            CompactionStats next = owners.pool.compact();
            assertTrue(next.chunksFreed() > 0, next::toString);
            owners.assertNothingMarked();
        }
    }

    @Test
    void aRelocatorThatCompactsGetsNothingAndTheOuterCompactionGoesOn() {
        try (ThreeOwners owners = new ThreeOwners()) {
            List<CompactionStats> inner = new ArrayList<>();
            owners.register(evacuation -> {
                inner.add(owners.pool.compact());
                inner.add(owners.pool.compact(0.9, 1));
                owners.general.relocate(evacuation);
            });
            CompactionStats outer = owners.pool.compact();
            assertEquals(List.of(CompactionStats.NONE, CompactionStats.NONE), inner);
            assertEquals(1, owners.pool.compactionTotals().compactions());
            assertTrue(outer.movedEntries() > 0 && outer.chunksFreed() > 0, outer::toString);
            owners.assertNothingMarked();
        }
    }

    @Test
    void removingTheRelocatorsStopsCompaction() {
        try (ThreeOwners owners = new ThreeOwners()) {
            owners.register(owners.general);
            assertSame(owners.general, owners.pool.setRelocator("cache", null));
            assertNull(owners.pool.setRelocator("cache", null));
            owners.pool.setRelocator("log", null);
            owners.pool.setRelocator("blocks", null);
            Allocation first = owners.general.entries.get(0);
            long offset = first.offset();
            assertSame(CompactionStats.NONE, owners.pool.compact());
            assertEquals(0, owners.pool.compactionTotals().compactions());
            assertSame(first, owners.general.entries.get(0));
            assertEquals(offset, first.offset());
            assertEquals(0, owners.general.calls);
        }
    }

    /**
     * A chunk that holds memory no relocator can move, and the old memory of
     * a moved entry that a reader still holds, stays marked after the
     * compaction, to go back once the reader lets go; the next compaction
     * opens it again. When the last relocator is removed there is no next
     * compaction, so the removal opens it: otherwise it would take no new
     * memory for the life of the pool, and the pool would take new chunks
     * while its free room lay unused.
     */
    @Test
    void removingTheLastRelocatorOpensAChunkLeftMarkedForReaders() {
        leaveAChunkMarkedForReadersAndRemoveTheRelocator(false);
    }

    /** The same when the relocator is removed while the compaction runs: it opens the chunk as it ends. */
    @Test
    void removingTheLastRelocatorDuringACompactionOpensAChunkItLeavesMarkedForReaders() {
        leaveAChunkMarkedForReadersAndRemoveTheRelocator(true);
    }

    /**
     * One chunk full of memory that cannot move, less 20 pages; in a second
     * one, an entry and a page that cannot move. The entry moves, a reader
     * still holding its old memory, and the relocator of its category, the
     * only one, is removed: from inside its call with {@code duringCompaction},
     * else after the compaction and after the reader let go.
     */
    private static void leaveAChunkMarkedForReadersAndRemoveTheRelocator(boolean duringCompaction) {
        PoolConfig config = PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxCachedSize(0)
                .chunkSource(PoolMemory.chunkByChunk()).build();
        try (MemoryPool pool = new MemoryPool(config)) {
            Category cache = pool.category("cache");
            Category other = pool.category("other");
            List<Allocation> dense = new ArrayList<>();
            for (int i = 0; i < CHUNK / PAGE; i++) {
                Allocation a = new Allocation();
                pool.allocate(other, PAGE, a);
                dense.add(a);
            }
            Allocation entry = new Allocation();
            pool.allocate(cache, PAGE, entry);
            Allocation pinned = new Allocation();
            pool.allocate(other, PAGE, pinned);
            for (int i = 0; i < 20; i++) {
                pool.free(dense.remove(dense.size() - 1)); // room in the first chunk for the move
            }
            Allocation[] current = {entry};
            Allocation[] heldByReader = new Allocation[1];
            pool.setRelocator("cache", evacuation -> {
                if (evacuation.contains(current[0])) {
                    Allocation fresh = new Allocation();
                    if (evacuation.moveInto(current[0], fresh)) {
                        heldByReader[0] = current[0]; // a reader still has it: freed when the reader is done
                        evacuation.heldByReaders(current[0]);
                        current[0] = fresh;
                    }
                }
                if (duringCompaction) {
                    pool.setRelocator("cache", null);
                }
            });
            CompactionStats done = pool.compact();
            assertEquals(1, done.movedEntries(), done::toString);
            assertEquals(1, done.heldByReaders(), done::toString);
            pool.free(heldByReader[0]); // the reader lets go: the chunk still holds the pinned page
            if (!duringCompaction) {
                assertEquals(1, EvacuationMarks.markedArenaChunks(pool), "kept marked for the next compaction");
                pool.setRelocator("cache", null);
            }
            assertEquals(0, EvacuationMarks.markedArenaChunks(pool));
            long committed = pool.committedBytes();
            List<Allocation> more = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                Allocation a = new Allocation();
                pool.allocate(other, PAGE, a);
                more.add(a);
            }
            assertEquals(committed, pool.committedBytes(), "100 pages fit in the free room of the chunk opened again");
            more.forEach(pool::free);
            dense.forEach(pool::free);
            pool.free(pinned);
            pool.free(current[0]);
        }
    }

    @Test
    void anEvacuationKeptPastItsCallRefusesToMove() {
        try (ThreeOwners owners = new ThreeOwners()) {
            Evacuation[] kept = new Evacuation[1];
            owners.register(evacuation -> kept[0] = evacuation);
            owners.pool.compact();
            Evacuation stale = kept[0];
            Allocation entry = owners.general.entries.get(0);
            assertThrows(IllegalStateException.class, () -> stale.moveInto(entry, new Allocation()));
            assertThrows(IllegalStateException.class, () -> stale.movePayload(owners.payloads.get(0)));
            assertThrows(IllegalStateException.class, stale::refused);
            assertThrows(IllegalStateException.class, () -> stale.heldByReaders(entry));
        }
    }

    /**
     * An evacuation kept past its call answers {@code contains} and
     * {@code budgetLeft} for whatever compaction runs now, with its own
     * category and its spent budget: an owner that kept one by mistake walks
     * its entries with answers from another compaction, and only learns of
     * the mistake when it tries to move.
     */
    @Test
    void anEvacuationKeptPastItsCallAnswersNothing() {
        try (ThreeOwners owners = new ThreeOwners()) {
            Evacuation[] kept = new Evacuation[1];
            owners.register(evacuation -> {
                if (kept[0] == null) {
                    kept[0] = evacuation; // the first compaction: move nothing, keep the evacuation
                    return;
                }
                Evacuation stale = kept[0];
                Allocation entry = owners.general.entries.get(0);
                // the second compaction marked the entry's chunk again; the stale evacuation should not say so
                assertTrue(evacuation.contains(entry));
                assertThrows(IllegalStateException.class, () -> stale.contains(entry));
                assertThrows(IllegalStateException.class, stale::budgetLeft);
            });
            owners.pool.compact();
            owners.pool.compact();
        }
    }

    @Test
    void movesOfWhatIsNotAnEntryAreRefusedWithoutTakingMemory() {
        try (ThreeOwners owners = new ThreeOwners()) {
            MemoryPool pool = owners.pool;
            MemoryPool otherPool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).build());
            List<Allocation> foreignPayload = otherPool.blocks("blocks").allocate(40_000);
            List<Throwable> refusals = new ArrayList<>();
            owners.register(evacuation -> {
                long requested = pool.requestedBytes();
                Allocation entry = owners.general.entries.get(0);
                Allocation live = owners.general.entries.get(1);
                refusals.add(assertThrows(IllegalStateException.class, () -> evacuation.moveInto(entry, live),
                        "new memory into a live holder"));
                Allocation part = owners.payloads.get(0).get(0);
                refusals.add(assertThrows(IllegalArgumentException.class, () -> evacuation.moveInto(part, new Allocation()),
                        "memory of another category"));
                Allocation freed = new Allocation();
                pool.allocate(pool.category("cache"), PAGE, freed);
                pool.free(freed);
                refusals.add(assertThrows(IllegalArgumentException.class, () -> evacuation.moveInto(freed, new Allocation()),
                        "a freed holder"));
                assertEquals(requested, pool.requestedBytes(), "a refused move keeps no memory");
                owners.general.relocate(evacuation);
            });
            pool.setRelocator("blocks", evacuation -> {
                long requested = pool.requestedBytes();
                List<Allocation> parts = owners.payloads.get(0);
                assertTrue(parts.stream().anyMatch(evacuation::contains), "the payload is in a block being emptied");
                refusals.add(assertThrows(IllegalArgumentException.class, () -> evacuation.moveInto(parts.get(0), new Allocation()),
                        "a part alone"));
                refusals.add(assertThrows(IllegalArgumentException.class,
                        () -> evacuation.movePayload(List.of(owners.general.entries.get(0))), "a payload of no block pool part"));
                List<Allocation> mixed = new ArrayList<>(parts);
                mixed.addAll(foreignPayload);
                refusals.add(assertThrows(IllegalArgumentException.class, () -> evacuation.movePayload(mixed),
                        "parts of two pools"));
                List<Allocation> two = new ArrayList<>(parts);
                two.addAll(owners.payloads.get(1));
                refusals.add(assertThrows(IllegalArgumentException.class, () -> evacuation.movePayload(two),
                        "two payloads as one"));
                assertEquals(requested, pool.requestedBytes(), "a refused move keeps no memory");
                owners.moveBlocks(evacuation);
            });
            CompactionStats done = pool.compact();
            assertEquals(7, refusals.size());
            assertTrue(done.movedEntries() > 0, done::toString);
            foreignPayload.forEach(otherPool::free);
            otherPool.close();
        }
    }

    /**
     * Parts handed over out of order: the new payload is taken, then the
     * copy finds a new part smaller than its old one and throws, and the new
     * payload is never freed. Its bytes stay requested for good.
     */
    @Test
    void partsOutOfOrderAreRefusedWithoutLeakingTheNewPayload() {
        try (ThreeOwners owners = new ThreeOwners()) {
            MemoryPool pool = owners.pool;
            long[] before = new long[1];
            owners.register(owners.general);
            pool.setRelocator("blocks", evacuation -> {
                before[0] = pool.requestedBytes();
                List<Allocation> parts = owners.payloads.get(0); // 20 mini-blocks, the last one partly used
                assertTrue(parts.stream().anyMatch(evacuation::contains), "the payload is in a block being emptied");
                List<Allocation> reversed = new ArrayList<>(parts);
                java.util.Collections.reverse(reversed);
                assertThrows(RuntimeException.class, () -> evacuation.movePayload(reversed));
                assertEquals(before[0], pool.requestedBytes(), "the new payload was freed");
            });
            pool.compact();
        }
    }

    @Test
    void aClosedPoolRefusesToCompactAndStopsCompactingInTheBackground() {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).ticker(time).scheduler(time)
                .compactionBytesPerSecond(CHUNK).build());
        MovingOwner owner = new MovingOwner(pool);
        for (int i = 0; i < 8; i++) {
            Allocation a = new Allocation();
            pool.allocate(pool.category("cache"), PAGE, a);
            owner.adopt(a);
        }
        Allocation more = new Allocation();
        pool.allocate(pool.category("cache"), PAGE, more); // with the entries: two chunks' worth of sparse memory
        pool.setRelocator("cache", owner);
        pool.close();
        assertThrows(IllegalStateException.class, pool::compact);
        assertThrows(IllegalStateException.class, () -> pool.compact(0.5, CHUNK));
        time.advance(Duration.ofSeconds(1));
        time.runScheduled();
        assertEquals(0, owner.calls);
        assertEquals(0, pool.compactionTotals().compactions());
        pool.free(more);
        owner.freeAll();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * A pool closed while a compaction runs: the owner's moves from then on
     * are refused (false, as at a limit), the compaction ends normally with
     * them counted, the entries keep their bytes and nothing stays marked;
     * their memory goes back when released.
     */
    @Test
    void aPoolClosedDuringACompactionRefusesTheMovesLeftAndLosesNothing() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).maxCachedSize(0).build());
        MovingOwner owner = new MovingOwner(pool);
        Category cache = pool.category("cache");
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < 2 * CHUNK / PAGE; i++) {
            Allocation a = new Allocation();
            pool.allocate(cache, PAGE, a);
            MovingOwner.fill(a, i);
            all.add(a);
        }
        List<Integer> seeds = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            if (i % 16 == 0) {
                owner.adopt(all.get(i));
                seeds.add(i);
            } else {
                pool.free(all.get(i));
            }
        }
        CountDownLatch inCall = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        pool.setRelocator("cache", evacuation -> {
            inCall.countDown();
            ConcurrentTasks.await(closed, "a thread got stuck");
            owner.relocate(evacuation);
        });
        Throwable[] thrown = new Throwable[1];
        CompactionStats[] done = new CompactionStats[1];
        Thread compacting = new Thread(() -> {
            try {
                done[0] = pool.compact();
            } catch (Throwable e) {
                thrown[0] = e;
            }
        });
        compacting.start();
        ConcurrentTasks.await(inCall, "a thread got stuck");
        pool.close();
        closed.countDown();
        compacting.join();
        assertNull(thrown[0], () -> String.valueOf(thrown[0]));
        assertEquals(0, done[0].movedEntries(), done[0]::toString);
        assertEquals(owner.entries.size(), done[0].refusedEntries(), done[0]::toString);
        for (int i = 0; i < owner.entries.size(); i++) {
            MovingOwner.verify(owner.entries.get(i), seeds.get(i));
            assertFalse(owner.entries.get(i).chunk.evacuating);
        }
        owner.freeAll();
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.committedBytes());
    }

    /**
     * Background compaction runs the owners' relocators on the JVM-wide decay
     * thread, which survives a {@link RuntimeException} of a task but not an
     * {@link Error}: a relocator that throws one (an assertion, a linkage
     * error, an {@code OutOfMemoryError} while copying) ends the thread, and
     * with it the idle decay and background compaction of every pool in the
     * JVM. Run in a JVM of its own, since the thread is shared.
     */
    @Test
    void anErrorInABackgroundCompactionLeavesTheDecayThreadRunning() throws Exception {
        String output = ForkedJvm.run(List.of("-Xmx64m"), false, ErrorInBackgroundCompaction.class);
        // the decay thread logs the error it caught, on standard error, which may come after the program's line
        String verdict = output.lines().filter(line -> line.startsWith("relocator called:")).findFirst().orElse("");
        assertEquals("relocator called: true, a later task ran: true", verdict, ForkedJvm.tail(output));
    }

    /** A pool compacting in the background on the shared decay thread, with a relocator that throws an error. */
    public static final class ErrorInBackgroundCompaction {
        private ErrorInBackgroundCompaction() {
        }

        /**
         * Waits for the relocator to be called on the decay thread, then
         * registers another task on that thread and prints whether it ran.
         *
         * @param args unused
         * @throws InterruptedException never
         */
        public static void main(String[] args) throws InterruptedException {
            CountDownLatch called = new CountDownLatch(1);
            try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1)
                    .compactionBytesPerSecond(CHUNK).build())) {
                // two chunks, a page used in each: emptying one into the other frees it, so they are chosen
                List<Allocation> pages = new ArrayList<>();
                for (int i = 0; i < 2 * CHUNK / PAGE; i++) {
                    Allocation page = new Allocation();
                    pool.allocate(pool.category("cache"), PAGE, page);
                    pages.add(page);
                }
                Allocation entry = pages.get(0);
                Allocation other = pages.get(CHUNK / PAGE);
                for (Allocation page : pages) {
                    if (page != entry && page != other) {
                        pool.free(page);
                    }
                }
                pool.trim(); // this thread's cache: it would make the chunks look used to the decay thread
                pool.setRelocator("cache", evacuation -> {
                    called.countDown();
                    throw new AssertionError("an owner's assertion");
                });
                boolean relocated = called.await(10, TimeUnit.SECONDS); // background compaction runs once a second
                CountDownLatch later = new CountDownLatch(1);
                Scheduler.shared().repeat(later::countDown, Duration.ofMillis(100));
                boolean ran = later.await(5, TimeUnit.SECONDS); // the thread runs it within 200 ms when alive
                pool.free(entry);
                pool.free(other);
                System.out.println("relocator called: " + relocated + ", a later task ran: " + ran);
            }
        }
    }
}
