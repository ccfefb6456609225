package io.slabwise;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Compaction on the engine: an owner with entries in the general pool, a
 * sequential allocator and a block pool; what the pool chooses, what moves,
 * what is freed, and that nothing but the owner's entries ever moves.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CompactionTest {

    /** Every chunk of this size ({@code firstChunkSize} too): the tests count pages and bytes per chunk. */
    private static final int CHUNK = 1 << 20;

    private static MemoryPool pool() {
        return new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(2).build());
    }

    /** A pool whose emptied chunks each leave it, whatever the JDK and the environment. */
    private static MemoryPool ungroupedPool() {
        return new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(2)
                .chunkSource(PoolMemory.chunkByChunk()).build());
    }

    @Test
    void generalPoolChunksEmptyAndGoBackWithTheBytesIntact() {
        try (MemoryPool pool = pool()) {
            Category cache = pool.category("cache");
            MovingOwner owner = new MovingOwner(pool);
            pool.setRelocator("cache", owner);
            Random random = new Random(1);
            List<Allocation> all = new ArrayList<>();
            for (int i = 0; i < 2000; i++) {
                Allocation a = new Allocation();
                pool.allocate(cache, 64 + random.nextInt(16 * 1024), a);
                all.add(a);
            }
            Collections.shuffle(all, random);
            for (int i = 0; i < all.size(); i++) {
                if (i % 10 == 0) {
                    owner.add(all.get(i), i); // a tenth survive, spread over every chunk
                } else {
                    pool.free(all.get(i));
                }
            }
            pool.trim();
            int before = pool.stats().chunks(); // chunks, not committed bytes: region groups may hold freed chunks' memory
            long committedBefore = pool.committedBytes();
            CompactionStats done = pool.compact();
            long committedAfter = pool.committedBytes();
            pool.trim();
            int after = pool.stats().chunks();
            assertEquals(200, done.movedEntries(), done::toString);
            // what it reports freed is what left the pool: the chunks emptied less those the moves took
            assertEquals(committedBefore - committedAfter, done.bytesFreed(), () -> done + pool.stats().report());
            assertTrue(done.chunksFreed() <= done.chunksEvacuated(), done::toString);
            // 200 survivors of about 8 KiB: 1.6 MiB, about a chunk per 20 size classes' subpages at most
            assertTrue(after <= 4 && before >= 3 * after, () -> "chunks " + before + " -> " + after + ", " + done);
            owner.check();
            assertEquals(1, pool.compactionTotals().compactions());
            owner.freeAll();
            assertEquals(0, pool.requestedBytes());
        }
    }

    /**
     * What a compaction reports as freed is what left the pool: with no other
     * thread allocating, every compaction's {@code bytesFreed} is exactly the
     * drop in committed bytes (so a compaction never raises them), over
     * rounds of a general-pool cache, a sequential log and a block cache that
     * each lose a random share of their entries and are compacted.
     */
    @Test
    void everyReportedFreeIsTheDropInCommittedMemory() {
        try (MemoryPool pool = ungroupedPool()) {
            Random random = new Random(38);
            Category cache = pool.category("cache");
            SequentialAllocator log = pool.sequential("log");
            BlockPool blocks = pool.blocks("blocks");
            MovingOwner general = new MovingOwner(pool);
            MovingOwner sequential = new MovingOwner(pool);
            List<List<Allocation>> payloads = new ArrayList<>();
            pool.setRelocator("cache", general);
            pool.setRelocator("log", sequential);
            pool.setRelocator("blocks", evacuation -> {
                for (int i = 0; i < payloads.size(); i++) {
                    if (payloads.get(i).stream().anyMatch(evacuation::contains)) {
                        List<Allocation> moved = evacuation.movePayload(payloads.get(i));
                        if (moved != null) {
                            payloads.get(i).forEach(pool::free);
                            payloads.set(i, moved);
                        }
                    }
                }
            });
            long seed = 0;
            long freedInAll = 0;
            for (int round = 0; round < 12; round++) {
                for (int i = 0; i < 300; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(cache, 64 + random.nextInt(24 * 1024), a);
                    general.add(a, seed++);
                    Allocation b = new Allocation();
                    log.allocate(100 + random.nextInt(8000), b);
                    sequential.add(b, seed++);
                }
                for (int i = 0; i < 20; i++) {
                    payloads.add(blocks.allocate(1 + random.nextInt(3 * CHUNK / 2)));
                }
                dropAShare(pool, general, random);
                dropAShare(pool, sequential, random);
                for (int i = payloads.size() - 1; i >= 0; i--) {
                    if (random.nextInt(3) > 0) {
                        payloads.remove(i).forEach(pool::free);
                    }
                }
                long before = pool.committedBytes();
                CompactionStats done = pool.compact(0.5 + random.nextDouble() * 0.4, Long.MAX_VALUE);
                long after = pool.committedBytes();
                int r = round;
                assertEquals(before - after, done.bytesFreed(), () -> "round " + r + ": " + done + "\n" + pool.report());
                assertTrue(done.chunksFreed() <= done.chunksEvacuated(), done::toString);
                freedInAll += done.bytesFreed();
            }
            assertTrue(freedInAll > 0, "some compaction gave memory back");
            general.check();
            sequential.check();
            general.freeAll();
            sequential.freeAll();
            payloads.forEach(p -> p.forEach(pool::free));
            assertEquals(0, pool.requestedBytes());
        }
    }

    /**
     * A cache that only fills has nothing to give back: the newest chunk is
     * sparse only because it is being filled, and emptying it would need a
     * new chunk for what it holds. Compactions between the fills free
     * nothing, report nothing freed, and leave committed memory as it was;
     * at most a rare entry moves, where free pages outside the chunk looked
     * like room but were not contiguous enough for it.
     */
    @Test
    void aCacheThatOnlyFillsHasNothingFreed() {
        try (MemoryPool pool = ungroupedPool()) {
            Random random = new Random(35);
            Category cache = pool.category("cache");
            SequentialAllocator log = pool.sequential("log");
            MovingOwner general = new MovingOwner(pool);
            MovingOwner sequential = new MovingOwner(pool);
            pool.setRelocator("cache", general);
            pool.setRelocator("log", sequential);
            long seed = 0;
            long moved = 0;
            for (int round = 0; round < 40; round++) {
                for (int i = 0; i < 50; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(cache, 64 + random.nextInt(64 * 1024), a);
                    general.add(a, seed++);
                    Allocation b = new Allocation();
                    log.allocate(100 + random.nextInt(16_000), b);
                    sequential.add(b, seed++);
                }
                long before = pool.committedBytes();
                CompactionStats done = pool.compact();
                int r = round;
                assertEquals(0, done.bytesFreed(), () -> "round " + r + ": " + done);
                assertEquals(0, done.chunksFreed(), () -> "round " + r + ": " + done);
                assertEquals(before, pool.committedBytes(), () -> "round " + r + ": " + done + "\n" + pool.report());
                moved += done.movedEntries();
            }
            // 1 entry in 40 compactions of this seed; choosing by all free bytes, subpages' free elements included,
            // moved 146
            assertTrue(moved <= 2, "entries moved: " + moved);
            general.check();
            sequential.check();
            general.freeAll();
            sequential.freeAll();
        }
    }

    /**
     * An owner that keeps its entries by region key looks, during a
     * compaction, only at the entries under the evacuation's keys: every
     * entry the evacuation contains is under one of them (checked against a
     * walk of every entry), the owner moves them all, and looks at a small
     * share of the cache.
     */
    @Test
    void anOwnerKeepingEntriesByRegionKeyLooksOnlyAtWhatMoves() {
        try (MemoryPool pool = ungroupedPool()) {
            Random random = new Random(36);
            Category cache = pool.category("cache");
            SequentialAllocator log = pool.sequential("log");
            java.util.Map<Long, List<Allocation>> byKey = new java.util.HashMap<>();
            List<Allocation> all = new ArrayList<>();
            for (int i = 0; i < 20_000; i++) {
                Allocation a = new Allocation();
                if (i % 2 == 0) {
                    pool.allocate(cache, 64 + random.nextInt(4096), a);
                } else {
                    log.allocate(64 + random.nextInt(4096), a);
                }
                MovingOwner.fill(a, i);
                all.add(a);
            }
            // the entries of a few chunks thin out; everywhere else nothing is freed
            Set<Long> thinned = new HashSet<>();
            for (Allocation a : all) {
                if (thinned.size() < 6 && random.nextInt(500) == 0) {
                    thinned.add(a.regionKey());
                }
            }
            List<Allocation> kept = new ArrayList<>();
            List<Long> seeds = new ArrayList<>();
            for (int i = 0; i < all.size(); i++) {
                Allocation a = all.get(i);
                if (thinned.contains(a.regionKey()) && random.nextInt(10) > 0) {
                    pool.free(a);
                } else {
                    kept.add(a);
                    seeds.add((long) i);
                    byKey.computeIfAbsent(a.regionKey(), k -> new ArrayList<>()).add(a);
                }
            }
            long[] looked = {0};
            long[] contained = {0};
            Relocator keyed = evacuation -> {
                long[] keys = evacuation.regionKeys();
                for (Allocation a : kept) { // the oracle: a walk of every entry
                    if (evacuation.contains(a)) {
                        contained[0]++;
                        assertTrue(java.util.Arrays.binarySearch(keys, a.regionKey()) >= 0, "an entry to move under no key");
                    }
                }
                for (long key : keys) {
                    List<Allocation> bucket = byKey.remove(key);
                    for (Allocation old : bucket == null ? List.<Allocation>of() : bucket) {
                        looked[0]++;
                        Allocation now = old;
                        Allocation fresh = new Allocation();
                        if (evacuation.contains(old) && evacuation.moveInto(old, fresh)) {
                            kept.set(kept.indexOf(old), fresh);
                            pool.free(old);
                            now = fresh;
                        }
                        byKey.computeIfAbsent(now.regionKey(), k -> new ArrayList<>()).add(now);
                    }
                }
            };
            pool.setRelocator("cache", keyed);
            pool.setRelocator("log", keyed);
            CompactionStats done = pool.compact();
            assertTrue(done.movedEntries() > 0, done::toString);
            assertEquals(contained[0], done.movedEntries(), () -> "every contained entry moved: " + done);
            assertTrue(looked[0] * 10 < kept.size(), () -> "looked at " + looked[0] + " of " + kept.size() + " entries");
            for (int i = 0; i < kept.size(); i++) {
                MovingOwner.verify(kept.get(i), seeds.get(i));
            }
            kept.forEach(pool::free);
            assertEquals(0, pool.requestedBytes());
        }
    }

    /** Frees a random share, from none to all, of an owner's entries. */
    private static void dropAShare(MemoryPool pool, MovingOwner owner, Random random) {
        double share = random.nextDouble();
        for (int i = owner.entries.size() - 1; i >= 0; i--) {
            if (random.nextDouble() < share) {
                pool.free(owner.entries.remove(i));
                owner.seeds.remove(i);
            }
        }
    }

    @Test
    void pinnedSequentialChunksGoToZero() {
        try (MemoryPool pool = pool()) {
            SequentialAllocator log = pool.sequential("log");
            MovingOwner owner = new MovingOwner(pool);
            pool.setRelocator("log", owner);
            List<Allocation> all = new ArrayList<>();
            for (int i = 0; i < 4000; i++) {
                Allocation a = new Allocation();
                log.allocate(4000, a);
                all.add(a);
            }
            for (int i = 0; i < all.size(); i++) {
                if (i % 50 == 0) {
                    owner.add(all.get(i), i);
                } else {
                    pool.free(all.get(i));
                }
            }
            assertTrue(log.stats().pinnedChunks() > 5, log.stats()::toString);
            CompactionStats done = pool.compact();
            assertEquals(0, log.stats().pinnedChunks(), () -> log.stats() + " " + done);
            owner.check();
            owner.freeAll();
        }
    }

    @Test
    void sparseBlocksEmpty() {
        try (MemoryPool pool = pool()) {
            BlockPool blocks = pool.blocks("blocks");
            List<List<Allocation>> payloads = new ArrayList<>();
            for (int i = 0; i < 400; i++) {
                payloads.add(blocks.allocate(40_000 + i));
            }
            List<List<Allocation>> kept = new ArrayList<>();
            for (int i = 0; i < payloads.size(); i++) {
                if (i % 8 == 0) {
                    kept.add(payloads.get(i));
                    for (Allocation part : payloads.get(i)) {
                        MovingOwner.fill(part, i);
                    }
                } else {
                    payloads.get(i).forEach(pool::free);
                }
            }
            pool.setRelocator("blocks", evacuation -> {
                for (int i = 0; i < kept.size(); i++) {
                    List<Allocation> parts = kept.get(i);
                    if (parts.stream().anyMatch(evacuation::contains)) {
                        List<Allocation> moved = evacuation.movePayload(parts);
                        kept.set(i, moved);
                        parts.forEach(pool::free);
                    }
                }
            });
            long usedBlocksBefore = blocks.stats().blocks();
            CompactionStats done = pool.compact();
            assertTrue(done.chunksFreed() > 0, done::toString);
            assertTrue(blocks.stats().blocks() < usedBlocksBefore, () -> blocks.stats() + " " + done);
            for (int i = 0; i < kept.size(); i++) {
                for (Allocation part : kept.get(i)) {
                    MovingOwner.verify(part, i * 8);
                }
            }
            kept.forEach(parts -> parts.forEach(pool::free));
        }
    }

    @Test
    void otherCategoriesNeverMoveAndMisuseIsRefused() {
        try (MemoryPool pool = pool()) {
            MovingOwner owner = fragmented(pool, "cache", 512, 16); // 4 chunks, each an eighth used
            Category network = pool.category("network");
            Allocation foreign = new Allocation();
            pool.allocate(network, 1000, foreign); // in one of the chunks being emptied
            Evacuation[] kept = new Evacuation[1];
            pool.setRelocator("cache", evacuation -> {
                kept[0] = evacuation;
                assertFalse(evacuation.contains(foreign));
                assertThrows(IllegalArgumentException.class, () -> evacuation.moveInto(foreign, new Allocation()));
                owner.relocate(evacuation);
            });
            long foreignAddress = foreign.address();
            CompactionStats done = pool.compact(0.99, Long.MAX_VALUE);
            assertTrue(kept[0] != null && done.movedEntries() > 0, done::toString);
            assertEquals(foreignAddress, foreign.address(), "memory of a category without a relocator never moves");
            owner.check();
            owner.freeAll();
            assertThrows(IllegalStateException.class, () -> kept[0].refused());
            assertThrows(IllegalArgumentException.class, () -> pool.compact(1.0, 1));
            assertThrows(IllegalArgumentException.class, () -> pool.compact(0.5, -1));
            pool.free(foreign);
        }
    }

    /** Fills a general-pool category with 8 KiB runs and keeps one in {@code every}, spread over every chunk. */
    private static MovingOwner fragmented(MemoryPool pool, String category, int runs, int every) {
        Category c = pool.category(category);
        MovingOwner owner = new MovingOwner(pool);
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            Allocation a = new Allocation();
            pool.allocate(c, 8192, a);
            all.add(a);
        }
        for (int i = 0; i < runs; i++) {
            if (i % every == 0) {
                owner.add(all.get(i), i);
            } else {
                pool.free(all.get(i));
            }
        }
        pool.trim();
        return owner;
    }

    @Test
    void backgroundCompactionMovesNoMoreThanItsBudgetATick() {
        ManualTime time = new ManualTime();
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).ticker(time)
                .scheduler(time).compactionBytesPerSecond(64 * 1024).build())) {
            MovingOwner owner = fragmented(pool, "cache", 1024, 16); // 8 chunks, 8 runs (64 KiB) live in each
            time.runScheduled(); // no relocator yet: nothing happens
            assertEquals(0, pool.compactionTotals().compactions());
            pool.setRelocator("cache", owner);
            time.runScheduled();
            CompactionStats first = pool.compactionTotals();
            assertEquals(1, first.compactions());
            assertTrue(first.movedBytes() > 0 && first.movedBytes() <= 64 * 1024, first::toString);
            assertEquals(1, first.chunksFreed(), first::toString);
            for (int tick = 0; tick < 20; tick++) {
                time.runScheduled();
            }
            CompactionStats all = pool.compactionTotals();
            assertTrue(all.movedBytes() <= 21 * 64 * 1024, all::toString);
            assertTrue(all.chunksFreed() >= 6, all::toString);
            owner.check();
            owner.freeAll();
        }
    }

    @Test
    void theCeilingCompactsBeforeRefusing() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1)
                .maxMemory(8L * CHUNK).limitPolicy(LimitPolicy.RETURN_NULL).chunkSource(ChunkSource.direct()).build())) {
            MovingOwner owner = fragmented(pool, "cache", 1024, 16); // the ceiling's 8 chunks, each an eighth used
            Category other = pool.category("other");
            Allocation big = new Allocation();
            assertFalse(pool.allocate(other, 2 * CHUNK / 3, big), "no chunk has a free run this long");
            pool.setRelocator("cache", owner);
            assertTrue(pool.allocate(other, 2 * CHUNK / 3, big), "compaction at the ceiling emptied chunks");
            assertTrue(pool.compactionTotals().chunksFreed() > 0);
            owner.check();
            pool.free(big);
            owner.freeAll();
        }
    }

    @Test
    void aBudgetOfZeroMovesNothingAndUnmarksEverything() {
        try (MemoryPool pool = pool()) {
            MovingOwner owner = fragmented(pool, "cache", 512, 16);
            pool.setRelocator("cache", owner);
            CompactionStats none = pool.compact(0.5, 0);
            assertEquals(0, none.movedEntries());
            assertEquals(0, none.chunksEvacuated());
            CompactionStats done = pool.compact();
            assertTrue(done.chunksFreed() > 0, done::toString);
            owner.check();
            owner.freeAll();
        }
    }

    /**
     * The message of a {@link MemoryLimitException} at the ceiling accounts for
     * its figures: while a category has a relocator, the chunk kept for
     * compactions is why a request is refused with committed bytes a chunk
     * under the ceiling, and the message says so.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class ReserveMessage {

        private static final int KIB = 1024;
        private static final int MIB = 1024 * KIB;

        /**
         * Three of four chunks committed and a relocator registered: a request
         * that needs a new chunk is refused by the compaction reserve. The
         * message showed only "limit 4194304" and "committed=3145728", a
         * refusal with a whole chunk of room by its own numbers.
         */
        @Test
        void aRefusalByTheCompactionReserveNamesTheReserve() {
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).dedicatedAbove(MIB)
                    .arenas(1).limitPolicy(LimitPolicy.FAIL).maxMemory(4L * MIB).chunkSource(ChunkSource.direct()).build());
            pool.setRelocator("cache", evacuation -> { });
            Allocation[] held = new Allocation[3];
            for (int i = 0; i < held.length; i++) {
                held[i] = new Allocation();
                pool.allocate(MIB, held[i]); // a whole chunk each
            }
            assertEquals(3L * MIB, pool.committedBytes());
            MemoryLimitException e = assertThrows(MemoryLimitException.class,
                    () -> pool.allocate(512 * KIB, new Allocation()));
            assertEquals(MemoryLimitException.Kind.CEILING, e.kind());
            assertEquals(4L * MIB, e.limit(), "the ceiling itself");
            assertTrue(e.getMessage().contains(MIB + " bytes of it kept for compactions"), e.getMessage());
            for (Allocation a : held) {
                pool.free(a);
            }
            pool.close();
        }
    }

    /**
     * Compaction with region groups (the default where glibc keeps freed chunks):
     * the memory a compaction empties must leave the process, which with groups
     * means whole groups must empty. The chunk a move takes must therefore not be
     * carved from a group whose every chunk is being emptied, or that group stays
     * committed for one chunk.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class WithRegionGroups {

        @Test
        void groupsWhoseChunksAllEmptyGoBack() {
            assumeTrue(MallocWarning.regionGroupsWanted(), "region groups are off here (not glibc, or slabwise.noRegionGroups)");
            int chunk = 4 * 1024 * 1024;
            try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(chunk).arenas(1).build())) {
                Category cache = pool.category("cache");
                MovingOwner kept = new MovingOwner(pool);
                pool.setRelocator("cache", kept);
                // 64 MiB of 1-16 KiB entries: two whole groups and the regions on their own; then 90% freed at random
                Random random = new Random(7);
                List<Allocation> all = new ArrayList<>();
                long filled = 0;
                while (filled < 64L << 20) {
                    Allocation a = new Allocation();
                    int size = 1024 + random.nextInt(15 * 1024);
                    pool.allocate(cache, size, a);
                    all.add(a);
                    filled += size;
                }
                Collections.shuffle(all, random);
                for (int i = 0; i < all.size(); i++) {
                    if (i % 10 == 0) {
                        kept.adopt(all.get(i));
                    } else {
                        pool.free(all.get(i));
                    }
                }
                pool.trim();
                long before = pool.committedBytes();
                CompactionStats done = pool.compact();
                pool.trim();
                int chunks = pool.stats().chunks();
                long committed = pool.committedBytes();
                assertEquals(kept.entries.size(), done.movedEntries(), done::toString);
                assertTrue(chunks <= 2, () -> chunks + " chunks after " + done);
                // the chunks left fit in one group, beside at most the regions a pool may keep on their own
                long bound = RegionGroups.GROUP_SIZE + CommittedMemory.ALONE_BUDGET;
                assertTrue(committed <= bound, () -> "committed " + (committed >> 20) + " MiB for " + chunks + " chunks (before: "
                        + (before >> 20) + " MiB), at most " + (bound >> 20) + " MiB expected; " + done);
                kept.freeAll();
            }
        }

        /**
         * Every group keeps two dense chunks (three quarters used) beside six
         * sparse ones (a sixteenth used): emptying the sparse chunks alone would
         * free no group. A group that is at most half used as a whole is emptied
         * whole, its dense chunks too, so groups go back and committed memory
         * falls by at least one group; every entry keeps its bytes.
         */
        @Test
        void aGroupWithDenseChunksIsEmptiedWhole() {
            assumeTrue(MallocWarning.regionGroupsWanted(), "region groups are off here (not glibc, or slabwise.noRegionGroups)");
            int chunk = 4 * 1024 * 1024;
            int entry = 64 * 1024;
            int perChunk = chunk / entry;
            int chunks = 3 * RegionGroups.GROUP_SIZE / chunk;
            // the direct source: groups are for malloc'd chunks, and Java 22+ maps chunks by default
            try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(chunk).arenas(1).maxCachedSize(0)
                    .chunkSource(ChunkSource.direct()).maxMemory(Long.MAX_VALUE).build())) {
                Category cache = pool.category("cache");
                MovingOwner owner = new MovingOwner(pool);
                List<Allocation> all = new ArrayList<>();
                for (int i = 0; i < chunks * perChunk; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(cache, entry, a); // chunk by chunk, in order
                    all.add(a);
                }
                for (int i = 0; i < all.size(); i++) {
                    int inChunk = i % perChunk;
                    boolean dense = (i / perChunk) % 4 == 0;
                    if (dense ? inChunk % 4 != 0 : inChunk % 16 == 0) {
                        owner.add(all.get(i), i);
                    } else {
                        pool.free(all.get(i));
                    }
                }
                pool.setRelocator("cache", owner);
                pool.trim();
                long before = pool.committedBytes();
                CompactionStats done = pool.compact();
                pool.trim();
                long after = pool.committedBytes();
                owner.check();
                assertTrue(done.movedEntries() > owner.entries.size() / 2, () -> "the dense chunks' entries moved too: " + done);
                assertTrue(after <= before - RegionGroups.GROUP_SIZE, () -> "committed " + (before >> 20) + " MiB -> "
                        + (after >> 20) + " MiB after " + done + "\n" + pool.stats().report());
                owner.freeAll();
            }
        }
    }
}
