package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Committed memory with region groups: what is taken from the source, what
 * the committed figure says, the ceiling, and regions committed and given back
 * from many threads at once.
 */
@Timeout(120)
class CommittedMemoryGroupsTest {

    private static final int MIB = 1024 * 1024;
    private static final int CHUNK = 4 * MIB;
    private static final int GROUP = RegionGroups.GROUP_SIZE;

    /**
     * A source that counts what it hands out and gives every region its own
     * range of made-up addresses; the buffers all share one direct buffer, as
     * nothing here writes to them.
     */
    private static final class CountingSource implements ChunkSource {
        private static final ByteBuffer SHARED = ByteBuffer.allocateDirect(GROUP);
        final AtomicLong held = new AtomicLong();
        final AtomicLong allocations = new AtomicLong();
        final ConcurrentHashMap<NativeRegion, Boolean> live = new ConcurrentHashMap<>();
        private final AtomicLong nextAddress = new AtomicLong(1L << 40);

        @Override
        public NativeRegion allocate(int size) {
            long address = nextAddress.getAndAdd(size + (long) GROUP);
            NativeRegion region = new NativeRegion(SHARED.slice(0, size), address, size);
            held.addAndGet(size);
            allocations.incrementAndGet();
            live.put(region, Boolean.TRUE);
            return region;
        }

        @Override
        public void release(NativeRegion region) {
            assertSame(Boolean.TRUE, live.remove(region), "given back a region it never handed out, or twice");
            held.addAndGet(-region.size());
        }
    }

