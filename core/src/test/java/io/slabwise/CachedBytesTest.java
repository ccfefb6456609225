package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** cachedBytes() counts thread-cached memory only, not the free room inside sequential and block chunks. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
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

    /** With thread caches on, the bytes they hold are counted whole, whatever sequential allocators and block pools hold. */
    @Test
    void cachedBytesAreThoseTheThreadCachesHold() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).chunkSource(PoolMemory.chunkByChunk()).build());
        List<Allocation> small = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            Allocation a = new Allocation();
            pool.allocate(4096, a);
            small.add(a);
        }
        small.forEach(pool::free); // into this thread's cache
        assertEquals(16 * 4096, pool.stats().cachedBytes(), pool.stats()::report);
        Allocation block = new Allocation();
        assertTrue(pool.blocks("block_cache", 256 * 1024, 1).allocateBlock(block));
        Allocation slice = new Allocation();
        assertTrue(pool.sequential("log_cache", 1, 1 << 20).allocate(1000, slice));
        PoolStats stats = pool.stats();
        assertEquals(16 * 4096, stats.cachedBytes(), stats::report);
        pool.free(block);
        pool.free(slice);
        pool.close();
        assertEquals(0, pool.committedBytes());
    }
}
