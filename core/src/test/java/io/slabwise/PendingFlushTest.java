package io.slabwise;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A flush asked of a live thread's cache (by a caller waiting at the ceiling,
 * or by a trim) is answered at that thread's next allocation or release,
 * whatever path the release takes: one that passes the cache by (a release
 * while someone waits, a dedicated region's) must answer it too, or the
 * memory in that cache stays out of reach of the waiter and of the trim.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PendingFlushTest {

    private static final int CHUNK = 64 * 1024;

    /**
     * One arena of {@code chunkSize} chunks under a ceiling of one chunk,
     * where callers wait up to 5 s; no background decay races the test.
     */
    private static MemoryPool oneChunkCeiling(int chunkSize) {
        ManualTime time = new ManualTime();
        return new MemoryPool(PoolConfig.builder().chunkSize(chunkSize).arenas(1).arenaSpreadBytes(0)
                .maxMemory(chunkSize).limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(5))
                .chunkSource(ChunkSource.direct()).ticker(time).scheduler(time).build());
    }

    @Test
    void aReleaseWhileACallerWaitsHonoursThePendingFlush() throws Exception {
        releaseWhileACallerWaits(true);
    }

    /** The same when what the thread releases is another thread's allocation (a consumer's release). */
    @Test
    void aReleaseOfAnotherThreadsBufferWhileACallerWaitsHonoursThePendingFlush() throws Exception {
        releaseWhileACallerWaits(false);
    }

    /**
     * Queues a caller for {@code bytes} at the ceiling, opens {@code releaseNow}
     * for the other thread once it waits, and returns what the caller got
     * when it was served or gave up (its failure in {@code waiterFailure});
     * then opens {@code waiterDone}, so the other thread stays alive until then.
     */
    private static Allocation waitThenLetGo(MemoryPool pool, int bytes, CountDownLatch releaseNow,
                                            CountDownLatch waiterDone, AtomicReference<Throwable> waiterFailure)
            throws InterruptedException {
        Allocation out = new Allocation();
        Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(bytes, out), waiterFailure);
        ConcurrentTasks.awaitWaiting(pool, 1);
        releaseNow.countDown();
        waiter.join();
        waiterDone.countDown();
        return out;
    }

    private static void releaseWhileACallerWaits(boolean itsOwn) throws Exception {
        MemoryPool pool = oneChunkCeiling(CHUNK);
        CountDownLatch cached = new CountDownLatch(1);
        CountDownLatch releaseNow = new CountDownLatch(1);
        CountDownLatch waiterDone = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation c = new Allocation();
        if (!itsOwn) {
            pool.allocate(1024, c); // by this thread, released by the other
            pool.trim(); // what its refill took besides stays in no cache of this thread
        }
        Thread consumer = ConcurrentTasks.startCapturingFailure(() -> {
            Allocation a = new Allocation();
            pool.allocate(1024, a);
            if (itsOwn) {
                pool.allocate(1024, c);
            }
            pool.free(a); // into this thread's cache: the only chunk stays in use
            cached.countDown();
            ConcurrentTasks.await(releaseNow, "the waiter did not start waiting");
            pool.free(c); // this thread's next operation: it should honour the flush the waiter asked for
            // stay alive (a pooled worker idling): a dead thread's cache would be reclaimed by the waiter's retry
            ConcurrentTasks.await(waiterDone, "the waiter did not finish");
        }, failure);
        ConcurrentTasks.await(cached, "the consumer did not allocate");

        AtomicReference<Throwable> waiterFailure = new AtomicReference<>();
        Allocation whole = waitThenLetGo(pool, CHUNK, releaseNow, waiterDone, waiterFailure);
        consumer.join();
        assertNull(failure.get(), "consumer failed");
        assertNull(waiterFailure.get(), "the waiter was not served although the only other thread released"
                + " everything it had allocated and had been asked to flush its cache");
        pool.free(whole);
        pool.close();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The same contract after a trim(): a live thread asked to flush whose next
     * operation is the release of a dedicated region (MemoryPool.freeDedicated,
     * never ThreadCache.free) does not flush, so its cached entries pin a chunk
     * that the next trim cannot give back although nothing is live.
     */
    @Test
    void aDedicatedReleaseAfterATrimHonoursThePendingFlush() throws Exception {
        int chunk = 1 << 20;
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(chunk).arenas(1).arenaSpreadBytes(0)
                .minIdleChunks(0).chunkSource(ChunkSource.direct()).ticker(time).scheduler(time).build());
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch releaseNow = new CountDownLatch(1);
        CountDownLatch released = new CountDownLatch(1);
        CountDownLatch checked = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread worker = ConcurrentTasks.startCapturingFailure(() -> {
            Allocation small = new Allocation();
            pool.allocate(1024, small);
            pool.free(small); // cached by this thread: the arena's chunk stays in use
            Allocation region = new Allocation();
            pool.allocate(200 * 1024, region); // above dedicatedAbove (chunk / 8): a region of its own
            holding.countDown();
            ConcurrentTasks.await(releaseNow, "the trim did not run");
            pool.free(region); // the first operation after the trim asked this thread to flush
            released.countDown();
            ConcurrentTasks.await(checked, "the check did not run"); // alive, like a pooled worker
        }, failure);
        ConcurrentTasks.await(holding, "the worker did not allocate");
        pool.trim(); // asks the worker to flush at its next operation
        releaseNow.countDown();
        ConcurrentTasks.await(released, "the worker did not release");
        pool.trim();
        long committed = pool.committedBytes();
        long requested = pool.requestedBytes();
        checked.countDown();
        worker.join();
        assertNull(failure.get(), "worker failed");
        assertEquals(0, requested);
        assertEquals(0, committed, "nothing is live and the only other thread released after being asked to flush,"
                + " yet its cache still pins a chunk");
        pool.close();
    }

    /**
     * Once a thread has answered a flush, a dedicated region it releases while
     * someone waits must still go where the waiter's reclaim can take it (the
     * recent cell or the idle list), not into that thread's slot, where only
     * its own next operation would give it back. The order is forced: the
     * waiter is queued, the worker answers the flush its reclaim asked for
     * (its own trim, which wakes nobody), then releases the region, which is
     * the only release the waiter sees.
     */
    @Test
    void aDedicatedRegionReleasedWhileACallerWaitsIsNotKeptInTheReleasersSlot() throws Exception {
        int chunk = 256 * 1024;
        int region = 160 * 1024; // above dedicatedAbove (chunk / 8): a region of its own; two do not fit the ceiling
        MemoryPool pool = oneChunkCeiling(chunk);
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch releaseNow = new CountDownLatch(1);
        CountDownLatch waiterDone = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread worker = ConcurrentTasks.startCapturingFailure(() -> {
            Allocation held = new Allocation();
            pool.allocate(region, held);
            holding.countDown();
            ConcurrentTasks.await(releaseNow, "the waiter did not start waiting");
            pool.trim(); // answers the flush the waiter asked for: the slot would take a region again
            pool.free(held);
            ConcurrentTasks.await(waiterDone, "the waiter did not finish"); // alive, like a pooled worker
        }, failure);
        ConcurrentTasks.await(holding, "the worker did not allocate");

        AtomicReference<Throwable> waiterFailure = new AtomicReference<>();
        Allocation wanted = waitThenLetGo(pool, region, releaseNow, waiterDone, waiterFailure);
        worker.join();
        assertNull(failure.get(), "worker failed");
        assertNull(waiterFailure.get(), "the region released while the caller waited was kept in the releaser's slot");
        pool.free(wanted);
        pool.close();
        assertEquals(0, pool.committedBytes());
    }
}
