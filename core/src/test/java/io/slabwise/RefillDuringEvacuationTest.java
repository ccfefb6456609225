package io.slabwise;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A thread cache's refill that drains the arena's remote-free queue while a
 * compaction empties a chunk: memory of that chunk others handed back must go
 * back to the chunk, not into the refilling thread's cache, or the chunk
 * cannot empty however much the owners move.
 *
 * <p>Such an entry is in the queue when a thread bound to another arena
 * released the memory after the compaction's choice drained the queue and
 * before the mark (or read the mark just before it was set): the test takes
 * that release's steps by hand, in the relocator, once the chunk is marked.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RefillDuringEvacuationTest {

    private static final int CHUNK = 64 * 1024;
    private static final int ENTRY = 1024;

    @Test
    void remoteFreesOfAChunkBeingEmptiedDoNotRefillACache() {
        ChunkSourceReleaseFailureTest.FailingRelease source = new ChunkSourceReleaseFailureTest.FailingRelease(); // never fails here
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1)
                .maxIdleChunksPerArena(0).chunkSource(source).build())) {
            Category cache = pool.category("cache");
            List<Allocation> all = new ArrayList<>();
            for (int i = 0; i < 2 * CHUNK / ENTRY; i++) {
                Allocation a = new Allocation();
                pool.allocate(cache, ENTRY, a);
                all.add(a);
            }
            Chunk victim = all.get(0).chunk;
            List<Allocation> inVictim = new ArrayList<>();
            List<Allocation> elsewhere = new ArrayList<>();
            for (Allocation a : all) {
                (a.chunk == victim ? inVictim : elsewhere).add(a);
            }
            assertTrue(inVictim.size() >= 12 && elsewhere.size() >= 32, inVictim.size() + " / " + elsewhere.size());
            List<Allocation> releasedRemotely = new ArrayList<>(inVictim.subList(0, 4)); // by "another thread", during the compaction
            List<Allocation> stay = new ArrayList<>(); // not relocatable: its owner has none
            MovingOwner owner = new MovingOwner(pool) {
                @Override
                public void relocate(Evacuation evacuation) {
                    super.relocate(evacuation);
                    assertTrue(victim.evacuating);
                    for (Allocation a : releasedRemotely) {
                        releaseFromAnotherArena(a);
                    }
                    // this thread's cache is empty (the compaction flushed it): the refill drains the queue
                    Allocation next = new Allocation();
                    pool.allocate(cache, ENTRY, next);
                    stay.add(next);
                    MovingOwner.fill(next, 1000 + stay.size() - 1);
                }
            };
            for (int i = 4; i < inVictim.size(); i++) {
                if (i < 12) {
                    owner.add(inVictim.get(i), i);
                } else {
                    pool.free(inVictim.get(i));
                }
            }
            for (int i = 0; i < elsewhere.size(); i++) {
                if (i % 4 == 0) {
                    pool.free(elsewhere.get(i)); // room for the moves in a chunk three quarters used
                } else {
                    stay.add(elsewhere.get(i));
                }
            }
            for (int i = 0; i < stay.size(); i++) {
                MovingOwner.fill(stay.get(i), 1000 + i);
            }
            pool.setRelocator("cache", owner);
            pool.trim(); // this thread's cache back to the arena
            CompactionStats done = pool.compact();
            assertEquals(8, done.movedEntries(), done::toString);

            // whatever the compaction did, the memory a cache took stays valid and its chunk held while it is in use
            if (pool.stats().chunks() > 1) {
                assertSame(victim, victim.arena.chunk(victim.id), "a chunk with memory in a cache is still the arena's");
            }
            for (int i = 0; i < 32; i++) { // takes what the refill cached, then more
                Allocation a = new Allocation();
                pool.allocate(cache, ENTRY, a);
                stay.add(a);
                MovingOwner.fill(a, 1000 + stay.size() - 1);
            }
            owner.check();
            Set<Long> addresses = new HashSet<>();
            for (int i = 0; i < stay.size(); i++) {
                MovingOwner.verify(stay.get(i), 1000 + i);
                assertTrue(addresses.add(stay.get(i).address()), "two live buffers share memory");
            }
            for (Allocation a : owner.entries) {
                assertTrue(addresses.add(a.address()), "two live buffers share memory");
            }
            stay.forEach(pool::free);
            owner.freeAll();
            pool.trim();
            assertEquals(0, pool.committedBytes());
            assertEquals(0, pool.stats().liveAllocations());

            assertEquals(1, done.chunksFreed(), () -> "the chunk all of whose entries moved or were released went back: "
                    + done);
        }
        assertTrue(source.outstanding.isEmpty(), "every region went back to the source, once");
    }

    /**
     * The steps of {@link MemoryPool#free} for memory of another arena on a
     * thread that read the chunk's mark just before a compaction set it:
     * counted as released, then handed over through the remote-free queue.
     */
    private static void releaseFromAnotherArena(Allocation a) {
        Chunk chunk = a.chunk;
        long handle = a.handle;
        Category category = a.category;
        int reserved = a.reserved;
        a.owner.countRelease(category, a.requested, reserved, false, false);
        a.clear();
        chunk.arena.freeFromOtherArena(chunk, handle);
        category.release(reserved);
    }
}
