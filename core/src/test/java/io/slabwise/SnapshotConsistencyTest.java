package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Statistics taken while other threads allocate and release stay internally consistent. */
class SnapshotConsistencyTest {

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
