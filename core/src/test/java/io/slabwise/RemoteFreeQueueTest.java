package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The remote-free queue: entry encoding, capacity, and many producers against one consumer. */
class RemoteFreeQueueTest {

    @Test
    void entriesRoundTrip() {
        long run = RemoteFreeQueue.encode(70_000, Chunk.runHandle(311, 17));
        assertNotEquals(0, run);
        assertEquals(70_000, RemoteFreeQueue.chunkId(run));
        assertFalse(RemoteFreeQueue.isSubpage(run));
        assertEquals(311, RemoteFreeQueue.runStart(run));
        assertEquals(17, RemoteFreeQueue.lowField(run));
        long element = RemoteFreeQueue.encode(3, Chunk.subpageHandle(40, 2, 509));
        assertTrue(RemoteFreeQueue.isSubpage(element));
        assertEquals(40, RemoteFreeQueue.runStart(element));
        assertEquals(509, RemoteFreeQueue.lowField(element));
    }

    /**
     * The race checked: four producers release memory of one arena through
     * its queue while the arena keeps allocating and draining it under its
     * lock. Every element freed remotely comes back exactly once: after the
     * drain, the arena can hand out every element again and the pool's
     * accounting is back to 0. A full queue makes producers take the lock.
     */
    @Test
    void remoteFreesFromManyThreadsArriveExactlyOnce() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(2).maxCachedSize(0)
                .remoteFreeQueueCapacity(64).build());
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            Allocation a = new Allocation();
            pool.allocate(48, a); // one arena: this thread's
            all.add(a);
        }
        long committedBefore = pool.committedBytes();
        Thread[] producers = new Thread[4];
        for (int t = 0; t < producers.length; t++) {
            List<Allocation> mine = all.subList(t * 5000, (t + 1) * 5000);
            producers[t] = new Thread(() -> mine.forEach(pool::free)); // threads bound to other arenas, or not
            producers[t].start();
        }
        Allocation a = new Allocation();
        for (int i = 0; i < 2000; i++) { // the owner keeps allocating and draining meanwhile
            pool.allocate(48, a);
            pool.free(a);
        }
        for (Thread p : producers) {
            p.join();
        }
        PoolStats stats = pool.stats(); // drains every queue
        assertEquals(0, stats.requestedBytes());
        assertEquals(0, stats.liveAllocations());
        List<Allocation> again = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            Allocation b = new Allocation();
            pool.allocate(48, b);
            again.add(b);
        }
        assertEquals(committedBefore, pool.committedBytes(), "every element came back: no new chunk was needed");
        again.forEach(pool::free);
    }
}
