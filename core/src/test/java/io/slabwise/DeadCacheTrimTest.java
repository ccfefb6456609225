package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A trim that runs while the decay (or any other reclaimer) is flushing a
 * dead thread's cache still gives back what that cache held: trim promises
 * that dead threads' caches are flushed before idle memory goes back.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeadCacheTrimTest {

    private static final int CHUNK = 1 << 20;
    private static final int REGION = 256 * 1024;

    /**
     * The race forced: the decay has taken a dead thread's cache out of the
     * live ones and is flushing it, held inside the chunk source's release of
     * a region that the flush of the thread's dedicated slot pushed out of
     * the idle list (before the flush reaches the thread's stacks). A trim on
     * another thread meanwhile must not return before that cache is flushed:
     * once it returns, with every buffer released and every thread but the
     * trimming one dead, nothing may be committed. Before, the trim found no
     * dead cache left to flush, gave back what was idle without the chunk the
     * dead thread's stack held, and returned with it committed (until a
     * decay time later).
     */
    @Test
    void aTrimDuringTheDecaysFlushOfADeadCacheWaitsForItAndGivesEverythingBack() throws Exception {
        ManualTime time = new ManualTime();
        HoldingSource source = new HoldingSource();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).arenaSpreadBytes(0)
                .idleChunkDecay(Duration.ofSeconds(10)).ticker(time).scheduler(time).chunkSource(source).build());

        Thread dying = new Thread(() -> {
            Allocation small = new Allocation();
            pool.allocate(64, small);
            pool.free(small); // into its stack, with the rest of the refill: the chunk stays in use
            Allocation region = new Allocation();
            pool.allocate(REGION, region);
            pool.free(region); // into its dedicated slot
        });
        dying.start();
        dying.join();

        // the trimming thread fills its own slot, the recent cell, then the idle list to its bound of a chunk's bytes
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch filled = new CountDownLatch(1);
        CountDownLatch go = new CountDownLatch(1);
        AtomicBoolean trimming = new AtomicBoolean();
        AtomicLong committedAfterTrim = new AtomicLong(-1);
        Thread trimmer = ConcurrentTasks.startCapturingFailure(() -> {
            List<Allocation> regions = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                Allocation a = new Allocation();
                pool.allocate(REGION, a);
                regions.add(a);
            }
            regions.forEach(pool::free);
            filled.countDown();
            ConcurrentTasks.await(go, "the decay held in its flush");
            trimming.set(true);
            pool.trim();
            committedAfterTrim.set(pool.committedBytes());
        }, failure);
        ConcurrentTasks.await(filled, "the idle regions");

        source.arm(); // the next release, the idle region the dead thread's slot pushes out, holds its caller
        Thread decay = ConcurrentTasks.startCapturingFailure(time::runScheduled, failure);
        ConcurrentTasks.await(source.held, "the decay's flush of the dead cache");
        go.countDown();
        // let the trim run until it is done or waits (for the flush under way); then the flush goes on
        while (trimmer.isAlive() && (!trimming.get() || trimmer.getState() == Thread.State.RUNNABLE)) {
            Thread.onSpinWait();
        }
        source.release.countDown();
        trimmer.join();
        decay.join();
        assertNull(failure.get());

        assertEquals(0, committedAfterTrim.get(),
                "every thread but the trimming one is dead and every buffer released: the trim gave everything back");
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals(0, stats.committedBytes(), stats::report);
        assertEquals(0, source.live.get());
    }

    /** Direct memory that counts what it holds, and whose next release after {@link #arm()} waits to be let go. */
    static final class HoldingSource implements ChunkSource {
        final AtomicInteger live = new AtomicInteger();
        final CountDownLatch held = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        private final AtomicBoolean armed = new AtomicBoolean();

        void arm() {
            armed.set(true);
        }

        @Override
        public NativeRegion allocate(int size) {
            NativeRegion region = ChunkSource.direct().allocate(size);
            live.incrementAndGet();
            return region;
        }

        @Override
        public void release(NativeRegion region) {
            if (armed.compareAndSet(true, false)) {
                held.countDown();
                ConcurrentTasks.await(release, "the test letting the release go");
            }
            ChunkSource.direct().release(region);
            live.decrementAndGet();
        }
    }
}
