package io.slabwise;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A seeded model of a pool under pressure: network buffers, a log cache and a
 * block cache with a floor, whose shrinkers misbehave at random (free less
 * than asked, throw, say busy, allocate from the pool inside the call), with
 * quota changes, trims, compactions and background ticks between. After every
 * step the pool's figures must equal the model's tally exactly, committed
 * memory must stay under the ceiling, and no shrinker may ever be asked for
 * bytes below its floor.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PressureModelTest {

    private static final int CHUNK = 128 * 1024;
    private static final long CEILING = 24L * CHUNK;
    private static final long FLOOR = 3L * CHUNK;

    /** How a shrinker call behaves. */
    private enum Mood { HONEST, HALF, THROWS, BUSY, REENTERS }

    /** A cache whose shrinker's mood is drawn per call, checking the floor before it frees. */
    private static final class MoodyCache extends ShrinkingCache {
        final SplittableRandom random;
        final Category category;
        final long floor;
        String violation;

        MoodyCache(MemoryPool pool, Allocator allocator, long seed, long floor) {
            super(pool, allocator);
            this.random = new SplittableRandom(seed);
            this.category = allocator.category();
            this.floor = floor;
        }

        @Override
        public long shrink(long want) {
            if (floor > 0 && category.trackedReserved.get() - want < floor && violation == null) {
                violation = "asked " + want + " with reserved " + category.trackedReserved.get() + " above a floor of " + floor;
            }
            Mood mood = Mood.values()[random.nextInt(Mood.values().length)];
            switch (mood) {
                case THROWS:
                    throw new IllegalStateException("planted");
                case BUSY:
                    return BUSY;
                case HALF:
                    return super.shrink(Math.max(1, want / 2));
                case REENTERS:
                    Allocation scratch = new Allocation();
                    if (pool.tryAllocate(pool.defaultCategory(), 1 + random.nextInt(CHUNK), scratch, true)) {
                        pool.free(scratch);
                    }
                    return super.shrink(want);
                default:
                    return super.shrink(want);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4})
    void thePoolMatchesTheModelWhateverTheShrinkersDo(long seed) {
        Random random = new Random(seed);
        ManualTime time = new ManualTime();
        PressureConfig pressure = PressureConfig.builder().floor("block_cache", FLOOR).inline(4L * CHUNK, Duration.ZERO)
                .atLimit(8L * CHUNK, Duration.ofMillis(5)).build();
        boolean mayWait = random.nextBoolean();
        try (MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(2)
                .maxMemory(CEILING).limitPolicy(LimitPolicy.RETURN_NULL).quota("log_cache", Long.MAX_VALUE)
                .waitAllowed(() -> mayWait).pressure(pressure).ticker(time).scheduler(time).build())) {
            MoodyCache log = new MoodyCache(pool, pool.sequential("log_cache"), seed * 31, 0);
            MoodyCache blocks = new MoodyCache(pool, pool.allocator("block_cache"), seed * 37, FLOOR);
            pool.setShrinker("log_cache", log);
            pool.setShrinker("block_cache", blocks);
            if (random.nextBoolean()) {
                pool.setRelocator("block_cache", blocks);
            }
            List<Allocation> network = new ArrayList<>();
            long networkBytes = 0;
            for (int step = 0; step < 1500; step++) {
                int op = random.nextInt(100);
                String what;
                if (op < 35) {
                    int size = random.nextInt(4) == 0 ? 1 + random.nextInt(2 * CHUNK) : 1 + random.nextInt(16 * 1024);
                    Allocation a = new Allocation();
                    what = "network " + size;
                    if (pool.allocate(size, a)) {
                        network.add(a);
                        networkBytes += a.requestedBytes();
                    }
                } else if (op < 55 && !network.isEmpty()) {
                    Allocation a = network.remove(random.nextInt(network.size()));
                    what = "free network " + a.requestedBytes();
                    networkBytes -= a.requestedBytes();
                    pool.free(a);
                } else if (op < 72) {
                    int size = 1 + random.nextInt(32 * 1024);
                    what = "log " + size;
                    log.add(size);
                } else if (op < 88) {
                    int size = 1 + random.nextInt(48 * 1024);
                    what = "block " + size;
                    blocks.add(size);
                } else if (op < 92) {
                    what = "tick";
                    time.advance(Duration.ofMillis(100));
                    time.runScheduled();
                } else if (op < 94) {
                    long quota = random.nextBoolean() ? Long.MAX_VALUE : (2 + random.nextInt(8)) * (long) CHUNK;
                    what = "quota " + quota;
                    pool.setQuota("log_cache", quota);
                } else if (op < 96) {
                    what = "trim";
                    pool.trim();
                } else if (op < 98) {
                    what = "compact";
                    pool.compact();
                } else {
                    what = "swap shrinker";
                    pool.setShrinker("log_cache", random.nextBoolean() ? null : log);
                }
                String at = "seed " + seed + " step " + step + " (" + what + ")";
                assertTrue(pool.committedBytes() <= CEILING, at + ": committed " + pool.committedBytes());
                PoolStats stats = pool.stats();
                assertEquals(networkBytes, requested(stats, "network"), at + ": network");
                assertEquals(log.bytes(), requested(stats, "log_cache"), at + ": log cache");
                assertEquals(blocks.bytes(), requested(stats, "block_cache"), at + ": block cache");
                if (blocks.violation != null) {
                    fail(at + ": " + blocks.violation);
                }
            }
            PressureStats done = pool.pressureStats();
            assertTrue(done.category("log_cache").calls() + done.category("block_cache").calls() > 0,
                    "seed " + seed + ": the shrinkers were asked at all");
            network.forEach(pool::free);
            log.clear();
            blocks.clear();
            PoolStats stats = pool.stats();
            assertEquals(0, stats.requestedBytes());
            assertEquals(0, stats.reservedBytes());
        }
    }

    private static long requested(PoolStats stats, String category) {
        CategoryStats c = stats.category(category);
        return c == null ? 0 : c.requested();
    }
}
