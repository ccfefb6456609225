package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Stress tests of the paths where threads meet: cross-thread release, trim under load, reclaiming dead caches. */
class CrossThreadReleaseTest {

    private static final int CHUNK = MemoryPoolTest.CHUNK;

    /** An allocation with the id of the pattern written into it. */
    private record Handed(Allocation allocation, long id) {
        void verifyAndFree(MemoryPool pool) {
            Patterns.verify(allocation, id);
            pool.free(allocation);
        }
    }

    /** Mostly small, some runs, now and then a huge region. */
    private static int size(Random random) {
        int kind = random.nextInt(1000);
        if (kind < 750) {
            return random.nextInt(2049);
        }
        if (kind < 970) {
            return 2049 + random.nextInt(62 * 1024);
        }
        if (kind < 999) {
            return 64 * 1024 + random.nextInt(336 * 1024);
        }
        return CHUNK + 1 + random.nextInt(CHUNK / 4);
    }



    /**
     * The race checked: memory allocated on one thread and released on
     * another, bound to a different arena, so that the release goes through
     * the owning arena's remote-free queue (64 slots, often full, so also
     * under the owner's lock) while the owner keeps allocating from and
     * draining that arena, and its release is counted against the allocating
     * thread's figures by another thread. Four threads, each bound to its own
     * arena, allocate seeded random sizes, write a pattern unique to each
     * allocation, keep half (verified and freed by themselves) and hand the
     * other half, in turn, to each of the three others, which verify and free
     * them; so the releases of one thread's allocations are counted by three
     * threads at once. Memory
     * given to two allocations at once, or reused before its release, shows as
     * a broken pattern; a lost or doubled release shows in the accounting,
     * which must be back to 0, and in committed memory, which must be 0 after
     * a trim.
     */
    @Test
    void allocationsHandedToOtherThreadsAreVerifiedAndReleased() throws Exception {
        MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(4).arenaSpreadBytes(0).remoteFreeQueueCapacity(64).build());
        int threads = 4;
        int perThread = 10_000;
        List<BlockingQueue<Handed>> inboxes = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            inboxes.add(new LinkedBlockingQueue<>());
        }
        // threads bind to arenas one after another (each takes the least used), then all start together
        CountDownLatch[] bindTurn = new CountDownLatch[threads + 1];
        for (int t = 0; t <= threads; t++) {
            bindTurn[t] = new CountDownLatch(t == 0 ? 0 : 1);
        }
        CyclicBarrier start = new CyclicBarrier(threads);
        AtomicIntegerArray arenaOf = new AtomicIntegerArray(threads);
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int self = t;
            tasks.add(() -> {
                ConcurrentTasks.await(bindTurn[self], "a thread did not get there");
                Allocation first = new Allocation();
                pool.allocate(16, first);
                arenaOf.set(self, first.owner.arena.index);
                pool.free(first);
                bindTurn[self + 1].countDown();
                ConcurrentTasks.await(start, "a thread did not reach the barrier");

                Random random = new Random(4242 + self);
                BlockingQueue<Handed> inbox = inboxes.get(self);

                Queue<Handed> kept = new ArrayDeque<>();
                int received = 0;
                for (int i = 0; i < perThread; i++) {
                    Allocation a = new Allocation();
                    assertTrue(pool.allocate(size(random), a));
                    Handed h = new Handed(a, ((long) self << 32) | i);
                    Patterns.write(a, h.id());
                    if (i % 2 == 0) { // to each of the other threads in turn: an owner has several remote releasers
                        inboxes.get((self + 1 + (i / 2) % (threads - 1)) % threads).add(h);
                    } else {
                        kept.add(h);
                        if (kept.size() > 32) {
                            kept.remove().verifyAndFree(pool);
                        }
                    }
                    Handed theirs;
                    while ((theirs = inbox.poll()) != null) {
                        theirs.verifyAndFree(pool);
                        received++;
                    }
                }
                while (!kept.isEmpty()) {
                    kept.remove().verifyAndFree(pool);
                }
                while (received < perThread / 2) { // the others send a third of their halves each: half in all
                    ConcurrentTasks.takeFromNeighbour(inbox).verifyAndFree(pool);
                    received++;
                }
            });
        }
        ConcurrentTasks.runConcurrently(tasks);

        Set<Integer> arenas = new HashSet<>();
        for (int t = 0; t < threads; t++) {
            arenas.add(arenaOf.get(t));
        }
        assertEquals(threads, arenas.size(), "each thread has its own arena, so every handover crosses arenas");
        for (BlockingQueue<Handed> inbox : inboxes) {
            assertTrue(inbox.isEmpty());
        }
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals((long) threads * (perThread + 1), stats.allocations());
        assertEquals(stats.allocations(), stats.releases());
        assertEquals(0, stats.hugeAllocations());
        pool.trim();
        assertEquals(0, pool.committedBytes(), pool.stats()::report);
    }

    /**
     * The race checked: {@code trim()} and {@code stats()} run over and over
     * on one thread while three others (two of them sharing an arena)
     * allocate, write, verify and free. Trim asks live caches to flush and
     * gives idle chunks back under the arena lock; a chunk given back while
     * any of its memory is still in use, or a cached element lost in a
     * flush, shows as a broken pattern, a crash, or accounting that does not
     * return to 0. At the end a last trim brings committed memory to 0.
     */
    @Test
    void trimAndStatsWhileOtherThreadsAllocate() throws Exception {
        MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(2).arenaSpreadBytes(0).build());
        int workers = 3;
        CountDownLatch done = new CountDownLatch(workers);
        CyclicBarrier start = new CyclicBarrier(workers + 1);
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < workers; t++) {
            int self = t;
            tasks.add(() -> {
                ConcurrentTasks.await(start, "a thread did not reach the barrier");
                try {
                    Random random = new Random(77 + self);
                    Queue<Handed> live = new ArrayDeque<>();
                    for (int i = 0; i < 15_000; i++) {
                        Allocation a = new Allocation();
                        pool.allocate(size(random), a);
                        Handed h = new Handed(a, ((long) self << 32) | i);
                        Patterns.write(a, h.id());
                        live.add(h);
                        if (live.size() > 16 || random.nextInt(4) == 0) {
                            live.remove().verifyAndFree(pool);
                        }
                    }
                    while (!live.isEmpty()) {
                        live.remove().verifyAndFree(pool);
                    }
                } finally {
                    done.countDown();
                }
            });
        }
        int[] trims = new int[1];
        tasks.add(() -> {
            ConcurrentTasks.await(start, "a thread did not reach the barrier");
            while (done.getCount() > 0) {
                pool.trim();
                PoolStats stats = pool.stats();
                assertTrue(stats.requestedBytes() <= stats.reservedBytes());
                assertTrue(stats.reservedBytes() <= stats.committedBytes());
                trims[0]++;
            }
        });
        ConcurrentTasks.runConcurrently(tasks);
        assertTrue(trims[0] > 0);
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals(stats.allocations(), stats.releases());
        pool.trim();
        assertEquals(0, pool.committedBytes(), pool.stats()::report);
    }

    /**
     * The race checked: caches of dead threads reclaimed by several threads at
     * once. Batches of short-lived threads fill their caches, hand a few live
     * allocations over and die, while two threads call {@code stats()} and
     * {@code trim()} in a loop and another grows the arenas (growth also
     * reclaims dead caches). Each dead cache must be flushed exactly once: a
     * second flush would free its memory twice (the subpage bitmap throws on
     * that, runs corrupt the accounting); a missed one keeps committed memory
     * above 0 after the last trim.
     */
    @Test
    void deadThreadCachesAreReclaimedOnceWhileReclaimersRace() throws Exception {
        MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(2).arenaSpreadBytes(0).build());
        Queue<Handed> handedOver = new ConcurrentLinkedQueue<>();
        CountDownLatch batchesDone = new CountDownLatch(1);
        List<Runnable> tasks = new ArrayList<>();
        tasks.add(() -> {
            try {
                for (int batch = 0; batch < 12; batch++) {
                    List<Runnable> shortLived = new ArrayList<>();
                    for (int t = 0; t < 6; t++) {
                        long seed = batch * 100L + t;
                        shortLived.add(() -> {
                            Random random = new Random(seed);
                            List<Allocation> mine = new ArrayList<>();
                            for (int i = 0; i < 300; i++) {
                                Allocation a = new Allocation();
                                pool.allocate(random.nextInt(4) == 0 ? 8192 + random.nextInt(200_000) : random.nextInt(3000), a);
                                mine.add(a);
                            }
                            for (int i = 0; i < mine.size(); i++) {
                                Allocation a = mine.get(i);
                                if (i % 50 == 0) {
                                    Handed h = new Handed(a, seed * 1000 + i);
                                    Patterns.write(a, h.id());
                                    handedOver.add(h);
                                } else {
                                    pool.free(a);
                                }
                            }
                        });
                    }
                    ConcurrentTasks.runConcurrently(shortLived); // they have all died when this returns
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            } finally {
                batchesDone.countDown();
            }
        });
        for (int r = 0; r < 2; r++) {
            tasks.add(() -> {
                while (batchesDone.getCount() > 0) {
                    PoolStats stats = pool.stats();
                    assertTrue(stats.requestedBytes() <= stats.reservedBytes());
                    pool.trim();
                }
            });
        }
        tasks.add(() -> {
            Allocation whole = new Allocation();
            while (batchesDone.getCount() > 0) {
                pool.allocate(CHUNK, whole); // often a new chunk: the arena grows and reclaims dead caches
                pool.free(whole);
                pool.trim();
            }
        });
        ConcurrentTasks.runConcurrently(tasks);

        PoolStats live = pool.stats();
        long requested = 0;
        for (Handed h : handedOver) {
            requested += h.allocation().requestedBytes();
        }
        assertEquals(12 * 6 * 6, handedOver.size());
        assertEquals(requested, live.requestedBytes(), live::report);
        assertEquals(handedOver.size(), live.liveAllocations());
        for (Handed h : handedOver) {
            h.verifyAndFree(pool);
        }
        PoolStats end = pool.stats();
        assertEquals(0, end.requestedBytes(), end::report);
        assertEquals(0, end.reservedBytes(), end::report);
        assertEquals(end.allocations(), end.releases());
        pool.trim();
        assertEquals(0, pool.committedBytes(), pool.stats()::report);
    }
}
