package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Caches give memory back before anyone is refused: shrinkers asked at the
 * ceiling, at a quota and in the background above the high watermark, within
 * their bounds, never below a floor, never believed over the pool's own
 * accounting, and never able to break the pool (busy, throwing, re-entering).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PressureTest {

    private static final int CHUNK = 256 * 1024;
    private static final long CEILING = 32L * CHUNK;

    private static PoolConfig.Builder config(ManualTime time) {
        return PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxMemory(CEILING)
                .limitPolicy(LimitPolicy.FAIL).categoryPolicy("log_cache", LimitPolicy.RETURN_NULL)
                .categoryPolicy("block_cache", LimitPolicy.RETURN_NULL).maxIdleChunksPerArena(0)
                .ticker(time).scheduler(time);
    }

    /** Fills {@code cache} with entries of {@code size} until the pool refuses one (its category returns null). */
    private static void fill(ShrinkingCache cache, int size) {
        while (cache.add(size)) {
            assertTrue(cache.size() < 100_000, "the ceiling never refused the cache");
        }
    }

    @Test
    void aNetworkBurstAtTheCeilingIsServedByTheLogCacheDroppingItsOldest() {
        ManualTime time = new ManualTime();
        try (MemoryPool pool = new MemoryPool(config(time).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
            fill(log, 16 * 1024);
            long cached = log.bytes();
            Allocation probe = new Allocation();
            assertThrows(MemoryLimitException.class, () -> pool.allocator("network").allocate(64 * 1024, probe),
                    "without a shrinker the burst is refused");

            assertNull(pool.setShrinker("log_cache", log));
            List<Allocation> burst = new ArrayList<>();
            long burstBytes = CEILING / 4;
            for (long taken = 0; taken < burstBytes; taken += 64 * 1024) {
                Allocation a = new Allocation();
                assertTrue(pool.allocator("network").allocate(64 * 1024, a));
                burst.add(a);
            }
            long shed = cached - log.bytes();
            assertTrue(shed >= burstBytes - CHUNK, "the cache made room for the burst: shed " + shed);
            // each allocation that shrank asked for at least a chunk, and stopped once served
            assertTrue(shed <= burstBytes + 2L * CHUNK, "shed " + shed + " bytes for a burst of " + burstBytes);
            assertTrue(pool.committedBytes() <= CEILING);
            PressureStats stats = pool.pressureStats();
            assertTrue(stats.limitShrinks() > 0);
            assertEquals(stats.limitShrinks(), stats.limitShrinksServed(), "every allocation that shrank was served");
            assertEquals(log.asked.get(), stats.category("log_cache").asked());
            assertEquals(stats.category("log_cache").freed(), shed);
            burst.forEach(pool::free);
            log.clear();
            assertEquals(0, pool.stats().requestedBytes());
        }
    }

    @Test
    void aCacheDoesNotEvictAnotherCacheToGrowUnlessConfiguredTo() {
        ManualTime time = new ManualTime();
        for (boolean configured : new boolean[] {false, true}) {
            PressureConfig pressure = configured
                    ? PressureConfig.builder().takesFromCaches("block_cache", true).build() : PressureConfig.defaults();
            try (MemoryPool pool = new MemoryPool(config(time).pressure(pressure).build())) {
                ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
                ShrinkingCache blocks = new ShrinkingCache(pool, pool.allocator("block_cache"));
                fill(log, 16 * 1024);
                pool.setShrinker("log_cache", log);
                pool.setShrinker("block_cache", blocks);
                long before = log.bytes();
                boolean grew = blocks.add(64 * 1024);
                assertEquals(configured, grew, "configured=" + configured);
                assertEquals(configured, log.bytes() < before, "the log cache shrank: configured=" + configured);
                assertEquals(0, blocks.asked.get(), "its own shrinker had nothing, and says so with reclaimable()=0");
                log.clear();
                blocks.clear();
            }
        }
    }

    @Test
    void aFloorIsNeverShrunk() {
        ManualTime time = new ManualTime();
        long floor = 8L * CHUNK;
        PressureConfig pressure = PressureConfig.builder().floor("log_cache", floor).build();
        try (MemoryPool pool = new MemoryPool(config(time).pressure(pressure).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.allocator("log_cache"));
            fill(log, 16 * 1024);
            pool.setShrinker("log_cache", log);
            Category category = pool.category("log_cache");
            assertTrue(category.tracked, "a floor tracks the category's reserved bytes");
            List<Allocation> burst = new ArrayList<>();
            MemoryLimitException refused = null;
            while (refused == null) {
                Allocation a = new Allocation();
                try {
                    pool.allocator("network").allocate(64 * 1024, a);
                    burst.add(a);
                } catch (MemoryLimitException e) {
                    refused = e;
                }
            }
            assertTrue(category.trackedReserved.get() >= floor, "reserved " + category.trackedReserved.get()
                    + " fell under the floor " + floor);
            assertTrue(category.trackedReserved.get() < floor + CHUNK, "it shrank down to the floor first");
            assertEquals("network", refused.category());
            burst.forEach(pool::free);
            log.clear();
        }
    }

    @Test
    void inTheBackgroundShrinkersAreAskedForNoMoreThanTheBytesAboveTheLowWatermark() {
        ManualTime time = new ManualTime();
        try (MemoryPool pool = new MemoryPool(config(time).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
            ShrinkingCache other = new ShrinkingCache(pool, pool.sequential("block_cache"));
            for (int i = 0; log.add(16 * 1024) && other.add(16 * 1024); i++) {
                assertTrue(i < 100_000);
            }
            long committed = pool.committedBytes();
            long high = (long) (CEILING * 0.9);
            long low = (long) (CEILING * 0.8);
            assertTrue(committed > high, "the caches filled the pool past the high watermark: " + committed);
            time.runScheduled();
            assertEquals(0, pool.pressureStats().highWatermarkCrossings(), "no shrinker, no pressure task");

            pool.setShrinker("log_cache", log);
            pool.setShrinker("block_cache", other);
            time.runScheduled();
            PressureStats stats = pool.pressureStats();
            assertEquals(1, stats.highWatermarkCrossings());
            long asked = log.asked.get() + other.asked.get();
            // each share is rounded up to a byte: at most one byte per shrinker above the excess
            assertTrue(asked <= committed - low + 2, "asked " + asked + " for " + (committed - low) + " above the low mark");
            assertTrue(log.asked.get() > 0 && other.asked.get() > 0, "spread over both caches");
            // the caches freed the excess; what they freed shares a chunk with live entries, at most one per cache
            assertTrue(pool.committedBytes() <= low + 2L * CHUNK && pool.committedBytes() <= high,
                    "committed " + pool.committedBytes() + " not near " + low);
            assertTrue(stats.backgroundGivenBack() >= committed - pool.committedBytes() - CHUNK);
            long askedBefore = asked;
            for (int i = 0; i < 5; i++) {
                time.runScheduled();
            }
            assertEquals(askedBefore, log.asked.get() + other.asked.get(), "below the watermarks nothing is asked");
            log.clear();
            other.clear();
        }
    }

    @Test
    void whenCommittedMemoryDoesNotFollowTheEpisodeStopsInsteadOfEmptyingTheCache() {
        ManualTime time = new ManualTime();
        try (MemoryPool pool = new MemoryPool(config(time).maxCachedSize(0).build())) {
            // cache entries and pinned network buffers alternate in the same chunks: dropping entries frees no chunk
            ShrinkingCache log = new ShrinkingCache(pool, pool.allocator("log_cache"));
            List<Allocation> pinned = new ArrayList<>();
            while (true) {
                if (!log.add(32 * 1024)) {
                    break;
                }
                Allocation a = new Allocation();
                if (!pool.tryAllocate(pool.defaultCategory(), 32 * 1024, a, true)) {
                    break;
                }
                pinned.add(a);
            }
            long committed = pool.committedBytes();
            long low = (long) (CEILING * 0.8);
            long cached = log.bytes();
            pool.setShrinker("log_cache", log);
            for (int i = 0; i < 20; i++) {
                time.runScheduled();
            }
            assertEquals(committed, pool.committedBytes(), "no chunk emptied");
            assertTrue(log.asked.get() <= committed - low + 1, "one episode asks for the excess once: " + log.asked.get());
            assertTrue(log.bytes() >= cached - (committed - low) - 32 * 1024, "the cache kept the rest: " + log.bytes());
            assertTrue(log.bytes() > 0);
            assertEquals(1, pool.pressureStats().highWatermarkCrossings());

            // committed grows by the gap between the marks: a new episode may ask again
            pinned.forEach(pool::free);
            log.clear();
        }
    }

    @Test
    void aCategoryAtItsQuotaAsksItsOwnShrinkerFirst() {
        ManualTime time = new ManualTime();
        long quota = 4L * CHUNK;
        try (MemoryPool pool = new MemoryPool(config(time).quota("log_cache", quota)
                .categoryPolicy("log_cache", LimitPolicy.FAIL).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.allocator("log_cache"));
            pool.setShrinker("log_cache", log);
            for (int i = 0; i < 200; i++) {
                assertTrue(log.add(16 * 1024), "entry " + i);
            }
            Category category = pool.category("log_cache");
            assertTrue(category.trackedReserved.get() <= quota);
            assertTrue(log.dropped.get() > 0);
            assertTrue(log.largestAsk.get() <= 16 * 1024, "a quota asks for what it lacks, not a chunk: "
                    + log.largestAsk.get());
            log.clear();
        }
    }

    @Test
    void aThreadThatMayNotWaitShrinksInlineWithinItsBytes() {
        ManualTime time = new ManualTime();
        long inline = 2L * CHUNK;
        PressureConfig pressure = PressureConfig.builder().inline(inline, Duration.ofMillis(1)).build();
        try (MemoryPool pool = new MemoryPool(config(time).maxCachedSize(0).waitAllowed(() -> false)
                .pressure(pressure).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.allocator("log_cache"));
            List<Allocation> pinned = new ArrayList<>();
            while (log.add(32 * 1024)) {
                Allocation a = new Allocation();
                if (!pool.tryAllocate(pool.defaultCategory(), 32 * 1024, a, true)) {
                    break;
                }
                pinned.add(a);
            }
            pool.setShrinker("log_cache", log);
            // 128 KiB needs a run no dropped 32 KiB entry leaves: every round frees bytes but no room
            Allocation big = new Allocation();
            MemoryLimitException e = assertThrows(MemoryLimitException.class,
                    () -> pool.allocator("network").allocate(128 * 1024, big));
            assertTrue(log.asked.get() <= inline, "asked " + log.asked.get() + " within " + inline);
            assertTrue(log.asked.get() > 0);
            assertEquals(1, pool.pressureStats().limitShrinks());
            assertEquals(0, pool.pressureStats().limitShrinksServed());
            assertTrue(e.getMessage().contains("network"), e.getMessage());
            pinned.forEach(pool::free);
            log.clear();
        }
    }

    @Test
    void aBusyShrinkerIsSkippedAndThePolicyApplies() throws Exception {
        ManualTime time = new ManualTime();
        try (MemoryPool pool = new MemoryPool(config(time).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
            fill(log, 16 * 1024);
            pool.setShrinker("log_cache", log);
            CountDownLatch locked = new CountDownLatch(1);
            CountDownLatch done = new CountDownLatch(1);
            Thread holder = new Thread(() -> {
                log.lock.lock();
                try {
                    locked.countDown();
                    done.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    log.lock.unlock();
                }
            });
            holder.start();
            try {
                locked.await();
                Allocation a = new Allocation();
                assertThrows(MemoryLimitException.class, () -> pool.allocator("network").allocate(64 * 1024, a));
                assertEquals(1, pool.pressureStats().category("log_cache").busy());
                assertEquals(0, pool.pressureStats().category("log_cache").freed());
                assertEquals(0, pool.pressureStats().category("log_cache").asked(), "a busy answer asks nothing");
                assertEquals(0, pool.pressureStats().limitShrinks(), "no shrinker looked: no allocation shrank");
            } finally {
                done.countDown();
                holder.join();
            }
            Allocation a = new Allocation();
            assertTrue(pool.allocator("network").allocate(64 * 1024, a), "once the lock is free the cache gives");
            pool.free(a);
            log.clear();
        }
    }

    @Test
    void aThrowingShrinkerIsCountedAndNeverBreaksThePool() {
        ManualTime time = new ManualTime();
        try (MemoryPool pool = new MemoryPool(config(time).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
            fill(log, 16 * 1024);
            AtomicInteger calls = new AtomicInteger();
            pool.setShrinker("log_cache", log.answering(bytes -> {
                calls.incrementAndGet();
                throw new IllegalStateException("planted failure");
            }));
            for (int i = 0; i < 3; i++) {
                Allocation a = new Allocation();
                assertThrows(MemoryLimitException.class, () -> pool.allocator("network").allocate(64 * 1024, a));
                assertFalse(a.isLive());
            }
            time.runScheduled(); // the background meets it too
            assertEquals(calls.get(), pool.pressureStats().category("log_cache").failures());
            assertTrue(calls.get() >= 4, "asked at each refusal and in the background: " + calls.get());
            assertTrue(pool.report().contains("failed " + calls.get()), pool.report());
            pool.setShrinker("log_cache", log);
            Allocation a = new Allocation();
            assertTrue(pool.allocator("network").allocate(64 * 1024, a), "a working shrinker serves again");
            pool.free(a);
            log.clear();
        }
    }

    @Test
    void aShrinkerThatAllocatesFromThePoolNeverShrinksAgainFromThatCall() {
        ManualTime time = new ManualTime();
        try (MemoryPool pool = new MemoryPool(config(time).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
            fill(log, 16 * 1024);
            AtomicInteger calls = new AtomicInteger();
            List<Boolean> nested = new ArrayList<>();
            pool.setShrinker("log_cache", log.answering(bytes -> {
                calls.incrementAndGet();
                // an index rewrite that needs memory: at the ceiling it is refused, not shrunk for again
                Allocation index = new Allocation();
                boolean got = pool.tryAllocate(pool.category("network"), 4 * CHUNK, index, true);
                nested.add(got);
                if (got) {
                    pool.free(index);
                }
                return log.shrink(bytes);
            }));
            Allocation a = new Allocation();
            assertTrue(pool.allocator("network").allocate(64 * 1024, a));
            assertEquals(List.of(false), nested, "the nested request met the ceiling without recursing");
            assertEquals(1, calls.get());
            pool.free(a);
            log.clear();
        }
    }

    @Test
    void theSettingsAreValidatedAndAClosedPoolTakesNoShrinker() {
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().watermarks(0.8, 0.9));
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().watermarks(1.1, 0.5));
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().watermarks(0.5, 0));
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().floor("x", -1));
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().floor("Bad Name", 1));
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().weight("x", 0));
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().weight("x", Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().inline(-1, Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> PressureConfig.builder().checkPeriod(Duration.ZERO));
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(config(time).build());
        Shrinker none = new ShrinkingCache(pool, pool.allocator("log_cache"));
        int before = time.scheduled();
        pool.setShrinker("log_cache", none);
        assertEquals(before + 1, time.scheduled(), "the first shrinker starts the background check");
        assertSame(none, pool.setShrinker("log_cache", null));
        pool.close();
        time.runScheduled();
        assertTrue(time.scheduled() <= before, "a closed pool's checks stop");
        assertThrows(IllegalStateException.class, () -> pool.setShrinker("log_cache", none));
        assertNotNull(pool.pressureStats().category("log_cache"), "its counts stay");
    }

    @Test
    void withoutACeilingOrWithPressureOffNoShrinkerIsEverAsked() {
        ManualTime time = new ManualTime();
        // a chunk source of the application's own: the pool sets no ceiling for it (a built-in one may get the JVM's)
        ChunkSource own = new ChunkSource() {
            private final ChunkSource direct = ChunkSource.direct();

            @Override
            public NativeRegion allocate(int size) {
                return direct.allocate(size);
            }

            @Override
            public void release(NativeRegion region) {
                direct.release(region);
            }
        };
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).chunkSource(own).ticker(time)
                .scheduler(time).build())) {
            assertEquals(Long.MAX_VALUE, pool.maxMemory());
            int before = time.scheduled();
            pool.setShrinker("log_cache", new ShrinkingCache(pool, pool.allocator("log_cache")));
            assertEquals(before, time.scheduled(), "no ceiling: no background check");
        }
        try (MemoryPool pool = new MemoryPool(config(time).pressure(PressureConfig.builder().background(false).build())
                .build())) {
            int before = time.scheduled();
            ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
            fill(log, 16 * 1024);
            pool.setShrinker("log_cache", log);
            assertEquals(before, time.scheduled(), "no background: no check scheduled");
            time.runScheduled();
            assertEquals(0, log.asked.get(), "above the high watermark, nothing asked without an allocation");
            Allocation a = new Allocation();
            assertTrue(pool.allocator("network").allocate(64 * 1024, a), "at the limit it still shrinks");
            pool.free(a);
            log.clear();
        }
        try (MemoryPool pool = new MemoryPool(config(time).pressure(PressureConfig.off()).build())) {
            ShrinkingCache log = new ShrinkingCache(pool, pool.sequential("log_cache"));
            fill(log, 16 * 1024);
            pool.setShrinker("log_cache", log);
            time.runScheduled();
            Allocation a = new Allocation();
            assertThrows(MemoryLimitException.class, () -> pool.allocator("network").allocate(64 * 1024, a));
            assertEquals(0, log.asked.get());
            log.clear();
        }
    }
}
