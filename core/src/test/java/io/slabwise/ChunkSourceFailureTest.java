package io.slabwise;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chunk sources that fail: a release that throws, a region that never comes
 * (null), a mapping the operating system refuses. Whatever the source does,
 * the pool's figures stay exact and the error says what happened.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ChunkSourceFailureTest {

    private static final int CHUNK = 64 * 1024;

    /** Direct memory whose next {@link #failures} releases free the region and then throw, as a broken source might. */
    static final class FailingRelease implements ChunkSource {
        final AtomicInteger failures = new AtomicInteger();
        final AtomicInteger allocated = new AtomicInteger();
        final AtomicInteger released = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();
        /** Regions handed out and not released yet (a failed release counts as released: its memory was freed). */
        final Set<NativeRegion> outstanding = java.util.concurrent.ConcurrentHashMap.newKeySet();

        @Override
        public NativeRegion allocate(int size) {
            NativeRegion region = ChunkSource.direct().allocate(size);
            allocated.incrementAndGet();
            outstanding.add(region);
            return region;
        }

        @Override
        public void release(NativeRegion region) {
            if (!outstanding.remove(region)) {
                throw new AssertionError("released twice, or never taken: " + region);
            }
            ChunkSource.direct().release(region);
            released.incrementAndGet();
            if (failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                failed.incrementAndGet();
                throw new IllegalStateException("release failed (test)");
            }
        }
    }

    /**
     * A {@link ChunkSource} whose {@code release} throws: the region counts as
     * given back all the same (the pool never hands it to the source again), so
     * the committed bytes, the ceiling, a close and the thread caches are as if
     * the release had worked; nothing the failure interrupted is left half done.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class ReleaseFailure {

        private static PoolConfig.Builder config(ChunkSource source) {
            return PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).dedicatedAbove(CHUNK)
                    .maxIdleChunksPerArena(0).chunkSource(source);
        }

        /**
         * At the ceiling, a chunk whose release fails is no longer committed: the
         * free that emptied it completes, and the ceiling has room for it again.
         */
        @Test
        void aFailedReleaseLeavesTheCeilingWhole() {
            FailingRelease source = new FailingRelease();
            try (MemoryPool pool = new MemoryPool(config(source).maxCachedSize(0).maxMemory(4L * CHUNK).build())) {
                List<Allocation> chunks = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(CHUNK, a); // a run of the whole chunk
                    chunks.add(a);
                }
                assertEquals(4L * CHUNK, pool.committedBytes());
                source.failures.set(1);
                assertDoesNotThrow(() -> pool.free(chunks.remove(0)), "the buffer was freed; the source's failure is not its caller's");
                assertEquals(1, source.failed.get());
                assertEquals(3L * CHUNK, pool.committedBytes(), "the region left the pool: it is not committed any more");
                assertEquals(3L * CHUNK, PoolMemory.regionBytes(pool));
                Allocation again = new Allocation();
                assertDoesNotThrow(() -> pool.allocate(CHUNK, again), "the ceiling has room for the chunk again");
                chunks.add(again);
                chunks.forEach(pool::free);
                assertEquals(0, pool.committedBytes());
                assertEquals(0, pool.stats().liveAllocations());
            }
            assertTrue(source.outstanding.isEmpty(), "every region went back to the source, once");
        }

        /**
         * A close whose first release fails gives back everything else all the
         * same, leaves nothing committed and stops the decay task.
         */
        @Test
        void closeCompletesPastAFailedRelease() {
            FailingRelease source = new FailingRelease();
            ManualTime time = new ManualTime();
            MemoryPool pool = new MemoryPool(config(source).arenas(2).arenaSpreadBytes(0).maxIdleChunksPerArena(8)
                    .ticker(time).scheduler(time).build());
            SequentialAllocator log = pool.sequential("log", 1, CHUNK);
            BlockPool blocks = pool.blocks("blocks", 16 * 1024, 1);
            List<Allocation> live = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Allocation a = new Allocation();
                pool.allocate(CHUNK, a); // chunks that stay idle once freed
                live.add(a);
            }
            Allocation slice = new Allocation();
            log.allocate(1000, slice);
            live.add(slice);
            live.addAll(blocks.allocate(40 * 1024));
            live.forEach(pool::free);
            assertTrue(source.allocated.get() >= 6, "chunks, the sequential chunk and blocks: " + source.allocated.get());
            source.failures.set(1);
            assertDoesNotThrow(pool::close);
            assertEquals(1, source.failed.get());
            assertEquals(0, pool.committedBytes(), "nothing is committed after close");
            assertTrue(source.outstanding.isEmpty(), () -> source.outstanding.size() + " regions were never given back");
            assertEquals(0, time.scheduled(), "the decay task stops once nothing is committed");
        }

        /**
         * A thread cache's flush that empties a chunk whose release fails: the
         * flush gives back every entry and forgets them. Before, the stack kept
         * the entries the failure interrupted, those already freed and those of
         * the chunk already gone included, and handed them out again: memory of
         * a new chunk that took the old one's id served two buffers.
         */
        @Test
        void aFlushPastAFailedReleaseHandsNothingOutTwice() throws Exception {
            FailingRelease source = new FailingRelease();
            int size = CHUNK / 2; // a cached run class, two to a chunk
            try (MemoryPool pool = new MemoryPool(config(source).build())) {
                List<Allocation> first = new ArrayList<>();
                for (int i = 0; i < 4; i++) { // two full chunks
                    Allocation a = new Allocation();
                    pool.allocate(size, a);
                    first.add(a);
                }
                first.forEach(pool::free); // into this thread's cache
                assertEquals(2L * CHUNK, pool.committedBytes());
                source.failures.set(1);
                try {
                    pool.trim(); // flushes this thread's cache: the first chunk empties and its release fails
                } catch (RuntimeException e) {
                    // before the fix the failure came out here, the flush half done
                }
                assertEquals(1, source.failed.get());
                // another thread of the same arena takes two runs: a new chunk, with the freed chunk's id
                List<Allocation> other = new ArrayList<>();
                AtomicReference<Throwable> otherFailed = new AtomicReference<>();
                Thread t = new Thread(() -> {
                    try {
                        for (int i = 0; i < 2; i++) {
                            Allocation a = new Allocation();
                            pool.allocate(size, a);
                            other.add(a);
                        }
                    } catch (Throwable e) {
                        otherFailed.set(e);
                    }
                });
                t.start();
                t.join();
                assertEquals(null, otherFailed.get());
                List<Allocation> mine = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(size, a);
                    mine.add(a);
                }
                Set<Long> addresses = new HashSet<>();
                for (Allocation a : other) {
                    addresses.add(a.address());
                }
                for (Allocation a : mine) {
                    assertTrue(addresses.add(a.address()), () -> "memory at " + Long.toHexString(a.address())
                            + " serves two buffers");
                }
                other.forEach(pool::free);
                mine.forEach(pool::free);
                pool.trim();
                assertEquals(0, pool.committedBytes());
            }
            assertTrue(source.outstanding.isEmpty(), "every region went back to the source, once");
        }

        /**
         * With region groups: a region on its own whose release fails gives its
         * room in the budget of regions on their own back, and a group whose
         * release fails leaves the committed bytes all the same.
         */
        @Test
        void withRegionGroupsAFailedReleaseCountsTheRegionOrTheGroupAsGivenBack() {
            int region = 4 * 1024 * 1024;
            java.nio.ByteBuffer shared = java.nio.ByteBuffer.allocateDirect(RegionGroups.GROUP_SIZE); // nothing is written: one buffer for all
            AtomicInteger failures = new AtomicInteger();
            Set<NativeRegion> live = java.util.concurrent.ConcurrentHashMap.newKeySet();
            java.util.concurrent.atomic.AtomicLong nextAddress = new java.util.concurrent.atomic.AtomicLong(1L << 40);
            ChunkSource source = new ChunkSource() {
                @Override
                public NativeRegion allocate(int size) {
                    NativeRegion made = new NativeRegion(shared.slice(0, size), nextAddress.getAndAdd(size), size);
                    live.add(made);
                    return made;
                }

                @Override
                public void release(NativeRegion given) {
                    assertTrue(live.remove(given), "released twice, or never taken");
                    if (failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        throw new IllegalStateException("release failed (test)");
                    }
                }
            };
            CommittedMemory memory = new CommittedMemory(source, new MemoryLimit(Long.MAX_VALUE), true);
            List<NativeRegion> alone = new ArrayList<>();
            for (long held = 0; held < CommittedMemory.ALONE_BUDGET; held += region) {
                alone.add(memory.commit(region, CommittedMemory.RegionKind.CHUNK));
            }
            NativeRegion inGroup = memory.commit(region, CommittedMemory.RegionKind.CHUNK);
            assertEquals(1, memory.groupCount());
            assertEquals(CommittedMemory.ALONE_BUDGET + RegionGroups.GROUP_SIZE, memory.committed());

            failures.set(1);
            assertDoesNotThrow(() -> memory.decommit(inGroup)); // the group's last region: the group goes back, and fails
            assertEquals(0, memory.groupCount());
            assertEquals(CommittedMemory.ALONE_BUDGET, memory.committed());

            failures.set(1);
            assertDoesNotThrow(() -> memory.decommit(alone.remove(0)));
            assertEquals(CommittedMemory.ALONE_BUDGET - region, memory.committed());
            alone.add(memory.commit(region, CommittedMemory.RegionKind.CHUNK));
            assertEquals(CommittedMemory.ALONE_BUDGET, memory.committed(),
                    "on its own again, in the room the failed region left in the budget, not in a new group");
            alone.forEach(memory::decommit);
            assertEquals(0, memory.committed());
            assertEquals(0, memory.regionBytes());
            assertTrue(live.isEmpty(), "every region went back to the source, once");
        }

        /**
         * A failed release during the periodic decay: the decay completes, gives
         * back the other idle chunks, and the next one finds nothing left to fail on.
         */
        @Test
        void decayPastAFailedReleaseGivesBackTheRest() {
            FailingRelease source = new FailingRelease();
            ManualTime time = new ManualTime();
            try (MemoryPool pool = new MemoryPool(config(source).maxIdleChunksPerArena(8).maxCachedSize(0)
                    .idleChunkDecay(java.time.Duration.ofSeconds(10)).ticker(time).scheduler(time).build())) {
                List<Allocation> chunks = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    Allocation a = new Allocation();
                    pool.allocate(CHUNK, a);
                    chunks.add(a);
                }
                chunks.forEach(pool::free);
                assertEquals(3L * CHUNK, pool.committedBytes(), "idle, kept for reuse");
                source.failures.set(1);
                time.advance(java.time.Duration.ofSeconds(10));
                assertDoesNotThrow(time::runScheduled);
                assertEquals(1, source.failed.get());
                assertEquals(0, pool.committedBytes(), "every idle chunk went back, the one whose release failed too");
                assertEquals(3, source.released.get());
            }
        }
    }

    /**
     * A chunk source that returns null instead of a region: the allocation fails
     * with a clear exception and the bytes counted for it are uncommitted again,
     * as when a source throws or returns a region of another size; else the
     * ceiling would be lower by as much for good, and a closed pool would never
     * reach zero.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class NullRegion {

        /** Direct memory, but null for the next {@link #nulls} requests. */
        private static final class NullOnce implements ChunkSource {
            final AtomicInteger nulls = new AtomicInteger();
            final AtomicInteger live = new AtomicInteger();

            @Override
            public NativeRegion allocate(int size) {
                if (nulls.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    return null;
                }
                live.incrementAndGet();
                return ChunkSource.direct().allocate(size);
            }

            @Override
            public void release(NativeRegion region) {
                live.decrementAndGet();
                ChunkSource.direct().release(region);
            }
        }

        @Test
        void aNullRegionLeavesNothingCommittedAndTheCeilingWhole() {
            NullOnce source = new NullOnce();
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1)
                    .dedicatedAbove(CHUNK).maxCachedSize(0).maxIdleChunksPerArena(0).maxMemory(2L * CHUNK)
                    .limitPolicy(LimitPolicy.RETURN_NULL).chunkSource(source).build());
            source.nulls.set(1);
            assertThrows(RuntimeException.class, () -> pool.allocate(CHUNK, new Allocation()));
            assertEquals(0, pool.committedBytes(), "no region was taken");
            Allocation first = new Allocation();
            Allocation second = new Allocation();
            assertTrue(pool.allocate(CHUNK, first));
            assertTrue(pool.allocate(CHUNK, second), "the ceiling has room for both chunks");
            pool.free(first);
            pool.free(second);
            pool.close();
            assertEquals(0, pool.committedBytes());
            assertEquals(0, source.live.get());
        }

        /** The same below the pool, for a region carved from a group and for a region on its own. */
        @Test
        void committedMemoryUncommitsANullRegionWithGroupsAndWithout() {
            for (boolean grouped : new boolean[] {false, true}) {
                NullOnce source = new NullOnce();
                CommittedMemory memory = new CommittedMemory(source, new MemoryLimit(Long.MAX_VALUE), grouped);
                for (int size : new int[] {CHUNK, RegionGroups.GROUP_SIZE}) {
                    source.nulls.set(1);
                    assertThrows(RuntimeException.class, () -> memory.commit(size, CommittedMemory.RegionKind.CHUNK));
                    assertEquals(0, memory.committed(), "grouped " + grouped + ", " + size + " bytes");
                    assertEquals(0, memory.regionBytes());
                }
            }
        }
    }

    /**
     * A mapping the operating system refuses is an error that says why, not a
     * bare "failed": the error number the call left, and for {@code ENOMEM} the
     * mappings the process holds beside {@code vm.max_map_count}, the limit a
     * pool of hundreds of GiB in small chunks can reach.
     */
    @Nested
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    class MappingRefused {

        @Test
        void anEnomemNamesTheMappingsHeldAndTheLimit() throws Exception {
            String message = MappingRefusal.message("mmap", 4 << 20, MappingRefusal.ENOMEM);
            assertTrue(message.startsWith("mmap of 4194304 bytes failed with errno 12 (ENOMEM): the process holds "), message);
            Path limit = Path.of("/proc/sys/vm/max_map_count");
            if (Files.isReadable(limit)) {
                String expected = Files.readAllLines(limit).get(0).trim();
                assertTrue(message.contains(" mappings and vm.max_map_count is " + expected + ";"), message);
                assertTrue(message.matches(".*the process holds [0-9]+ mappings.*"), message);
            }
            assertTrue(message.contains("larger chunkSize"), message);
        }

        @Test
        void anotherErrorGivesItsNumberAlone() {
            assertEquals("munmap of 8192 bytes failed with errno 22", MappingRefusal.message("munmap", 8192, 22));
        }

        /** The mapped source reads the error number the call itself left: a mapping of no bytes is EINVAL. */
        @Test
        void theMappedSourceReportsTheErrorNumberOfTheCall() {
            ChunkSource mapped = MappedChunkSource.create();
            Assumptions.assumeTrue(mapped != null, "no mapped chunk source on this JDK (Java 22 or later on Linux)");
            OutOfMemoryError refused = assertThrows(OutOfMemoryError.class, () -> mapped.allocate(0));
            assertEquals("mmap of 0 bytes failed with errno 22", refused.getMessage());
        }
    }
}
