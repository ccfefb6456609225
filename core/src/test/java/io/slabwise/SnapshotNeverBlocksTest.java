package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A snapshot of the counters makes no allocating or releasing thread wait,
 * and never counts memory twice.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SnapshotNeverBlocksTest {

    /**
     * The race forced: a reader is held inside its snapshot, between reading
     * the allocation side and the release side of the counters (as a reader
     * descheduled there would be). Meanwhile other threads allocate and
     * release tens of thousands of times, across threads; they must all
     * finish while the reader is still stuck. The stuck snapshot, once let go,
     * still holds requested &lt;= reserved &lt;= committed.
     */
    @Test
    void allocationAndReleaseProceedWhileASnapshotIsStuckHalfway() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(2).arenaSpreadBytes(0).build());
        CountDownLatch readerInside = new CountDownLatch(1);
        CountDownLatch workersDone = new CountDownLatch(1);
        AtomicReference<ThreadCaches.Snapshot> stuck = new AtomicReference<>();
        Thread reader = new Thread(() -> stuck.set(pool.threadCaches.snapshot(pool.categories().size(), () -> {
            readerInside.countDown();
            try {
                assertTrue(workersDone.await(30, TimeUnit.SECONDS), "the workers finished while the reader was held");
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            return pool.committedBytes();
        })));
        reader.start();
        assertTrue(readerInside.await(10, TimeUnit.SECONDS));

        List<Runnable> workers = new ArrayList<>();
        java.util.concurrent.ConcurrentLinkedQueue<Allocation> handoff = new java.util.concurrent.ConcurrentLinkedQueue<>();
        for (int t = 0; t < 3; t++) {
            int self = t;
            workers.add(() -> {
                for (int i = 0; i < 20_000; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(64 + (i * 131 + self) % 20_000, a);
                    handoff.add(a);
                    Allocation other = handoff.poll();
                    if (other != null) {
                        pool.free(other); // often another thread's
                    }
                }
            });
        }
        ConcurrentTasks.runConcurrently(workers); // would spin forever if writers waited for readers
        workersDone.countDown();
        reader.join();
        ThreadCaches.Snapshot snapshot = stuck.get();
        assertTrue(snapshot.totalRequested() <= snapshot.totalReserved());
        assertTrue(snapshot.totalReserved() <= snapshot.committed,
                snapshot.totalReserved() + " reserved over " + snapshot.committed + " committed");
        Allocation left;
        while ((left = handoff.poll()) != null) {
            pool.free(left);
        }
        PoolStats end = pool.stats();
        assertEquals(0, end.requestedBytes());
        assertEquals(0, end.reservedBytes());
        assertEquals(end.allocations(), end.releases());
    }

    /**
     * The race forced: between the two passes of a snapshot, memory it saw
     * live is released and reused by another thread, whose cache is read
     * after the first one. Counting the first allocation (seen live) and the
     * reuse would pass the committed bytes; the allocation side of both is
     * read before the release side, so the memory is counted once.
     */
    @Test
    void memoryReleasedAndReusedDuringASnapshotIsCountedOnce() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).maxCachedSize(0)
                .maxIdleChunksPerArena(1).build());
        Allocation first = new Allocation();
        pool.allocate(1 << 20, first); // a whole chunk: the only one committed; this thread's cache comes first
        CountDownLatch reuse = new CountDownLatch(1);
        CountDownLatch reused = new CountDownLatch(1);
        CountDownLatch registered = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation second = new Allocation();
        Thread reuser = new Thread(() -> {
            try {
                Allocation warm = new Allocation();
                pool.allocate(16, warm); // registers its cache, after the first thread's
                pool.free(warm);
                registered.countDown();
                assertTrue(reuse.await(10, TimeUnit.SECONDS));
                pool.free(first);
                pool.allocate(1 << 20, second); // the same memory, counted in this thread's cache
                reused.countDown();
            } catch (Throwable t) {
                failure.set(t);
                reused.countDown();
            }
        });
        reuser.start();
        assertTrue(registered.await(10, TimeUnit.SECONDS));
        pool.trim(); // the reuser's warm-up chunk goes back: only the first allocation's chunk is committed
        ThreadCaches.Snapshot snapshot = pool.threadCaches.snapshot(pool.categories().size(), () -> {
            reuse.countDown(); // between the passes: released and reused on the other thread
            try {
                assertTrue(reused.await(10, TimeUnit.SECONDS));
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            return pool.committedBytes();
        });
        reuser.join();
        assertNull(failure.get());
        assertTrue(second.isLive());
        assertEquals(1 << 20, snapshot.committed);
        assertTrue(snapshot.totalReserved() <= snapshot.committed,
                "counted once: " + snapshot.totalReserved() + " of " + snapshot.committed);
        pool.free(second);
        assertEquals(0, pool.reservedBytes());
    }
}
