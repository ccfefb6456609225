package io.slabwise;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The thread cache's stash of blank allocation holders, behind {@link MemoryPool#allocateStashed}. */
@Timeout(60)
class HolderStashTest {

    private final MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).build());

    @AfterEach
    void close() {
        assertEquals(0, pool.stats().liveAllocations());
        pool.close();
    }

    @Test
    void aHolderFreedOnItsThreadServesTheNextAllocation() {
        Allocation first = pool.allocateStashed(pool.defaultCategory(), 100, false);
        assertTrue(first.isLive());
        assertSame(pool.threadCaches.own(), first.owner);
        pool.free(first);
        assertFalse(first.isLive());
        assertEquals(1, pool.threadCaches.own().stashedHolders());
        Allocation second = pool.allocateStashed(pool.defaultCategory(), 5000, false);
        assertSame(first, second);
        assertEquals(5000, second.requestedBytes());
        assertEquals(0, pool.threadCaches.own().stashedHolders());
        pool.free(second);
        assertThrows(IllegalStateException.class, () -> pool.free(second), "a double free still throws");
    }

    @Test
    void theStashKeepsAtMostItsCapacityAndPlainHoldersNeverEnterIt() {
        Allocation[] held = new Allocation[ThreadCache.HOLDER_STASH_CAPACITY + 3];
        for (int i = 0; i < held.length; i++) {
            held[i] = pool.allocateStashed(pool.defaultCategory(), 64, false);
        }
        for (Allocation a : held) {
            pool.free(a);
        }
        assertEquals(ThreadCache.HOLDER_STASH_CAPACITY, pool.threadCaches.own().stashedHolders());
        Allocation plain = new Allocation();
        pool.allocate(64, plain);
        pool.free(plain);
        assertEquals(ThreadCache.HOLDER_STASH_CAPACITY, pool.threadCaches.own().stashedHolders());
    }

    /** The race excluded: a holder freed on another thread never enters either thread's stash. */
    @Test
    void aHolderFreedOnAnotherThreadIsLeftAlone() throws Exception {
        Allocation a = pool.allocateStashed(pool.defaultCategory(), 64, false);
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            int stashedThere = other.submit(() -> {
                pool.free(a);
                ThreadCache own = pool.threadCaches.own();
                return own == null ? 0 : own.stashedHolders();
            }).get();
            assertEquals(0, stashedThere);
        } finally {
            other.shutdown();
            assertTrue(other.awaitTermination(30, TimeUnit.SECONDS));
        }
        assertEquals(0, pool.threadCaches.own().stashedHolders());
        Allocation next = pool.allocateStashed(pool.defaultCategory(), 64, false);
        assertNotSame(a, next);
        pool.free(next);
    }
}