    @Test
    void theFirstRegionsAreOnTheirOwnThenGroupsAreTakenWhole() {
        CountingSource source = new CountingSource();
        CommittedMemory memory = new CommittedMemory(source, new MemoryLimit(Long.MAX_VALUE), true);
        List<NativeRegion> regions = new ArrayList<>();
        long budgetChunks = CommittedMemory.ALONE_BUDGET / CHUNK;
        for (int i = 0; i < budgetChunks; i++) {
            regions.add(memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK));
            assertEquals((i + 1L) * CHUNK, memory.committed(), "a small pool takes chunk by chunk");
        }
        regions.add(memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK));
        assertEquals(CommittedMemory.ALONE_BUDGET + GROUP, memory.committed(), "past the budget, a whole group");
        assertEquals(1, memory.groupCount());
        for (int i = 1; i < GROUP / CHUNK; i++) {
            regions.add(memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK));
        }
        assertEquals(CommittedMemory.ALONE_BUDGET + GROUP, memory.committed(), "the group's chunks cost nothing more");
        regions.add(memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK));
        assertEquals(CommittedMemory.ALONE_BUDGET + 2L * GROUP, memory.committed());
        assertEquals(memory.committed(), source.held.get(), "committed is what the source handed out");
        assertEquals((long) regions.size() * CHUNK, memory.regionBytes());

        NativeRegion big = memory.commit(GROUP, CommittedMemory.RegionKind.HUGE);
        assertEquals(CommittedMemory.ALONE_BUDGET + 3L * GROUP, memory.committed(), "a group-sized region is on its own");
        assertEquals(2, memory.groupCount());
        memory.decommit(big);

        for (NativeRegion region : regions) {
            memory.decommit(region);
            assertEquals(memory.committed(), source.held.get());
        }
        assertEquals(0, memory.committed());
        assertEquals(0, memory.regionBytes());
        assertEquals(0, memory.groupCount());
        assertTrue(source.live.isEmpty(), "everything went back to the source");
    }

    @Test
    void roomInAGroupIsUsedBeforeTheBudget() {
        CountingSource source = new CountingSource();
        CommittedMemory memory = new CommittedMemory(source, new MemoryLimit(Long.MAX_VALUE), true);
        List<NativeRegion> alone = new ArrayList<>();
        for (long i = 0; i < CommittedMemory.ALONE_BUDGET / CHUNK; i++) {
            alone.add(memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK));
        }
        NativeRegion grouped = memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK);
        alone.forEach(memory::decommit);
        long before = memory.committed();
        NativeRegion next = memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK);
        assertEquals(before, memory.committed(), "carved from the group, though the budget is free again");
        assertEquals(GROUP, memory.committed());
        memory.decommit(next);
        memory.decommit(grouped);
        assertEquals(0, memory.committed());
    }

    @Test
    void underACeilingWithNoRoomForAGroupARegionComesOnItsOwn() {
        CountingSource source = new CountingSource();
        long max = CommittedMemory.ALONE_BUDGET + 3L * CHUNK;
        CommittedMemory memory = new CommittedMemory(source, new MemoryLimit(max), true);
        List<NativeRegion> regions = new ArrayList<>();
        while (memory.committed() + CHUNK <= max) {
            regions.add(memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK));
        }
        assertEquals(max, memory.committed(), "the whole ceiling is usable");
        assertEquals(0, memory.groupCount());
        assertThrows(CeilingReached.class, () -> memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK));
        assertEquals(max, memory.committed(), "a refusal changes nothing");
        regions.forEach(memory::decommit);
        assertEquals(0, memory.committed());
        assertEquals(0, source.held.get());
    }

    @Test
    void aSourceFailureLeavesTheFiguresAsTheyWere() {
        ChunkSource failing = new ChunkSource() {
            @Override
            public NativeRegion allocate(int size) {
                throw new OutOfMemoryError("no memory for " + size);
            }

            @Override
            public void release(NativeRegion region) {
                throw new AssertionError("nothing was handed out");
            }
        };
        CommittedMemory memory = new CommittedMemory(failing, new MemoryLimit(Long.MAX_VALUE), true);
        assertThrows(OutOfMemoryError.class, () -> memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK));
        assertEquals(0, memory.committed());
        assertEquals(0, memory.regionBytes());
    }

    @Test
    void theReclaimerGivesBackGroupsAndRegionsOnTheirOwnOnce() {
        CountingSource source = new CountingSource();
        CommittedMemory memory = new CommittedMemory(source, new MemoryLimit(Long.MAX_VALUE), true);
        int alone = (int) (CommittedMemory.ALONE_BUDGET / CHUNK);
        for (int i = 0; i < alone + 2; i++) {
            memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK);
        }
        assertEquals(alone + 1, source.live.size(), "the budget's regions on their own and one group");
        memory.reclaimerOnCollection().run();
        assertTrue(source.live.isEmpty());
        assertEquals(0, source.held.get());
    }

    /** Regions carved by the real direct source are distinct memory: what is written to one is not seen in another. */
    @Test
    void regionsOfTheDirectSourceHoldTheirOwnBytes() {
        CommittedMemory memory = new CommittedMemory(ChunkSource.direct(), new MemoryLimit(Long.MAX_VALUE), true);
        assertTrue(memory.grouped());
        List<NativeRegion> regions = new ArrayList<>();
        for (long i = 0; i < CommittedMemory.ALONE_BUDGET / CHUNK + 2; i++) { // past the budget, into a group
            NativeRegion region = memory.commit(CHUNK, CommittedMemory.RegionKind.CHUNK);
            assertEquals(CHUNK, region.buffer().capacity());
            assertTrue(region.buffer().isDirect());
            assertEquals(region.address(), BufferAddress.of(region.buffer()));
            for (int at = 0; at < CHUNK; at += 4096) {
                region.buffer().put(at, (byte) i);
            }
            regions.add(region);
        }
        for (int i = 0; i < regions.size(); i++) {
            for (int at = 0; at < CHUNK; at += 4096) {
                assertEquals((byte) i, regions.get(i).buffer().get(at));
            }
        }
        assertEquals(CommittedMemory.ALONE_BUDGET + GROUP, memory.committed());
        regions.forEach(memory::decommit);
        assertEquals(0, memory.committed());
        assertEquals(0, memory.groupCount());
    }

    /**
     * Threads commit and give back chunks and huge regions at once, under a
     * ceiling: the committed figure never passes it, no two live regions share
     * an address, and everything goes back to the source at the end.
     */
    @Test
    void concurrentCommitsAndReleasesStayConsistent() throws InterruptedException {
        CountingSource source = new CountingSource();
        long max = 6L * GROUP;
        MemoryLimit limit = new MemoryLimit(max);
        CommittedMemory memory = new CommittedMemory(source, limit, true);
        ConcurrentHashMap<Long, NativeRegion> units = new ConcurrentHashMap<>();
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            long seed = 7 + t;
            tasks.add(() -> {
                Random random = new Random(seed);
                List<NativeRegion> mine = new ArrayList<>();
                for (int step = 0; step < 4000; step++) {
                    if (!mine.isEmpty() && (mine.size() > 10 || random.nextBoolean())) {
                        NativeRegion region = mine.remove(random.nextInt(mine.size()));
                        for (long a = region.address(); a < region.address() + region.size(); a += RegionGroups.UNIT) {
                            assertSame(region, units.remove(a / RegionGroups.UNIT));
                        }
                        memory.decommit(region);
                        continue;
                    }
                    int size = random.nextInt(5) == 0 ? CHUNK * (2 + random.nextInt(3)) : CHUNK;
                    NativeRegion region;
                    try {
                        region = memory.commit(size, random.nextInt(5) == 0 ? CommittedMemory.RegionKind.HUGE
                                : CommittedMemory.RegionKind.CHUNK);
                    } catch (CeilingReached e) {
                        continue;
                    }
                    assertTrue(limit.committed() <= max);
                    for (long a = region.address(); a < region.address() + region.size(); a += RegionGroups.UNIT) {
                        assertNull(units.putIfAbsent(a / RegionGroups.UNIT, region), "two live regions overlap");
                    }
                    mine.add(region);
                }
                for (NativeRegion region : mine) {
                    for (long a = region.address(); a < region.address() + region.size(); a += RegionGroups.UNIT) {
                        units.remove(a / RegionGroups.UNIT);
                    }
                    memory.decommit(region);
                }
            });
        }
        ConcurrentTasks.runConcurrently(tasks);
        assertEquals(0, memory.committed());
        assertEquals(0, memory.regionBytes());
        assertEquals(0, memory.groupCount());
        assertEquals(0, source.held.get());
        assertTrue(source.live.isEmpty());
        assertTrue(source.allocations.get() > 4, "groups were taken and given back");
    }
}
