package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** cachedBytes() counts thread-cached memory only, not the free room inside sequential and block chunks. */
class CachedBytesTest {

    @Test
    void freeRoomInsideCarvedChunksIsNotCountedAsCached() {
        // no thread caches, so that nothing is cached unless the carved chunks and blocks were counted
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxCachedSize(0).build());
        SequentialAllocator log = pool.sequential("log_cache", 1, 1 << 20);
        BlockPool blocks = pool.blocks("block_cache", 256 * 1024, 1);
        Allocation slice = new Allocation();
        log.allocate(1000, slice);
        List<Allocation> payload = blocks.allocate(256 * 1024 + 32 * 1024); // a block and two sub-blocks
        assertEquals(3, payload.size());
        PoolStats stats = pool.stats();
        assertEquals(0, stats.cachedBytes(), stats::report);
        long carved = slice.reservedBytes() + 256 * 1024 + 32 * 1024;
        assertEquals((1 << 20) + 2L * 256 * 1024, stats.committedBytes(), "a chunk and two blocks, one cut into sub-blocks");
        assertEquals((1 << 20) + 2L * 256 * 1024 - carved, stats.carvedFreeBytes(),
                "the chunk and the blocks held, minus what is carved");

        pool.free(slice);
        payload.forEach(pool::free);
        log.trim();
        blocks.trim();
        pool.trim();
        assertEquals(0, pool.stats().carvedFreeBytes());
        assertEquals(0, pool.committedBytes());
    }
}
