package io.slabwise;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Settings are checked the same whether they come from a builder method or
 * a system property, and the ceiling a user had on direct memory still holds
 * when chunks are mapped.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class PoolConfigTest {

    @ParameterizedTest(name = "-D{0}={1}")
    @CsvSource({
            "slabwise.maxMemory, -5",
            "slabwise.maxMemory, 0",
            "slabwise.maxMemory, 1000",
            "slabwise.maxCachedSize, -1",
            "slabwise.maxCachedBytesPerClass, -1",
            "slabwise.maxCachedEntriesPerClass, -1",
            "slabwise.maxIdleChunksPerArena, -1",
            "slabwise.maxIdleBlocks, -1",
            "slabwise.minIdleChunks, -1",
            "slabwise.waitTimeoutMillis, -1",
            "slabwise.idleChunkDecayMillis, -1",
            "slabwise.chunkSize, 1000",
            "slabwise.firstChunkSize, 1000",
            "slabwise.firstChunkSize, 8388608",
            "slabwise.arenas, 0",
            "slabwise.arenaSpreadBytes, -1",
            "slabwise.arenaSpreadBytes, 1MiB",
            "slabwise.compactionBytesPerSecond, -1",
            "slabwise.limitPolicy, SOMETIMES",
    })
    void aBadSystemPropertyFailsTheBuildNamingTheSetting(String property, String value) {
        IllegalArgumentException e = withProperty(property, value,
                () -> assertThrows(IllegalArgumentException.class, () -> PoolConfig.builder().build()));
        String setting = property.substring("slabwise.".length()).replace("Millis", "");
        assertTrue(e.getMessage().contains(setting), e.getMessage());
    }

    @Test
    void theFirstChunkSizeComesFromItsPropertyAndDefaultsToAtMostTheChunkSize() {
        assertEquals(1 << 20, withProperty("slabwise.firstChunkSize", "1048576",
                () -> PoolConfig.builder().build()).firstChunkSize());
        assertEquals(256 * 1024, PoolConfig.builder().build().firstChunkSize());
        assertEquals(128 * 1024, PoolConfig.builder().chunkSize(128 * 1024).build().firstChunkSize(),
                "the default follows a smaller chunk size");
        assertEquals(4 << 20, PoolConfig.builder().firstChunkSize(4 << 20).build().firstChunkSize(),
                "the chunk size itself: every chunk one size");
    }

    @Test
    void theCeilingMustHoldAtLeastOneChunk() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PoolConfig.builder().chunkSize(1 << 20).maxMemory(1000).build());
        assertTrue(e.getMessage().contains("at least one chunk"), e.getMessage());
        assertEquals(1 << 20, PoolConfig.builder().chunkSize(1 << 20).maxMemory(1 << 20).build().maxMemory());
    }

    /**
     * Direct buffers (Java 17) count against -XX:MaxDirectMemorySize, so the
     * pool needs no ceiling of its own; the Java 22 direct source allocates
     * through the FFM API, which that limit does not see, so it takes it.
     */
    @Test
    void theDirectSourceHasACeilingOnlyWhereTheJvmDoesNotCountIt() {
        PoolConfig config = PoolConfig.builder().chunkSource(ChunkSource.direct()).build();
        assertEquals(DirectChunkSource.countedByJvmLimit() ? Long.MAX_VALUE : JvmDirectMemory.max(), config.maxMemory());
        if (MappedChunkSource.create() != null) { // the Java 22 classes are in use
            assertTrue(!DirectChunkSource.countedByJvmLimit(), "the Java 22 direct source escapes the JVM's limit too");
        }
    }

    /** Mapped chunks escape -XX:MaxDirectMemorySize, so the pool takes it as its own ceiling. */
    @Test
    void mappedChunksTakeTheJvmsDirectMemoryLimitAsTheirCeiling() {
        ChunkSource mapped = MappedChunkSource.create();
        if (mapped == null) {
            assertEquals(ChunkSource.direct(), ChunkSource.preferred(), "no mapping on this JVM: direct buffers");
            return;
        }
        PoolConfig config = PoolConfig.builder().chunkSource(mapped).build();
        assertEquals(JvmDirectMemory.max(), config.maxMemory());
        assertTrue(config.maxMemory() > 0 && config.maxMemory() < Long.MAX_VALUE);
        assertEquals(1L << 30, PoolConfig.builder().chunkSource(mapped).maxMemory(1L << 30).build().maxMemory(),
                "a ceiling the user set wins");
        assertEquals(Long.MAX_VALUE, PoolConfig.builder().chunkSource(mapped).maxMemory(Long.MAX_VALUE).build().maxMemory(),
                "and Long.MAX_VALUE turns it off");
    }

    @Test
    void theJvmsDirectMemoryLimitIsReadFromItsFlagOrTheHeap() {
        long max = JvmDirectMemory.max();
        assertTrue(max > 0);
        boolean flagGiven = java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .anyMatch(arg -> arg.startsWith("-XX:MaxDirectMemorySize="));
        if (!flagGiven) {
            assertEquals(Runtime.getRuntime().maxMemory(), max, "without the flag the JVM allows as much as the heap");
        }
    }

    @Test
    void builderMethodsRejectWhatPropertiesMayNot() {
        assertThrows(IllegalArgumentException.class, () -> PoolConfig.builder().waitTimeout(Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> PoolConfig.builder().maxMemory(-5));
        NullPointerException none = assertThrows(NullPointerException.class, () -> PoolConfig.builder().idleChunkDecay(null));
        assertTrue(none.getMessage().contains("idleChunkDecay"), none.getMessage());
        for (int capacity : new int[] {1, PoolConfig.Builder.MAX_REMOTE_FREE_QUEUE_CAPACITY + 1, Integer.MAX_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> PoolConfig.builder().remoteFreeQueueCapacity(capacity));
            assertTrue(e.getMessage().contains("remoteFreeQueueCapacity"), e.getMessage());
        }
        PoolConfig largest = PoolConfig.builder().arenas(1).chunkSize(1 << 20)
                .remoteFreeQueueCapacity(PoolConfig.Builder.MAX_REMOTE_FREE_QUEUE_CAPACITY).build();
        new MemoryPool(largest).close(); // and a pool is built with it
    }

    /** Quotas may name as many categories as a pool can have, counting the default one, and no more. */
    @Test
    void quotasNameAtMostAsManyCategoriesAsAPoolHas() {
        PoolConfig.Builder builder = PoolConfig.builder().arenas(1).chunkSize(1 << 20);
        for (int i = 1; i < Category.MAX_CATEGORIES; i++) {
            builder.quota("c" + i, 1L << 20);
        }
        MemoryPool full = new MemoryPool(builder.build()); // 63 named and the default: every slot
        assertEquals(Category.MAX_CATEGORIES, full.categories().size());
        full.close();
        builder.quota("one_more", 1L << 20);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, builder::build);
        assertTrue(e.getMessage().contains("quotas") && e.getMessage().contains(String.valueOf(Category.MAX_CATEGORIES)),
                e.getMessage());
    }

    /**
     * A wait timeout or an idle decay of "forever" (longer than 100 years) is
     * taken as 100 years: a caller waits and is served, and decay keeps idle
     * memory without failing, where the nanoseconds of such a duration would
     * overflow.
     */
    @Test
    void durationsBeyondAHundredYearsAreTakenAsAHundredYears() throws Exception {
        ManualTime time = new ManualTime();
        PoolConfig config = PoolConfig.builder().arenas(1).chunkSize(1 << 20).maxMemory(1 << 20)
                .limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofMillis(Long.MAX_VALUE))
                .idleChunkDecay(ChronoUnit.FOREVER.getDuration()).ticker(time).scheduler(time)
                .chunkSource(ChunkSource.direct()).build();
        assertEquals(PoolConfig.Builder.LONGEST, config.waitTimeout());
        assertEquals(PoolConfig.Builder.LONGEST, config.idleChunkDecay());
        MemoryPool pool = new MemoryPool(config);
        Allocation held = new Allocation();
        pool.allocate(1 << 20, held); // the whole ceiling
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation waiting = new Allocation();
        Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(4096, waiting), failure);
        ConcurrentTasks.awaitWaiting(pool, 1);
        pool.free(held);
        waiter.join();
        assertNull(failure.get());
        pool.free(waiting);
        long committed = pool.committedBytes();
        assertTrue(committed > 0);
        time.advance(Duration.ofDays(365));
        time.runScheduled(); // the decay: nothing has been idle for 100 years
        assertEquals(committed, pool.committedBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes());
        pool.close();
    }

    @Test
    void aRegionAtAddressZeroIsRefused() {
        ByteBuffer memory = ByteBuffer.allocateDirect(4096);
        assertThrows(IllegalArgumentException.class, () -> new NativeRegion(memory, 0, 4096));
        assertEquals(BufferAddress.of(memory), new NativeRegion(memory, BufferAddress.of(memory), 4096).address());
    }

    /** A rejected sequential() or blocks() call must not use up one of the pool's category slots. */
    @Test
    void rejectedCacheAllocatorsCreateNoCategory() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).build());
        int before = pool.categories().size();
        for (int i = 0; i < 100; i++) {
            String name = "bad" + i;
            assertThrows(IllegalArgumentException.class, () -> pool.sequential(name, 0, 1024));
            assertThrows(IllegalArgumentException.class, () -> pool.blocks(name, 3000, 1));
        }
        assertEquals(before, pool.categories().size());
        pool.sequential("log_cache", 2, 1024);
        assertEquals(before + 1, pool.categories().size());
    }

    private static <T> T withProperty(String name, String value, Supplier<T> body) {
        String before = System.getProperty(name);
        System.setProperty(name, value);
        try {
            return body.get();
        } finally {
            if (before == null) {
                System.clearProperty(name);
            } else {
                System.setProperty(name, before);
            }
        }
    }

    /**
     * The settings whose default depends on others (the first chunk size and
     * the dedicated threshold on the chunk size, the ceiling on the chunk
     * source) told "not set" from set by a value of their own, -1 and
     * {@link Long#MIN_VALUE}: a system property of that value was taken as not
     * set, and passed unchecked where any other out-of-range value fails.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class UnsetSettings {

        @ParameterizedTest(name = "-D{0}={1}")
        @CsvSource({
                "slabwise.firstChunkSize, -1",
                "slabwise.dedicatedAbove, -1",
                "slabwise.maxMemory, -9223372036854775808",
        })
        void aPropertyOfTheValueThatMeantUnsetFailsTheBuild(String property, String value) {
            IllegalArgumentException e = withProperty(property, value,
                    () -> assertThrows(IllegalArgumentException.class, () -> PoolConfig.builder().build()));
            assertTrue(e.getMessage().contains(property.substring("slabwise.".length())), e.getMessage());
        }
    }

    /**
     * The defaults that grow with the processor count stay within the bounds
     * their settings are checked against: twice the processors as arenas, and
     * a stripe per processor of the sequential allocators and block pools, at
     * most 1024 each. With more than 512 processors, a pool of the default
     * settings failed to build ("arenas must be from 1 to 1024").
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class ProcessorDefaults {

        @Test
        void theDefaultsBuildAPoolWithMoreThanAThousandProcessors() throws Exception {
            String output = ForkedJvm.run(List.of("-XX:ActiveProcessorCount=1100", "-Xmx256m"), false, ManyProcessorsMain.class);
            assertEquals("1100 processors: 1024 arenas", ForkedJvm.lastLine(output));
        }
    }
}
