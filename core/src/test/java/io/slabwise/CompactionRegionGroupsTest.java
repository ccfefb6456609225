package io.slabwise;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Compaction where chunks are carved from region groups (glibc without
 * {@code MALLOC_MMAP_THRESHOLD_}, the default there): a chunk a compaction
 * empties goes back to its 32 MiB group, and the group leaves the process only
 * once all eight of its chunks are free. Compaction chooses chunks one by one,
 * so when every group keeps some dense chunks, it frees chunks but no group,
 * and committed memory hardly falls.
 *
 * <pre>
 *  group 0  [ dense | sparse | dense | sparse | dense | sparse | dense | sparse ]
 *  group 1  [ dense | sparse | ... ]          the sparse chunks are emptied, no group is
 * </pre>
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CompactionRegionGroupsTest {

    private static final int SIZE = 64 * 1024;
    private static final int CHUNK = 4 * 1024 * 1024;
    private static final int PER_CHUNK = CHUNK / SIZE;
    private static final int CHUNKS = 4 * RegionGroups.GROUP_SIZE / CHUNK;

    /**
     * Every other chunk keeps an eighth of its entries, the others all of
     * theirs; a compaction then empties the sparse half of the chunks, and
     * committed memory should fall by the bytes it reports freed, less the
     * chunks the moved entries filled. Passes where chunks are taken one by
     * one ({@code MALLOC_MMAP_THRESHOLD_} set, or not glibc); fails with region
     * groups: 16 chunks (64 MiB) freed, committed 136 MiB before and 132 after.
     */
    @Test
    @Disabled("fails on glibc without MALLOC_MMAP_THRESHOLD_: compaction chooses chunks, not region groups; the chunks"
            + " it empties stay committed in their groups (a core change, see the simulator's relocation notes)")
    void compactionThatEmptiesChunksGivesTheirMemoryBack() {
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).maxCachedSize(0).build())) {
            Category cache = pool.category("cache");
            List<Allocation> entries = new ArrayList<>();
            pool.setRelocator("cache", evacuation -> {
                for (int i = 0; i < entries.size(); i++) {
                    Allocation old = entries.get(i);
                    Allocation fresh = new Allocation();
                    if (evacuation.contains(old) && evacuation.moveInto(old, fresh)) {
                        entries.set(i, fresh);
                        pool.free(old);
                    }
                }
            });
            Map<Chunk, List<Allocation>> byChunk = new IdentityHashMap<>();
            List<Chunk> order = new ArrayList<>();
            for (int i = 0; i < CHUNKS * PER_CHUNK; i++) {
                Allocation a = new Allocation();
                pool.allocate(cache, SIZE, a);
                byChunk.computeIfAbsent(a.chunk, c -> {
                    order.add(c);
                    return new ArrayList<>();
                }).add(a);
            }
            assertEquals(CHUNKS, order.size(), "one chunk per " + PER_CHUNK + " entries");
            for (int c = 0; c < order.size(); c++) {
                List<Allocation> in = byChunk.get(order.get(c));
                for (int i = 0; i < in.size(); i++) {
                    if (c % 2 == 0 || i % 8 == 0) {
                        entries.add(in.get(i));
                    } else {
                        pool.free(in.get(i));
                    }
                }
            }
            pool.trim();
            long before = pool.committedBytes();
            CompactionStats done = pool.compact();
            pool.trim();
            long after = pool.committedBytes();
            assertEquals(CHUNKS / 2, done.chunksFreed(), done::toString);
            long taken = (done.movedBytes() + CHUNK - 1) / CHUNK * CHUNK; // the chunks the moved entries filled
            assertTrue(after <= before - done.bytesFreed() + taken, () -> "committed " + (before >> 20) + " MiB -> "
                    + (after >> 20) + " MiB after " + done + "\n" + pool.stats().report());
            entries.forEach(pool::free);
        }
    }
}
