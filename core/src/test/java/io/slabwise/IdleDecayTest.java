package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    /**
     * The decay's timing on the pool's injected clock: chunks idle for the decay
     * time go back and newer ones stay, {@code minIdleChunks} stay, a chunk
     * reused and idle again starts its time again, idle dedicated regions decay
     * too, a dead thread's cache decays from when it is reclaimed, and nothing
     * goes back twice.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class Timing {

        private static final Duration DECAY = Duration.ofSeconds(10);

        private static PoolConfig.Builder config(ManualTime time, ChunkSource source) {
            return PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxCachedSize(0)
                    .dedicatedAbove(CHUNK).idleChunkDecay(DECAY).ticker(time).scheduler(time).chunkSource(source);
        }

        private static void tick(ManualTime time, int seconds) {
            time.advance(Duration.ofSeconds(seconds));
            time.runScheduled();
        }

        @Test
        void chunksGoBackADecayTimeAfterEachBecameIdleAndMinIdleChunksStay() {
            ManualTime time = new ManualTime();
            DecayStressTest.TrackingSource source = new DecayStressTest.TrackingSource();
            MemoryPool pool = new MemoryPool(config(time, source).maxIdleChunksPerArena(4).minIdleChunks(1).build());
            List<Allocation> chunks = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Allocation a = new Allocation();
                pool.allocate(CHUNK, a);
                chunks.add(a);
            }
            assertEquals(4L * CHUNK, pool.committedBytes());
            pool.free(chunks.get(0)); // idle at 0
            tick(time, 3);
            pool.free(chunks.get(1)); // idle at 3
            tick(time, 3);
            pool.free(chunks.get(2)); // idle at 6
            tick(time, 2);
            pool.free(chunks.get(3)); // idle at 8
            tick(time, 1); // 9
            assertEquals(4L * CHUNK, pool.committedBytes(), "none idle for the decay time yet");
            tick(time, 1); // 10
            assertEquals(3L * CHUNK, pool.committedBytes(), "the first one, idle for 10 s");
            tick(time, 2); // 12
            assertEquals(3L * CHUNK, pool.committedBytes());
            tick(time, 1); // 13
            assertEquals(2L * CHUNK, pool.committedBytes(), "the second");
            tick(time, 3); // 16
            assertEquals(CHUNK, pool.committedBytes(), "the third");
            tick(time, 30);
            assertEquals(CHUNK, pool.committedBytes(), "minIdleChunks = 1 stays past its decay");

            Allocation again = new Allocation();
            pool.allocate(CHUNK, again); // the kept chunk, reused
            assertEquals(CHUNK, pool.committedBytes());
            Allocation second = new Allocation();
            pool.allocate(CHUNK, second);
            pool.free(again); // idle again now: its time starts again
            tick(time, 4);
            pool.free(second);
            tick(time, 5);
            assertEquals(2L * CHUNK, pool.committedBytes(), "the reused chunk's time started again at its release");
            tick(time, 1);
            assertEquals(CHUNK, pool.committedBytes(), "one past its decay; the newest stays as minIdleChunks");
            pool.trim();
            assertEquals(CHUNK, pool.committedBytes(), "trim keeps minIdleChunks too");
            pool.close();
            assertEquals(0, pool.committedBytes());
            assertFalse(source.doubleRelease);
            assertEquals(0, source.regions.size());
        }

        @Test
        void idleDedicatedRegionsDecayListedFromTheirListingAndTheRecentCellFromTheFirstDecayThatSeesIt() {
            ManualTime time = new ManualTime();
            DecayStressTest.TrackingSource source = new DecayStressTest.TrackingSource();
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).idleChunkDecay(DECAY)
                    .ticker(time).scheduler(time).chunkSource(source).build());
            int region = 256 * 1024;
            List<Allocation> regions = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Allocation a = new Allocation();
                pool.allocate(region, a);
                regions.add(a);
            }
            long committed = pool.committedBytes();
            pool.free(regions.get(0)); // this thread's slot
            pool.free(regions.get(1)); // the recent cell
            pool.free(regions.get(2)); // listed at 0
            tick(time, 4);
            pool.free(regions.get(3)); // listed at 4
            tick(time, 5); // 9: the cell first seen at 4
            assertEquals(committed, pool.committedBytes());
            tick(time, 1); // 10
            assertEquals(committed - region, pool.committedBytes(), "the region listed at 0");
            tick(time, 4); // 14
            assertEquals(committed - 3L * region, pool.committedBytes(), "the one listed at 4, and the cell's");
            tick(time, 60);
            assertEquals(committed - 3L * region, pool.committedBytes(), "a live thread's slot is its own");
            PoolStats stats = pool.stats();
            assertEquals(region, stats.hugeIdleBytes(), stats::report);
            assertEquals(0, stats.hugeAllocations(), stats::report);
            pool.trim();
            assertEquals(committed - 4L * region, pool.committedBytes(), "trim flushes this thread's slot");
            assertFalse(source.doubleRelease);
        }

        @Test
        void aDeadThreadsCachedMemoryDecaysFromItsReclaim() throws Exception {
            ManualTime time = new ManualTime();
            DecayStressTest.TrackingSource source = new DecayStressTest.TrackingSource();
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).idleChunkDecay(DECAY)
                    .ticker(time).scheduler(time).chunkSource(source).build());
            Thread thread = new Thread(() -> {
                Allocation a = new Allocation();
                pool.allocate(100, a);
                pool.free(a); // cached
            });
            thread.start();
            thread.join();
            long committed = source.regions.size();
            assertEquals(1, committed);
            tick(time, 5); // reclaimed now: the chunk idle from now
            tick(time, 9);
            assertEquals(1, source.regions.size(), "idle for 9 s");
            tick(time, 1);
            assertEquals(0, source.regions.size(), "idle for 10 s");
            PoolStats stats = pool.stats();
            assertEquals(0, stats.committedBytes(), stats::report);
            assertFalse(source.doubleRelease);
        }
    }
}
