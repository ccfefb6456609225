package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The remote-free queue: entry encoding, capacity, and many producers against one consumer. */
class RemoteFreeQueueTest {

    private static final int SMALL = 48;
    private static final int TWO_PAGES = 2 * PoolConfig.PAGE_SIZE;

    private static MemoryPool newPool() {
        return new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(2).arenaSpreadBytes(0).maxCachedSize(0)
                .chunkSource(ChunkSource.direct()).build());
    }

    /**
     * A real arena that is not in the pool's arena table: nothing but the test
     * allocates from it or drains its queue (not even the decay thread), so the
     * test alone decides when the consumer runs.
     */
    private static Arena standaloneArena(MemoryPool pool, int queueCapacity) {
        CommittedMemory memory = new CommittedMemory(pool.config().chunkSource(), new MemoryLimit(Long.MAX_VALUE));
        return new Arena(memory, 99, pool.general.sizes(), pool.general.sizes().chunkSize(), Integer.MAX_VALUE, queueCapacity,
                Ticker.system()); // keeps idle chunks until trimmed
    }

    /** Allocates straight from the arena: one element of 48 bytes, or one run of two pages for every eighth. */
    private static List<Allocation> allocateFrom(Arena arena, int count, boolean withRuns) {
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Allocation a = new Allocation();
            arena.allocate(SizeClasses.indexOf(withRuns && i % 8 == 7 ? TWO_PAGES : SMALL), a);
            all.add(a);
        }
        return all;
    }

    private static long entryOf(Allocation a) {
        return RemoteFreeQueue.encode(a.chunk.id, a.handle);
    }

    private static void drain(Arena arena) {
        synchronized (arena) { // the consumer is whoever holds the arena's lock
            arena.drainRemoteFrees(arena.remoteFrees.capacity());
        }
    }

    private static long usedBytes(Arena arena) {
        return arena.snapshot().usedBytes(); // a snapshot drains the queue first
    }

    @Test
    void entriesRoundTrip() {
        int[] chunkIds = {0, 1, 70_000, (1 << 24) - 1};
        int[][] runs = {{0, 1}, {311, 17}, {32767, 1}, {0, 32768}, {65535, 65535}};
        for (int id : chunkIds) {
            for (int[] run : runs) {
                long entry = RemoteFreeQueue.encode(id, Chunk.runHandle(run[0], run[1]));
                assertNotEquals(0, entry, "an entry is never 0: 0 marks an empty slot");
                assertEquals(id, RemoteFreeQueue.chunkId(entry));
                assertFalse(RemoteFreeQueue.isSubpage(entry));
                assertEquals(run[0], RemoteFreeQueue.runStart(entry));
                assertEquals(run[1], RemoteFreeQueue.lowField(entry));
            }
            for (int element : new int[] {0, 1, 63, 64, 509, 511}) {
                long entry = RemoteFreeQueue.encode(id, Chunk.subpageHandle(40, 2, element));
                assertNotEquals(0, entry);
                assertEquals(id, RemoteFreeQueue.chunkId(entry));
                assertTrue(RemoteFreeQueue.isSubpage(entry));
                assertEquals(40, RemoteFreeQueue.runStart(entry));
                assertEquals(element, RemoteFreeQueue.lowField(entry));
            }
        }
    }

    /** Different frees never share an entry (a seeded sample of chunk ids, runs and elements). */
    @Test
    void distinctFreesHaveDistinctEntries() {
        Random random = new Random(3);
        Set<List<Integer>> frees = new HashSet<>();
        Set<Long> entries = new HashSet<>();
        for (int i = 0; i < 50_000; i++) {
            int id = random.nextInt(1 << 24);
            int start = random.nextInt(32768);
            boolean subpage = random.nextBoolean();
            int low = subpage ? random.nextInt(Subpage.MAX_ELEMENTS) : 1 + random.nextInt(32768);
            long handle = subpage ? Chunk.subpageHandle(start, 1 + random.nextInt(15), low) : Chunk.runHandle(start, low);
            if (frees.add(List.of(id, start, subpage ? 1 : 0, low))) {
                assertTrue(entries.add(RemoteFreeQueue.encode(id, handle)), "two frees encoded alike");
            }
        }
    }

    @Test
    void aChunkIdBeyond24BitsIsRefused() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> RemoteFreeQueue.encode(1 << 24, Chunk.runHandle(0, 1)));
        assertTrue(e.getMessage().contains(String.valueOf(1 << 24)), e.getMessage());
    }

    /** A queue takes exactly its capacity (rounded up to a power of two) of entries when nobody drains it. */
    @Test
    void aQueueHoldsItsCapacityRoundedUpToAPowerOfTwo() {
        int[][] capacities = {{64, 64}, {100, 128}, {1000, 1024}, {4096, 4096}};
        for (int[] c : capacities) {
            RemoteFreeQueue queue = new RemoteFreeQueue(c[0]);
            for (int i = 0; i < c[1]; i++) {
                assertTrue(queue.offer(RemoteFreeQueue.encode(1, Chunk.runHandle(i & 0x7FFF, 1))), "entry " + i + " of " + c[1]);
            }
            assertEquals(c[1], queue.size());
            assertFalse(queue.offer(RemoteFreeQueue.encode(1, Chunk.runHandle(0, 1))), "full at " + c[1]);
            assertEquals(c[1], queue.size(), "a refused offer takes no slot");
        }
        RemoteFreeQueue tiny = new RemoteFreeQueue(2);
        assertTrue(tiny.offer(RemoteFreeQueue.encode(1, Chunk.runHandle(0, 1))));
        assertTrue(tiny.offer(RemoteFreeQueue.encode(1, Chunk.runHandle(1, 1))), "at least the capacity asked for");
    }

    /**
     * On one thread: a full queue refuses, a drain makes room for exactly as
     * many entries as it took, and every entry drained is applied to the
     * arena once, over many wrap-arounds of the ring.
     */
    @Test
    void offerFailsOnlyWhenFullAndADrainMakesRoom() {
        MemoryPool pool = newPool();
        Arena arena = standaloneArena(pool, 64);
        RemoteFreeQueue queue = arena.remoteFrees;
        List<Allocation> all = allocateFrom(arena, 64 * 10 + 10, false);
        long used = usedBytes(arena);
        assertEquals((long) all.size() * SMALL, used);
        int next = 0;
        // a partial fill first, so that later fills wrap around the ring
        for (int i = 0; i < 10; i++) {
            assertTrue(queue.offer(entryOf(all.get(next++))));
        }
        drain(arena);
        assertEquals(0, queue.size());
        for (int round = 0; round < 10; round++) {
            for (int i = 0; i < 64; i++) {
                assertTrue(queue.offer(entryOf(all.get(next++))), "round " + round + ", entry " + i);
            }
            assertFalse(queue.offer(entryOf(all.get(0))), "a full queue refuses");
            assertEquals(64, queue.size());
            drain(arena);
            assertEquals(0, queue.size());
            assertEquals(used - (long) next * SMALL, usedBytes(arena), "every drained entry freed its element once");
        }
        assertEquals(0, usedBytes(arena));
        assertEquals(1, arena.trim(0, 0)[0], "the arena's one chunk is idle, its empty subpage given back");
        assertEquals(0, pool.committedBytes());
    }

    /**
     * A lock holder applies at most {@link Arena#DRAIN_BATCH} remote frees on
     * its way to its own work, however many are queued; the rest wait for the
     * next holder, and a snapshot takes all that a quiet queue holds.
     */
    @Test
    void aLockHolderAppliesAtMostOneBatchOfRemoteFrees() {
        MemoryPool pool = newPool();
        Arena arena = standaloneArena(pool, 1024);
        int queued = 2 * Arena.DRAIN_BATCH + 100;
        List<Allocation> all = allocateFrom(arena, queued + 1, false);
        for (Allocation a : all.subList(0, queued)) {
            assertTrue(arena.remoteFrees.offer(entryOf(a)));
        }
        Allocation mine = new Allocation();
        arena.allocate(SizeClasses.indexOf(SMALL), mine);
        assertEquals(queued - Arena.DRAIN_BATCH, arena.remoteFrees.size(), "an allocation drains one batch");
        arena.free(mine.chunk, mine.handle);
        assertEquals(queued - 2 * Arena.DRAIN_BATCH, arena.remoteFrees.size(), "so does a free");
        Allocation last = all.get(queued);
        assertEquals(SMALL, usedBytes(arena), "a snapshot drains the rest: only the last allocation is in use");
        assertEquals(0, arena.remoteFrees.size());
        arena.free(last.chunk, last.handle);
        arena.trim(0, 0);
        assertEquals(0, pool.committedBytes());
    }

    /**
     * A refill still takes remote frees of its class straight into its batch,
     * in the order they were handed over, from the one batch of frees it
     * drains; frees of the class beyond the refill go back to their subpages,
     * and those beyond the drain stay queued.
     */
    @Test
    void aRefillTakesQueuedFreesOfItsClassFromOneBatch() {
        MemoryPool pool = newPool();
        Arena arena = standaloneArena(pool, 1024);
        int queued = Arena.DRAIN_BATCH + 44;
        List<Allocation> all = allocateFrom(arena, queued, false);
        for (Allocation a : all) {
            assertTrue(arena.remoteFrees.offer(entryOf(a)));
        }
        int[] chunkIds = new int[16];
        long[] handles = new long[16];
        assertEquals(16, arena.allocateBatch(SizeClasses.indexOf(SMALL), chunkIds, handles, 16));
        for (int i = 0; i < 16; i++) {
            assertEquals(all.get(i).handle, handles[i], "the refill took the first frees handed over, in order");
            assertEquals(all.get(i).chunk.id, chunkIds[i]);
        }
        assertEquals(44, arena.remoteFrees.size(), "the frees beyond one batch wait for the next drain");
        assertEquals(16L * SMALL, usedBytes(arena), "the rest of the batch went back; the refill's 16 are in use");
        arena.freeBatch(chunkIds, handles, 0, 16);
        assertEquals(0, usedBytes(arena));
        arena.trim(0, 0);
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The race checked: producers competing for the last free slots of a queue
     * that nobody drains. Exactly {@code capacity} offers succeed in total (no
     * slot is claimed twice, no offer fails while a slot is free), an offer
     * fails only once the queue is full (after a thread's first refusal all its
     * later offers are refused too), and a drain afterwards applies exactly the
     * accepted entries.
     */
    @Test
    void producersRacingForTheLastSlotsFillExactlyTheCapacity() throws Exception {
        MemoryPool pool = newPool();
        Arena arena = standaloneArena(pool, 256);
        int producers = 4;
        int perProducer = 200;
        List<Allocation> all = allocateFrom(arena, producers * perProducer, false);
        CyclicBarrier start = new CyclicBarrier(producers);
        AtomicInteger accepted = new AtomicInteger();
        List<List<Allocation>> refused = new ArrayList<>();
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < producers; t++) {
            List<Allocation> mine = all.subList(t * perProducer, (t + 1) * perProducer);
            List<Allocation> myRefused = new ArrayList<>();
            refused.add(myRefused);
            tasks.add(() -> {
                ConcurrentTasks.await(start, "a thread did not reach the barrier");
                for (Allocation a : mine) {
                    if (arena.remoteFrees.offer(entryOf(a))) {
                        assertTrue(myRefused.isEmpty(), "an offer succeeded after one was refused: nobody drains");
                        accepted.incrementAndGet();
                    } else {
                        myRefused.add(a);
                    }
                }
            });
        }
        ConcurrentTasks.runConcurrently(tasks);
        assertEquals(256, accepted.get());
        assertEquals(256, arena.remoteFrees.size());
        long before = usedBytes(arena); // drains the accepted entries
        assertEquals((long) (all.size() - 256) * SMALL, before, "exactly the accepted entries were applied");
        for (List<Allocation> mine : refused) {
            for (Allocation a : mine) {
                arena.free(a.chunk, a.handle); // a refused entry was never applied: this is its only free
            }
        }
        assertEquals(0, usedBytes(arena));
        arena.trim(0, 0);
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The race checked: four producers hand frees to one arena through a small
     * queue (64 slots, so it is often full and they fall back to the arena's
     * lock) while a consumer drains it under the lock. Every free must be
     * applied exactly once: a duplicate is a double free that the subpage
     * bitmap throws on, a lost one leaves bytes in use at the end, and after
     * the last drain the arena must hand out the same memory again without a
     * new chunk.
     */
    @Test
    void entriesFromManyProducersArriveExactlyOnce() throws Exception {
        MemoryPool pool = newPool();
        Arena arena = standaloneArena(pool, 64);
        int producers = 4;
        int perProducer = 5000;
        List<Allocation> all = allocateFrom(arena, producers * perProducer, true);
        int chunksBefore = arena.snapshot().chunks();
        CyclicBarrier start = new CyclicBarrier(producers + 1);
        CountDownLatch producersDone = new CountDownLatch(producers);
        AtomicInteger viaQueue = new AtomicInteger();
        AtomicInteger viaLock = new AtomicInteger();
        AtomicInteger drains = new AtomicInteger();
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < producers; t++) {
            List<Allocation> mine = all.subList(t * perProducer, (t + 1) * perProducer);
            tasks.add(() -> {
                ConcurrentTasks.await(start, "a thread did not reach the barrier");
                try {
                    for (Allocation a : mine) {
                        if (arena.remoteFrees.offer(entryOf(a))) {
                            viaQueue.incrementAndGet();
                        } else {
                            viaLock.incrementAndGet();
                            arena.free(a.chunk, a.handle); // what a producer does when the queue is full
                        }
                    }
                } finally {
                    producersDone.countDown();
                }
            });
        }
        tasks.add(() -> {
            ConcurrentTasks.await(start, "a thread did not reach the barrier");
            while (producersDone.getCount() > 0) {
                drain(arena);
                drains.incrementAndGet();
            }
            drain(arena);
        });
        ConcurrentTasks.runConcurrently(tasks);
        assertEquals(producers * perProducer, viaQueue.get() + viaLock.get());
        assertTrue(viaQueue.get() > 0, "some frees went through the queue");
        assertEquals(0, arena.remoteFrees.size());
        assertEquals(0, usedBytes(arena), "every free was applied: " + viaQueue + " queued, " + viaLock + " under the lock");
        List<Allocation> again = allocateFrom(arena, producers * perProducer, true);
        assertEquals(chunksBefore, arena.snapshot().chunks(), "all the memory came back: no new chunk");
        assertEquals(chunksBefore, arena.snapshot().chunksAllocated());
        for (Allocation a : again) {
            arena.free(a.chunk, a.handle);
        }
        arena.trim(0, 0);
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The race checked, through the public front: four threads release memory
     * of one arena (through its queue when they are bound to another arena)
     * while the owner keeps allocating and draining it under its lock. Every
     * element freed remotely comes back exactly once: the pool's accounting is
     * back to 0 and the arena can hand out every element again without a new
     * chunk.
     */
    @Test
    void remoteFreesThroughThePoolArriveExactlyOnce() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(2).arenaSpreadBytes(0).maxCachedSize(0)
                .remoteFreeQueueCapacity(64).chunkSource(ChunkSource.direct()).build());
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            Allocation a = new Allocation();
            pool.allocate(SMALL, a); // one arena: this thread's
            all.add(a);
        }
        long committedBefore = pool.committedBytes();
        List<Runnable> producers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            List<Allocation> mine = all.subList(t * 5000, (t + 1) * 5000);
            producers.add(() -> mine.forEach(pool::free));
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread releasers = new Thread(() -> {
            try {
                ConcurrentTasks.runConcurrently(producers);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        releasers.start();
        Allocation a = new Allocation();
        for (int i = 0; i < 2000; i++) { // the owner keeps allocating and draining meanwhile
            pool.allocate(SMALL, a);
            pool.free(a);
        }
        releasers.join();
        assertNull(failure.get());
        PoolStats stats = pool.stats(); // drains every queue
        assertEquals(0, stats.requestedBytes());
        assertEquals(0, stats.liveAllocations());
        List<Allocation> again = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            Allocation b = new Allocation();
            pool.allocate(SMALL, b);
            again.add(b);
        }
        assertEquals(committedBefore, pool.committedBytes(), "every element came back: no new chunk was needed");
        again.forEach(pool::free);
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

}
