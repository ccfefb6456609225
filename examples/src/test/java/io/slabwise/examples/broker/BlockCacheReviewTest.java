package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Review findings on the block cache's accounting. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BlockCacheReviewTest {

    private static final int KIB = 1024;
    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();

    @AfterEach
    void closeAllocator() {
        allocator.close();
    }

    /**
     * A loader that writes more than the size it was given grows the buffer
     * (a block's composite may grow): the cache counts what it holds, so its
     * bytes stay the category's requested bytes and fall back to zero once
     * everything left the cache.
     */
    @Test
    void aLoaderThatWritesPastItsSizeKeepsTheCountTrue() {
        BlockCache cache = new BlockCache(allocator.blocks("block_cache"), 4L << 20);
        int size = 64 * KIB;
        ByteBuf read = cache.getOrLoad("grown", size, (key, buf) -> buf.writeZero(size + 1));
        read.release();
        assertEquals(allocator.stats().category("block_cache").requested(), cache.bytes(),
                "the cache's bytes against its category's requested bytes");
        cache.invalidate("grown");
        assertEquals(0, cache.bytes());
        assertEquals(0, allocator.stats().category("block_cache").requested());
        cache.close();
    }
}
