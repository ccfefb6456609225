package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pool's statistics: how {@link PoolStats} writes its figures, what
 * {@code cachedBytes} counts, and snapshots taken while other threads
 * allocate and release, which stay consistent and hold nobody up.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PoolStatsTest {

    /**
     * {@link PoolStats#bytes(long)} and the summary: a figure just under a unit
     * boundary, which one decimal rounds up to 1024, reads as one of the next
     * unit, not as {@code 1024.0} of the unit below.
     */
    @Nested
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    class ByteFormat {

        @Test
        void aFigureThatRoundsTo1024ReadsInTheNextUnit() {
            assertEquals("1023 B", PoolStats.bytes(1023));
            assertEquals("1023.9 KiB", PoolStats.bytes(1_048_524)); // 1023.949 KiB
            assertEquals("1.0 MiB", PoolStats.bytes(1_048_525)); // 1023.950 KiB
            assertEquals("1.0 MiB", PoolStats.bytes((1L << 20) - 1));
            assertEquals("1.0 GiB", PoolStats.bytes((1L << 30) - 1));
            assertEquals("1.0 TiB", PoolStats.bytes((1L << 40) - 1));
            assertEquals("-1.0 MiB", PoolStats.bytes(-((1L << 20) - 1)));
            assertEquals("1024.0 TiB", PoolStats.bytes(1L << 50), "the largest unit takes what is above it");
        }

        @Test
        void theSummaryShowsARequestOfAMebibyteLessOneByteAsAMebibyte() {
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).build());
            Allocation a = new Allocation();
            assertTrue(pool.allocate((1 << 20) - 1, a));
            String summary = pool.stats().summary();
            assertTrue(summary.startsWith("requested=1.0 MiB reserved=1.0 MiB "), summary);
            pool.free(a);
            pool.close();
        }
    }

    /** cachedBytes() counts thread-cached memory only, not the free room inside sequential and block chunks. */
    @Nested
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    class CachedBytes {

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

    /** Statistics taken while other threads allocate and release stay internally consistent. */
    @Nested
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    class ConsistentSnapshots {

        /**
         * The race checked: snapshots taken while four threads allocate in three
         * categories and release each other's allocations (so releases are counted
         * by a thread other than the allocating one). Every snapshot must satisfy
         * 0 <= requested <= reserved <= committed, per category and in total, the
         * category sums must equal the totals, and the allocation and release
         * counters must never go backwards. After the workload, everything is 0.
         */
        @Test
        void everySnapshotIsConsistentUnderCrossThreadLoad() throws Exception {
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(2).arenaSpreadBytes(0).build());
            Category[] categories = {pool.defaultCategory(), pool.category("log_cache"), pool.category("replication")};
            int threads = 4;
            List<BlockingQueue<Allocation>> handoff = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                handoff.add(new ArrayBlockingQueue<>(256));
            }
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<String> violation = new AtomicReference<>();
            long[] snapshots = new long[1];
            Thread sampler = new Thread(() -> {
                long lastAllocations = 0;
                long lastReleases = 0;
                while (!stop.get() && violation.get() == null) {
                    PoolStats stats = pool.stats();
                    snapshots[0]++;
                    String problem = check(stats, lastAllocations, lastReleases);
                    if (problem != null) {
                        violation.set(problem + " in " + stats.report());
                    }
                    lastAllocations = stats.allocations();
                    lastReleases = stats.releases();
                }
            });
            sampler.start();
            Thread[] workers = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                int self = t;
                workers[t] = new Thread(() -> {
                    Random random = new Random(77 + self);
                    BlockingQueue<Allocation> out = handoff.get((self + 1) % threads);
                    BlockingQueue<Allocation> in = handoff.get(self);
                    for (int i = 0; i < 40_000; i++) {
                        Allocation a = new Allocation();
                        int size = random.nextInt(8) == 0 ? 1 + random.nextInt(300_000) : 1 + random.nextInt(3000);
                        pool.allocate(categories[random.nextInt(categories.length)], size, a);
                        if (!out.offer(a)) {
                            pool.free(a);
                        }
                        Allocation theirs = in.poll();
                        if (theirs != null) {
                            pool.free(theirs);
                        }
                    }
                });
                workers[t].start();
            }
            for (Thread w : workers) {
                w.join();
            }
            stop.set(true);
            sampler.join();
            for (BlockingQueue<Allocation> q : handoff) {
                Allocation left;
                while ((left = q.poll()) != null) {
                    pool.free(left);
                }
            }
            assertNull(violation.get());
            assertTrue(snapshots[0] > 10, "the sampler ran " + snapshots[0] + " times");
            PoolStats end = pool.stats();
            assertEquals(0, end.requestedBytes(), end::report);
            assertEquals(0, end.reservedBytes(), end::report);
            assertEquals(end.allocations(), end.releases());
            for (CategoryStats c : end.categories()) {
                assertEquals(0, c.requested(), c.name());
                assertEquals(0, c.reserved(), c.name());
            }
        }

        private static String check(PoolStats stats, long lastAllocations, long lastReleases) {
            if (stats.requestedBytes() < 0 || stats.requestedBytes() > stats.reservedBytes()) {
                return "requested " + stats.requestedBytes() + " vs reserved " + stats.reservedBytes();
            }
            if (stats.reservedBytes() > stats.committedBytes()) {
                return "reserved " + stats.reservedBytes() + " over committed " + stats.committedBytes();
            }
            long requested = 0;
            long reserved = 0;
            for (CategoryStats c : stats.categories()) {
                if (c.requested() < 0 || c.requested() > c.reserved()) {
                    return "category " + c.name() + " requested " + c.requested() + " reserved " + c.reserved();
                }
                requested += c.requested();
                reserved += c.reserved();
            }
            if (requested != stats.requestedBytes() || reserved != stats.reservedBytes()) {
                return "category sums differ from the totals";
            }
            if (stats.allocations() < lastAllocations || stats.releases() < lastReleases) {
                return "counters went backwards";
            }
            return null;
        }
    }

    /**
     * A snapshot of the counters makes no allocating or releasing thread wait,
     * and never counts memory twice.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class SnapshotsNeverBlock {

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
}
