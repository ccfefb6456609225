package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.CompactionStats;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The relocator shared by a category's caches: registered while a cache has
 * joined it, handing each compaction to every cache joined.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CacheRelocatorTest {

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();
    private final SequentialByteBufAllocator sequential = allocator.sequential("log_cache");

    /** Three partitions on one request thread: the first cycles its bound, the other two keep a batch in ten each. */
    private static void interleave(LogCache busy, LogCache quietA, LogCache quietB) {
        for (long o = 0; o < 1000; o++) {
            assertTrue(busy.append(o, LogCacheRelocationTest.batch(0, o)));
            if (o % 10 == 0) {
                assertTrue(quietA.append(o, LogCacheRelocationTest.batch(1, o)));
            } else if (o % 10 == 5) {
                assertTrue(quietB.append(o, LogCacheRelocationTest.batch(1, o)));
            }
        }
    }

    @Test
    void registeredWhileACacheHasJoined() {
        CacheRelocator relocator = new CacheRelocator(allocator, "log_cache");
        assertEquals("log_cache", relocator.category());
        assertEquals(0, relocator.caches());
        assertSame(CompactionStats.NONE, allocator.compact(), "nothing registered before a cache joins");
        LogCache first = new LogCache(sequential, 1 << 20, relocator);
        LogCache second = new LogCache(sequential, 1 << 20, relocator);
        assertEquals(2, relocator.caches());
        assertEquals(1, allocator.compact().compactions(), "registered");
        first.close();
        first.close(); // leaves once
        assertEquals(1, relocator.caches());
        assertEquals(1, allocator.compact().compactions(), "still registered for the second cache");
        second.close();
        assertEquals(0, relocator.caches());
        assertSame(CompactionStats.NONE, allocator.compact(), "the last cache to leave unregistered it");
        LogCache again = new LogCache(sequential, 1 << 20, relocator);
        assertEquals(1, allocator.compact().compactions(), "a cache joining again registers it again");
        again.close();
    }

    @Test
    void aCacheOfAnotherCategoryCannotJoin() {
        CacheRelocator relocator = new CacheRelocator(allocator, "block_cache");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new LogCache(sequential, 1 << 20, relocator));
        assertTrue(e.getMessage().contains("log_cache"), e.getMessage());
        assertEquals(0, relocator.caches());
        assertThrows(IllegalArgumentException.class,
                () -> new BlockCache(allocator.blocks("network"), 1 << 20, relocator));
        assertSame(CompactionStats.NONE, allocator.compact());
    }

    /** One compaction moves the batches of every partition joined, and the chunks they pinned all go back. */
    @Test
    void everyCacheJoinedMovesItsEntries() {
        CacheRelocator relocator = new CacheRelocator(allocator, "log_cache");
        LogCache busy = new LogCache(sequential, 256 * 1024, relocator);
        LogCache quietA = new LogCache(sequential, 1 << 20, relocator);
        LogCache quietB = new LogCache(sequential, 1 << 20, relocator);
        interleave(busy, quietA, quietB);
        busy.close();
        assertTrue(sequential.stats().pinnedChunks() > 0);

        CompactionStats done = allocator.compact();

        assertTrue(quietA.relocations() > 0 && quietB.relocations() > 0, done::toString);
        assertEquals(quietA.relocations() + quietB.relocations(), done.movedEntries());
        assertEquals(0, sequential.stats().pinnedChunks(), sequential.stats()::toString);
        for (LogCache quiet : new LogCache[] {quietA, quietB}) {
            for (long o = quiet.oldestOffset(); o <= quiet.newestOffset(); o += 10) {
                ByteBuf read = quiet.read(o);
                LogCacheRelocationTest.verify(read, 1, o);
                read.release();
            }
        }
        quietA.close();
        quietB.close();
        assertEquals(0, allocator.stats().category("log_cache").liveBuffers());
    }
}
