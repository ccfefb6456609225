package io.slabwise;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Compaction with region groups (the default where glibc keeps freed chunks):
 * the memory a compaction empties must leave the process, which with groups
 * means whole groups must empty. The chunk a move takes must therefore not be
 * carved from a group whose every chunk is being emptied, or that group stays
 * committed for one chunk.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CompactionRegionGroupsTest {

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
