package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Small pools use few arenas: threads share the first arena until the
 * arenas' chunks reach {@code arenaSpreadBytes}, and spread as the pool
 * grows. Dead threads' caches go back on the pool's own schedule, without
 * anyone reading its statistics.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ArenaSpreadTest {

    private static final int CHUNK = 64 * 1024;

    private static int[] threadsPerArena(MemoryPool pool) {
        List<ArenaSnapshot> arenas = pool.stats().arenaSnapshots();
        int[] bound = new int[arenas.size()];
        for (ArenaSnapshot arena : arenas) {
            bound[arena.index()] = arena.threads();
        }
        return bound;
    }

    /**
     * Four threads allocate a little, at once: they all share the first
     * arena. Then each in turn takes four chunks' worth of runs: as the
     * arenas' chunks pass each multiple of {@code arenaSpreadBytes}, one more
     * arena comes into use and a thread of the crowded first arena moves to
     * it at its next new chunk.
     */
    @Test
    void threadsShareTheFirstArenaWhileThePoolIsSmallAndSpreadAsItGrows() throws Exception {
        int arenas = 4;
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(arenas).chunkSize(CHUNK).arenaSpreadBytes(4L * CHUNK)
                .chunkSource(ChunkSource.direct()).build());
        CyclicBarrier start = new CyclicBarrier(arenas);
        CyclicBarrier small = new CyclicBarrier(arenas + 1);
        CountDownLatch[] turn = new CountDownLatch[arenas];
        CountDownLatch[] grew = new CountDownLatch[arenas];
        for (int i = 0; i < arenas; i++) {
            turn[i] = new CountDownLatch(1);
            grew[i] = new CountDownLatch(1);
        }
        CyclicBarrier done = new CyclicBarrier(arenas + 1);
        AtomicInteger next = new AtomicInteger();
        onThreadsAsync(arenas, start, () -> {
            int me = next.getAndIncrement();
            Allocation a = new Allocation();
            pool.allocate(64, a);
            ConcurrentTasks.await(small, "a thread did not reach the barrier");
            ConcurrentTasks.await(turn[me], "a thread did not get its turn");
            List<Allocation> runs = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                Allocation run = new Allocation();
                pool.allocate(CHUNK / 2, run);
                runs.add(run);
            }
            grew[me].countDown();
            ConcurrentTasks.await(done, "a thread did not reach the barrier");
            runs.forEach(pool::free);
            pool.free(a);
        });
        small.await();
        int[] bound = threadsPerArena(pool);
        assertArrayEquals(new int[] {arenas, 0, 0, 0}, bound, "all threads in the first arena while the pool holds one chunk");
        for (int i = 0; i < arenas; i++) {
            turn[i].countDown();
            grew[i].await();
        }
        bound = threadsPerArena(pool);
        long chunks = pool.committedBytes() / CHUNK;
        done.await();
        joinAll();
        assertArrayEquals(new int[] {1, 1, 1, 1}, bound, "threads per arena after the pool grew to " + chunks + " chunks");
    }

    @Test
    void withNoSpreadBytesThreadsSpreadFromTheStart() throws Exception {
        int arenas = 4;
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(arenas).chunkSize(CHUNK).arenaSpreadBytes(0)
                .chunkSource(ChunkSource.direct()).build());
        CyclicBarrier start = new CyclicBarrier(arenas);
        CyclicBarrier allocated = new CyclicBarrier(arenas + 1);
        CyclicBarrier done = new CyclicBarrier(arenas + 1);
        onThreadsAsync(arenas, start, () -> {
            Allocation a = new Allocation();
            pool.allocate(64, a);
            ConcurrentTasks.await(allocated, "a thread did not reach the barrier");
            ConcurrentTasks.await(done, "a thread did not reach the barrier");
            pool.free(a);
        });
        allocated.await();
        int[] bound = threadsPerArena(pool);
        done.await();
        joinAll();
        assertArrayEquals(new int[] {1, 1, 1, 1}, bound);
    }

    @Test
    void aNegativeSpreadIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> PoolConfig.builder().arenaSpreadBytes(-1));
    }

    /**
     * Threads fill their caches and die; nobody reads the statistics. The
     * pool's scheduled decay, run by hand here, finds them dead and gives
     * their caches back, and the chunks they held go back to the OS.
     */
    @Test
    void deadThreadsCachesGoBackOnTheScheduleWithoutStats() throws Exception {
        ManualTime time = new ManualTime();
        MemoryPool pool = poolWithDeadThreadsCaches(time);
        // read what the pool holds without asking for its figures, which reclaim dead threads' caches themselves
        CommittedMemory memory = PoolMemory.of(pool);
        assertTrue(memory.committed() > 0, "the dead threads' caches hold chunks");
        time.runScheduled();
        assertEquals(0, memory.committed(), "the decay reclaimed the dead threads' caches and gave their chunks back");
    }

    /**
     * The decay's look for dead threads costs the same however many threads
     * there are: 64 live caches a tick, from where the last look stopped.
     * With 100 threads alive and a dead thread's cache registered after
     * theirs, the first look (the shared cache and 63 live ones) finds no
     * dead thread and reclaims nothing; the second reaches the dead one and
     * reclaims it. The 100 live caches stay registered throughout.
     */
    @Test
    void theDecaysLookForDeadThreadsCoversSixtyFourCachesATick() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).scheduler((task, period) -> () -> { }).build());
        int alive = 100;
        CountDownLatch registered = new CountDownLatch(alive);
        CountDownLatch end = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        Runnable allocateAndRelease = () -> {
            Allocation a = new Allocation();
            pool.allocate(1024, a);
            pool.free(a);
        };
        for (int i = 0; i < alive; i++) {
            Thread thread = new Thread(() -> {
                allocateAndRelease.run();
                registered.countDown();
                try {
                    end.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "alive-" + i);
            thread.setDaemon(true);
            thread.start();
            threads.add(thread);
        }
        try {
            registered.await();
            Thread dying = new Thread(allocateAndRelease, "dying");
            dying.start();
            dying.join();
            assertEquals(alive + 1, pool.threadCaches.platformCaches());
            assertEquals(0, pool.threadCaches.reclaimDeadLookingAt(IdleMemory.DECAY_LOOKS), "the first 64 caches are alive");
            assertEquals(alive + 1, pool.threadCaches.platformCaches());
            assertEquals(1, pool.threadCaches.reclaimDeadLookingAt(IdleMemory.DECAY_LOOKS), "the next look reaches the dead one");
            assertEquals(alive, pool.threadCaches.platformCaches());
            assertEquals(0, pool.threadCaches.reclaimDeadLookingAt(IdleMemory.DECAY_LOOKS));
        } finally {
            end.countDown();
            for (Thread thread : threads) {
                thread.join();
            }
        }
        assertEquals(0, pool.requestedBytes());
        pool.close();
    }

    /**
     * Reading the pool's figures gives back the caches of threads that have
     * died first, so no figure counts memory that only a dead thread's cache
     * held, even before the decay runs (it never does here).
     */
    @Test
    void figuresReadAfterThreadsDieDoNotCountTheirCaches() throws Exception {
        MemoryPool pool = poolWithDeadThreadsCaches(new ManualTime());
        CommittedMemory memory = PoolMemory.of(pool);
        assertTrue(memory.committed() > 0, "the dead threads' caches hold chunks");
        assertEquals(0, pool.committedBytes(), "committed bytes, read after the threads died");
        assertEquals(0, pool.reservedBytes());
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, memory.committed(), "the chunks went back to the source");
    }

    /**
     * A pool on {@code time} whose only memory is what four threads, now
     * ended, left in their caches: each allocated 64 small buffers and freed
     * them, into its own cache, which keeps the chunks in use.
     */
    private MemoryPool poolWithDeadThreadsCaches(ManualTime time) throws InterruptedException {
        int threads = 4;
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(2).chunkSize(CHUNK).maxIdleChunksPerArena(0)
                .idleChunkDecay(Duration.ofSeconds(10)).ticker(time).scheduler(time).chunkSource(ChunkSource.direct()).build());
        onThreadsAsync(threads, new CyclicBarrier(threads), () -> {
            List<Allocation> held = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                Allocation a = new Allocation();
                pool.allocate(512, a);
                held.add(a);
            }
            held.forEach(pool::free);
        });
        joinAll();
        return pool;
    }

    private final List<Thread> started = new ArrayList<>();
    private final List<Throwable> failures = new ArrayList<>();

    /** Starts {@code work} on {@code threads} threads that start together; {@link #joinAll} waits for them. */
    private void onThreadsAsync(int threads, CyclicBarrier start, Runnable work) {
        for (int t = 0; t < threads; t++) {
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    work.run();
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            });
            started.add(thread);
            thread.start();
        }
    }

    private void joinAll() throws InterruptedException {
        for (Thread thread : started) {
            thread.join();
        }
        assertTrue(failures.isEmpty(), "failures: " + failures);
    }

}
