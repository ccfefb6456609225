package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.slabwise.metrics.SlabwiseMetrics;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bounded, seeded stress of the paths that give idle memory back and report
 * it: generations of threads that allocate across arenas, hand buffers over
 * to other threads and die with buffers live and memory cached, while the
 * decay, trim, snapshots and the metrics gauges run on other threads. Every
 * snapshot keeps requested &lt;= reserved &lt;= committed, per category and
 * overall; at the end everything returns to exact zeros and no region went
 * back to the chunk source twice.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DecayStressTest {

    private static final int CHUNK = 1 << 20;
    private static final String[] CATEGORIES = {"default", "a", "b"};

    @Test
    void dyingThreadsDecayTrimSnapshotsAndGaugesKeepTheInvariants() throws Exception {
        for (long seed = 1; seed <= 3; seed++) {
            run(seed, false);
        }
    }

    @Test
    void closeWhileThreadsDieAndTheDecayRunsLeavesNothingCommitted() throws Exception {
        for (long seed = 11; seed <= 13; seed++) {
            run(seed, true);
        }
    }

    private static void run(long seed, boolean closeMidway) throws Exception {
        ManualTime time = new ManualTime();
        TrackingSource source = new TrackingSource();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(3).arenaSpreadBytes(0)
                .maxIdleChunksPerArena(2).idleChunkDecay(Duration.ofSeconds(2)).remoteFreeQueueCapacity(64)
                .ticker(time).scheduler(time).chunkSource(source).build());
        for (String c : CATEGORIES) {
            pool.category(c);
        }
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SlabwiseMetrics(pool, "stress").bindTo(registry);

        Queue<Allocation> handedOver = new ConcurrentLinkedQueue<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch generationsDone = new CountDownLatch(1);
        int generations = 6;
        int threadsPerGeneration = 4;

        List<Thread> helpers = new ArrayList<>();
        // the decay, on its own thread, the clock moving half a decay time each run
        helpers.add(ConcurrentTasks.startCapturingFailure(() -> {
            for (int i = 0; i < 400 && generationsDone.getCount() > 0; i++) {
                time.advance(Duration.ofSeconds(1));
                time.runScheduled();
                Thread.yield();
            }
        }, failure));
        // trims, snapshots and gauges
        helpers.add(ConcurrentTasks.startCapturingFailure(() -> {
            for (int i = 0; i < 300 && generationsDone.getCount() > 0; i++) {
                pool.trim();
                check(pool.stats());
            }
        }, failure));
        helpers.add(ConcurrentTasks.startCapturingFailure(() -> {
            for (int i = 0; i < 300 && generationsDone.getCount() > 0; i++) {
                check(pool.stats());
                checkGauges(registry);
                assertTrue(pool.committedBytes() >= 0);
            }
        }, failure));
        // a releaser of what dying threads handed over
        helpers.add(ConcurrentTasks.startCapturingFailure(() -> {
            Random random = new Random(seed * 31);
            while (generationsDone.getCount() > 0 || !handedOver.isEmpty()) {
                Allocation a = handedOver.poll();
                if (a == null) {
                    Thread.yield();
                    continue;
                }
                if (random.nextInt(8) == 0 && a.isLive() && a.requestedBytes() > 1) {
                    pool.resizeInPlace(a, a.requestedBytes() - 1);
                }
                pool.free(a);
            }
        }, failure));

        for (int g = 0; g < generations; g++) {
            List<Thread> generation = new ArrayList<>();
            for (int t = 0; t < threadsPerGeneration; t++) {
                long threadSeed = seed * 1000 + g * 10 + t;
                generation.add(ConcurrentTasks.startCapturingFailure(
                        () -> work(pool, new Random(threadSeed), handedOver), failure));
            }
            if (closeMidway && g == generations / 2) {
                pool.close(); // while this generation allocates, frees, hands over and dies
            }
            for (Thread thread : generation) {
                thread.join(); // they die with memory cached and buffers live, handed over
            }
        }
        generationsDone.countDown();
        for (Thread helper : helpers) {
            helper.join();
        }
        assertNull(failure.get(), () -> "seed " + seed + ": " + failure.get());
        Allocation left;
        while ((left = handedOver.poll()) != null) {
            pool.free(left);
        }
        assertFalse(source.doubleRelease, "a region went back to the chunk source twice");

        PoolStats stats = pool.stats();
        check(stats);
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals(0, stats.liveAllocations(), stats::report);
        for (CategoryStats c : stats.categories()) {
            assertEquals(0, c.requested(), c.name());
            assertEquals(0, c.reserved(), c.name());
            assertEquals(0, c.liveBuffers(), c.name());
        }
        if (closeMidway) {
            // nothing alive holds a cache: the closed pool's decay gives everything back, then stops
            for (int i = 0; i < 3 && time.scheduled() > 0; i++) {
                time.advance(Duration.ofSeconds(1));
                time.runScheduled();
            }
            assertEquals(0, time.scheduled(), "the decay stops once nothing is committed");
        } else {
            pool.trim();
        }
        PoolStats end = pool.stats();
        assertEquals(0, end.committedBytes(), end::report);
        assertEquals(0, end.hugeIdleBytes(), end::report);
        assertEquals(0, end.hugeCommittedBytes(), end::report);
        assertEquals(0, end.hugeAllocations(), end::report);
        assertEquals(0, end.chunks(), end::report);
        assertEquals(0, source.regions.size(), "every region back with the chunk source");
        assertFalse(source.doubleRelease, "a region went back to the chunk source twice");
        checkGauges(registry);
    }

    /** One short-lived thread: allocates a mix, frees some itself, hands some over, keeps some live as it dies. */
    private static void work(MemoryPool pool, Random random, Queue<Allocation> handedOver) {
        List<Allocation> mine = new ArrayList<>();
        try {
            for (int i = 0; i < 400; i++) {
                Allocation a = new Allocation();
                Category category = pool.category(CATEGORIES[random.nextInt(CATEGORIES.length)]);
                pool.allocate(category, size(random), a);
                mine.add(a);
                if (mine.size() > 24 || random.nextInt(3) == 0) {
                    Allocation victim = mine.remove(random.nextInt(mine.size()));
                    if (random.nextInt(3) == 0) {
                        handedOver.add(victim); // released by another thread, maybe after this one died
                    } else {
                        pool.free(victim);
                    }
                }
            }
        } catch (IllegalStateException closed) {
            assertTrue(pool.isClosed(), closed::toString);
        }
        for (int i = 0; i < mine.size(); i++) {
            if (i % 2 == 0) {
                handedOver.add(mine.get(i)); // live as the thread dies
            } else {
                pool.free(mine.get(i)); // cached as it dies
            }
        }
    }

    private static int size(Random random) {
        int kind = random.nextInt(20);
        if (kind < 12) {
            return 1 + random.nextInt(4096);
        }
        if (kind < 16) {
            return 4096 + random.nextInt(60 * 1024);
        }
        if (kind < 18) {
            return 64 * 1024 + random.nextInt(64 * 1024);
        }
        if (kind < 19) {
            return 128 * 1024 + 1 + random.nextInt(600 * 1024);
        }
        return CHUNK + random.nextInt(CHUNK);
    }

    static void check(PoolStats s) {
        assertTrue(s.requestedBytes() >= 0, s::report);
        assertTrue(s.requestedBytes() <= s.reservedBytes(), s::report);
        assertTrue(s.reservedBytes() <= s.committedBytes(), s::report);
        assertTrue(s.liveAllocations() >= 0, s::report);
        // the parts by kind are read after the counters: regions committed since may show there (documented)
        assertTrue(s.hugeCommittedBytes() >= 0, s::report);
        assertTrue(s.hugeIdleBytes() >= 0, s::report);
        assertTrue(s.hugeAllocations() >= 0, s::report);
        assertTrue(s.cachedBytes() >= 0, s::report);
        assertTrue(s.idleChunks() <= s.chunks(), s::report);
        for (CategoryStats c : s.categories()) {
            assertTrue(c.requested() >= 0 && c.requested() <= c.reserved(), s::report);
            assertTrue(c.reserved() <= s.committedBytes(), s::report);
            assertTrue(c.liveBuffers() >= 0, s::report);
        }
    }

    private static void checkGauges(SimpleMeterRegistry registry) {
        for (Gauge gauge : registry.find("slabwise.memory.requested").gauges()) {
            assertTrue(gauge.value() >= 0);
        }
        for (String name : new String[] {"slabwise.memory.reserved", "slabwise.memory.committed",
                "slabwise.memory.cached", "slabwise.category.requested", "slabwise.category.reserved",
                "slabwise.category.buffers", "slabwise.chunks"}) {
            for (Gauge gauge : registry.find(name).gauges()) {
                double value = gauge.value();
                assertTrue(value >= 0, () -> name + " " + value);
            }
        }
    }

    /** Direct memory that knows every region it handed out, and notices one given back twice. */
    static final class TrackingSource implements ChunkSource {
        final Set<Long> regions = ConcurrentHashMap.newKeySet();
        volatile boolean doubleRelease;

        @Override
        public NativeRegion allocate(int size) {
            NativeRegion region = ChunkSource.direct().allocate(size);
            regions.add(region.address());
            return region;
        }

        @Override
        public void release(NativeRegion region) {
            if (!regions.remove(region.address())) {
                doubleRelease = true;
                return;
            }
            ChunkSource.direct().release(region);
        }
    }
}
