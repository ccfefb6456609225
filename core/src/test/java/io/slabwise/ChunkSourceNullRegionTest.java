package io.slabwise;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A chunk source that returns null instead of a region: the allocation fails
 * with a clear exception and the bytes counted for it are uncommitted again,
 * as when a source throws or returns a region of another size; else the
 * ceiling would be lower by as much for good, and a closed pool would never
 * reach zero.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ChunkSourceNullRegionTest {

    private static final int CHUNK = 64 * 1024;

    /** Direct memory, but null for the next {@link #nulls} requests. */
    private static final class NullOnce implements ChunkSource {
        final AtomicInteger nulls = new AtomicInteger();
        final AtomicInteger live = new AtomicInteger();

        @Override
        public NativeRegion allocate(int size) {
            if (nulls.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                return null;
            }
            live.incrementAndGet();
            return ChunkSource.direct().allocate(size);
        }

        @Override
        public void release(NativeRegion region) {
            live.decrementAndGet();
            ChunkSource.direct().release(region);
        }
    }

    @Test
    void aNullRegionLeavesNothingCommittedAndTheCeilingWhole() {
        NullOnce source = new NullOnce();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1)
                .dedicatedAbove(CHUNK).maxCachedSize(0).maxIdleChunksPerArena(0).maxMemory(2L * CHUNK)
                .limitPolicy(LimitPolicy.RETURN_NULL).chunkSource(source).build());
        source.nulls.set(1);
        assertThrows(RuntimeException.class, () -> pool.allocate(CHUNK, new Allocation()));
        assertEquals(0, pool.committedBytes(), "no region was taken");
        Allocation first = new Allocation();
        Allocation second = new Allocation();
        assertTrue(pool.allocate(CHUNK, first));
        assertTrue(pool.allocate(CHUNK, second), "the ceiling has room for both chunks");
        pool.free(first);
        pool.free(second);
        pool.close();
        assertEquals(0, pool.committedBytes());
        assertEquals(0, source.live.get());
    }

    /** The same below the pool, for a region carved from a group and for a region on its own. */
    @Test
    void committedMemoryUncommitsANullRegionWithGroupsAndWithout() {
        for (boolean grouped : new boolean[] {false, true}) {
            NullOnce source = new NullOnce();
            CommittedMemory memory = new CommittedMemory(source, new MemoryLimit(Long.MAX_VALUE), grouped);
            for (int size : new int[] {CHUNK, RegionGroups.GROUP_SIZE}) {
                source.nulls.set(1);
                assertThrows(RuntimeException.class, () -> memory.commit(size, CommittedMemory.RegionKind.CHUNK));
                assertEquals(0, memory.committed(), "grouped " + grouped + ", " + size + " bytes");
                assertEquals(0, memory.regionBytes());
            }
        }
    }
}
