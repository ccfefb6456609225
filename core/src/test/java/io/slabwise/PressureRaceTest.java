package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Shrinkers race everything else that touches a cache's memory: network
 * allocations at the ceiling on several threads asking them inline, the
 * background tick, compactions moving the same entries through the cache's
 * relocator, quota changes, {@code trim()} and finally {@code close()}.
 * Nothing may be lost or counted twice: at the end the pool's figures equal
 * what the caches and the network threads hold, and committed memory never
 * passed the ceiling.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PressureRaceTest {

    private static final int CHUNK = 128 * 1024;
    private static final long CEILING = 32L * CHUNK;
    private static final int ROUNDS = 3_000;

    @Test
    void shrinkersRaceAllocationsCompactionsQuotasTrimsAndClose() throws Exception {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(2)
                .maxMemory(CEILING).limitPolicy(LimitPolicy.RETURN_NULL).quota("block_cache", Long.MAX_VALUE)
                .ticker(time).scheduler(time).build());
        ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
        ShrinkingCache blocks = new ShrinkingCache(pool, pool.allocator("block_cache"));
        pool.setShrinker("log_cache", log);
        pool.setShrinker("block_cache", blocks);
        pool.setRelocator("log_cache", log);
        pool.setRelocator("block_cache", blocks);
        AtomicLong networkHeld = new AtomicLong();
        AtomicLong peakCommitted = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        CyclicBarrier start = new CyclicBarrier(5);
        List<List<Allocation>> networkLive = new ArrayList<>();
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            List<Allocation> mine = new ArrayList<>();
            networkLive.add(mine);
            long seed = 11 + t;
            tasks.add(() -> {
                SplittableRandom random = new SplittableRandom(seed);
                ConcurrentTasks.await(start, "network start");
                for (int i = 0; i < ROUNDS; i++) {
                    if (random.nextInt(3) > 0 || mine.isEmpty()) {
                        Allocation a = new Allocation();
                        if (pool.allocate(1 + random.nextInt(CHUNK / 2), a)) {
                            mine.add(a);
                            networkHeld.addAndGet(a.requestedBytes());
                        }
                    } else {
                        Allocation a = mine.remove(random.nextInt(mine.size()));
                        networkHeld.addAndGet(-a.requestedBytes());
                        pool.free(a);
                    }
                    peakCommitted.accumulateAndGet(pool.committedBytes(), Math::max);
                }
            });
        }
        tasks.add(() -> {
            SplittableRandom random = new SplittableRandom(21);
            ConcurrentTasks.await(start, "cache start");
            for (int i = 0; i < ROUNDS; i++) {
                if (random.nextBoolean()) {
                    log.add(1 + random.nextInt(16 * 1024));
                } else {
                    blocks.add(1 + random.nextInt(32 * 1024));
                }
            }
        });
        tasks.add(() -> {
            SplittableRandom random = new SplittableRandom(31);
            ConcurrentTasks.await(start, "operator start");
            for (int i = 0; i < ROUNDS / 10; i++) {
                switch (random.nextInt(4)) {
                    case 0 -> pool.compact();
                    case 1 -> pool.trim();
                    case 2 -> pool.setQuota("block_cache", random.nextBoolean() ? Long.MAX_VALUE : (4 + random.nextInt(8)) * (long) CHUNK);
                    default -> pool.setShrinker("log_cache", random.nextBoolean() ? log : null);
                }
            }
        });
        tasks.add(() -> {
            ConcurrentTasks.await(start, "tick start");
            for (int i = 0; i < ROUNDS / 5 && !stop.get(); i++) {
                time.runScheduled();
            }
        });
        ConcurrentTasks.runConcurrently(tasks);

        assertTrue(peakCommitted.get() <= CEILING, "committed " + peakCommitted.get() + " passed the ceiling");
        PoolStats stats = pool.stats();
        assertEquals(networkHeld.get(), stats.category("network").requested(), "network");
        assertEquals(log.bytes(), stats.category("log_cache") == null ? 0 : stats.category("log_cache").requested());
        assertEquals(blocks.bytes(), stats.category("block_cache").requested());
        assertEquals(blocks.bytes() == 0 ? 0 : stats.category("block_cache").reserved(),
                pool.category("block_cache").trackedReserved.get(), "the tracked reserved bytes agree");
        PressureStats pressure = pool.pressureStats();
        assertTrue(pressure.limitShrinks() > 0, "the race reached the ceiling: " + pressure);
        assertTrue(log.dropped.get() + blocks.dropped.get() > 0);

        // close races the last shrinks: the caches let go after it, and everything goes back
        Thread closer = new Thread(pool::close);
        closer.start();
        log.clear();
        blocks.clear();
        closer.join();
        networkLive.forEach(list -> list.forEach(pool::free));
        assertEquals(0, pool.stats().requestedBytes());
        time.runScheduled();
        assertEquals(0, pool.committedBytes(), "a closed pool gives everything back once released");
    }
}
