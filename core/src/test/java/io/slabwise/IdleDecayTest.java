package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Idle chunks go back to the operating system after the decay time, on the
 * pool's injected clock and scheduler: no sleep, no background thread.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IdleDecayTest {

    private static final int CHUNK = 1 << 20;

    @Test
    void idleChunksGoBackAfterTheDecayTimeKeepingMinIdleChunks() {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).maxCachedSize(0)
                .maxIdleChunksPerArena(3).minIdleChunks(1).idleChunkDecay(Duration.ofSeconds(10)).dedicatedAbove(CHUNK)
                .ticker(time).scheduler(time).chunkSource(ChunkSource.direct()).build());
        assertEquals(1, time.scheduled(), "the pool scheduled its decay");
        List<Allocation> chunks = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Allocation a = new Allocation();
            pool.allocate(CHUNK, a);
            chunks.add(a);
        }
        chunks.forEach(pool::free);
        assertEquals(3L * CHUNK, pool.committedBytes(), "three idle chunks kept for reuse");
        time.assertDecayEdge(Duration.ofSeconds(10), pool::committedBytes, 3L * CHUNK, CHUNK,
                "three idle chunks, minIdleChunks = 1 stays");
    }

    /**
     * A thread alive when the pool closes keeps what its cache holds; once it
     * has ended, the closed pool's decay work reclaims that cache and gives
     * everything back, then stops. Before, close() stopped the decay and the
     * chunk stayed committed until someone called trim() on a closed pool.
     */
    @Test
    void aClosedPoolGivesBackWhatAThreadEndingAfterTheCloseHeld() throws Exception {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).ticker(time).scheduler(time)
                .build());
        CountDownLatch cached = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        Thread thread = new Thread(() -> {
            Allocation a = new Allocation();
            pool.allocate(16, a);
            pool.free(a); // kept in this thread's cache
            cached.countDown();
            ConcurrentTasks.await(closed, "the close");
        });
        thread.start();
        ConcurrentTasks.await(cached, "the thread's cache");
        pool.close();
        assertTrue(pool.committedBytes() > 0, "a live thread's cache is its own until it ends");
        closed.countDown();
        thread.join();
        time.runScheduled();
        assertEquals(0, pool.committedBytes(), pool.stats()::report);
        assertEquals(0, time.scheduled(), "with nothing committed the decay stops");
    }

    @Test
    void closingCancelsTheDecay() {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).ticker(time).scheduler(time).build());
        assertEquals(1, time.scheduled());
        pool.close();
        assertEquals(0, time.scheduled());
    }
}
