package io.slabwise;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The public front on one thread: size paths, memory, exact accounting, trim, errors, resizes and statistics. */
class MemoryPoolTest {

    static final int CHUNK = 1 << 20;
    static final int PAGE = PoolConfig.PAGE_SIZE;
    /** Above it a request gets a dedicated region: the default, an eighth of a chunk. */
    static final int DEDICATED_ABOVE = CHUNK / 8;

    /** Chunks of one size ({@code firstChunkSize} too): the tests count pages and bytes per chunk. */
    static PoolConfig.Builder config() {
        return config(CHUNK);
    }

    /** {@link #config()} with chunks of {@code chunkSize} bytes, every one. */
    static PoolConfig.Builder config(int chunkSize) {
        return PoolConfig.builder().chunkSize(chunkSize).firstChunkSize(chunkSize).chunkSource(ChunkSource.direct());
    }

    /**
     * What every boundary request must reserve, worked out by hand: its size
     * class up to 64 KiB (what thread caches keep), whole pages above (a run
     * fitted to the request: 200,000 bytes reserve 25 pages, 204,800, where
     * the class would be 212,992), and whole pages of a region beyond a chunk.
     */
    private static int expectedReserved(int requested) {
        Map<Integer, Integer> table = new HashMap<>();
        table.put(0, 16);
        table.put(1, 16);
        table.put(16, 16);
        table.put(17, 32);
        table.put(128, 128);
        table.put(129, 144);
        table.put(4096, 4096);
        table.put(4097, 4608);
        table.put(8192, 8192);
        table.put(8193, 9216);
        table.put(65536, 65536);
        table.put(65537, 73728); // 9 pages, also the class
        table.put(200_000, 204_800); // 25 pages; class 212,992
        table.put(600_000, 606_208); // 74 pages; class 655,360
        table.put(CHUNK - 1, CHUNK);
        table.put(CHUNK, CHUNK);
        table.put(CHUNK + 1, CHUNK + PAGE);
        table.put(CHUNK + PAGE, CHUNK + PAGE);
        table.put(CHUNK + PAGE + 1, CHUNK + 2 * PAGE);
        return table.get(requested);
    }

    /**
     * Every path a request can take (small subpage element, run, dedicated
     * region, huge region, zero bytes), at both sides of each class boundary: the
     * reserved size is the class, the memory is direct and spans the
     * allocation, the address matches the buffer, the bytes can be written,
     * and freeing takes the accounting back to 0 and the memory back to the
     * chunk source after a trim.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 16, 17, 128, 129, 4096, 4097, 8192, 8193, 65536, 65537, 200_000, 600_000, CHUNK - 1, CHUNK,
            CHUNK + 1, CHUNK + PAGE, CHUNK + PAGE + 1})
    void everySizePathReservesItsClass(int requested) {
        MemoryPool pool = new MemoryPool(config().arenas(1).build());
        int reserved = expectedReserved(requested);
        boolean huge = requested > DEDICATED_ABOVE; // a region of its own
        assertEquals(reserved, pool.reservedSizeFor(requested));

        Allocation a = new Allocation();
        assertTrue(pool.allocate(requested, a));
        assertTrue(a.isLive());
        assertEquals(requested, a.requestedBytes());
        assertEquals(reserved, a.reservedBytes());
        assertSame(pool.defaultCategory(), a.category());
        ByteBuffer memory = a.chunkMemory();
        assertTrue(memory.isDirect());
        assertTrue(a.offset() >= 0 && (long) a.offset() + reserved <= memory.capacity(),
                "the allocation lies inside its buffer: " + a + " in " + memory.capacity());
        long base = BufferAddress.of(memory);
        if (base != 0) {
            assertEquals(base + a.offset(), a.address(), "address = buffer address + offset");
        }
        if (huge) {
            assertEquals(0, a.offset(), "a region of its own starts at 0");
        }
        for (int i = 0; i < reserved; i += Math.max(1, reserved / 4096)) { // every byte set aside is usable
            memory.put(a.offset() + i, (byte) i);
        }
        memory.put(a.offset() + reserved - 1, (byte) 0x5A);
        assertEquals((byte) 0x5A, memory.get(a.offset() + reserved - 1));

        assertEquals(requested, pool.requestedBytes());
        assertEquals(reserved, pool.reservedBytes());
        PoolStats stats = pool.stats();
        assertEquals(1, stats.liveAllocations());
        if (huge) {
            assertEquals(reserved, pool.committedBytes(), "a dedicated region is exactly its page-rounded size");
            assertEquals(0, stats.chunks());
            assertEquals(1, stats.hugeAllocations());
            assertEquals(reserved, stats.hugeCommittedBytes());
        } else {
            assertEquals(CHUNK, pool.committedBytes(), "one chunk");
            assertEquals(1, stats.chunks());
            assertEquals(0, stats.hugeAllocations());
        }

        pool.free(a);
        assertFalse(a.isLive());
        assertEquals("Allocation(free)", a.toString());
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.reservedBytes());
        if (requested > CHUNK) {
            assertEquals(0, pool.committedBytes(), "a region larger than a chunk goes back at once");
            assertEquals(0, pool.stats().hugeIdleBytes());
        } else if (huge) {
            assertEquals(reserved, pool.committedBytes(), "a dedicated region up to a chunk stays idle for reuse");
            assertEquals(reserved, pool.stats().hugeIdleBytes());
            assertTrue(pool.allocate(requested, a));
            assertEquals(reserved, pool.committedBytes(), "the same size reuses it");
            assertEquals(0, pool.stats().hugeIdleBytes());
            pool.free(a);
        }
        pool.trim();
        assertEquals(0, pool.committedBytes());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.free(a));
        assertTrue(e.getMessage().contains("double free"), e.getMessage());
    }

    /** Zero-byte requests still get memory of their own: two of them never share bytes. */
    @Test
    void zeroByteAllocationsAreDistinct() {
        MemoryPool pool = new MemoryPool(config().arenas(1).build());
        Allocation a = new Allocation();
        Allocation b = new Allocation();
        pool.allocate(0, a);
        pool.allocate(0, b);
        assertEquals(16, a.reservedBytes());
        assertTrue(a.chunkMemory() != b.chunkMemory() || Math.abs(a.offset() - b.offset()) >= 16);
        assertEquals(0, pool.requestedBytes());
        assertEquals(32, pool.reservedBytes());
        pool.free(a);
        pool.free(b);
        assertEquals(0, pool.reservedBytes());
    }

    /** A seeded mix: mostly small, some runs, a few whole chunks and huge regions. */
    static int randomSize(Random random) {
        int kind = random.nextInt(100);
        if (kind < 55) {
            return random.nextInt(1025);
        }
        if (kind < 85) {
            return 1025 + random.nextInt(64 * 1024);
        }
        if (kind < 98) {
            return 65 * 1024 + random.nextInt(400 * 1024);
        }
        return CHUNK - 4096 + random.nextInt(CHUNK / 2);
    }

    /**
     * Allocations live at the same time never share a byte: their reserved
     * ranges in the same buffer are disjoint, and the pattern written into
     * each one is intact when it is freed and at the end.
     */
    @Test
    void liveAllocationsNeverOverlap() {
        MemoryPool pool = new MemoryPool(config().arenas(2).arenaSpreadBytes(0).build());
        Random random = new Random(11);
        List<Allocation> live = new ArrayList<>();
        Map<Allocation, Long> ids = new IdentityHashMap<>();
        long nextId = 0;
        for (int step = 0; step < 6000; step++) {
            if (live.isEmpty() || random.nextInt(100) < 60) {
                Allocation a = new Allocation();
                pool.allocate(randomSize(random), a);
                long id = nextId++;
                Patterns.write(a, id);
                live.add(a);
                ids.put(a, id);
            } else {
                Allocation a = live.remove(random.nextInt(live.size()));
                Patterns.verify(a, ids.remove(a));
                pool.free(a);
            }
            if (step % 500 == 0) {
                assertDisjoint(live);
            }
        }
        assertDisjoint(live);
        for (Allocation a : live) {
            Patterns.verify(a, ids.get(a));
            pool.free(a);
        }
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /** Within each chunk buffer, the reserved ranges of live allocations do not intersect. */
    static void assertDisjoint(List<Allocation> live) {
        Map<ByteBuffer, List<Allocation>> byBuffer = new IdentityHashMap<>();
        for (Allocation a : live) {
            byBuffer.computeIfAbsent(a.chunkMemory(), k -> new ArrayList<>()).add(a);
        }
        for (List<Allocation> inBuffer : byBuffer.values()) {
            inBuffer.sort(Comparator.comparingInt(Allocation::offset));
            for (int i = 1; i < inBuffer.size(); i++) {
                Allocation before = inBuffer.get(i - 1);
                Allocation after = inBuffer.get(i);
                assertTrue((long) before.offset() + before.reservedBytes() <= after.offset(), before + " overlaps " + after);
            }
        }
    }

    /**
     * After every step of a seeded workload of allocations, resizes and frees
     * in three categories, the pool's figures equal what the test worked out
     * from the allocations it holds: requested = the sum of what they asked
     * for, reserved = the sum of their size classes, committed = chunks times
     * the chunk size plus the huge regions; per category too. After freeing
     * everything, requested = reserved = 0, and a trim brings committed to 0.
     */
    @Test
    void accountingIsExactThroughARandomWorkload() {
        MemoryPool pool = new MemoryPool(config().arenas(2).arenaSpreadBytes(0).build());
        Category[] categories = {pool.defaultCategory(), pool.category("log_cache"), pool.category("block_cache")};
        Random random = new Random(2024);
        List<Allocation> live = new ArrayList<>();
        long allocations = 0;
        long releases = 0;
        for (int step = 0; step < 5000; step++) {
            int action = random.nextInt(100);
            if (live.isEmpty() || action < 55) {
                Allocation a = new Allocation();
                int size = randomSize(random);
                Category category = categories[random.nextInt(categories.length)];
                assertTrue(pool.allocate(category, size, a));
                if (size > DEDICATED_ABOVE) { // a new region of its pages, or an idle one up to an eighth larger
                    assertTrue(DedicatedRegions.fits(a.reservedBytes(), pool.reservedSizeFor(size)), a.toString());
                } else {
                    assertEquals(pool.reservedSizeFor(size), a.reservedBytes());
                }
                live.add(a);
                allocations++;
            } else if (action < 65) {
                Allocation a = live.get(random.nextInt(live.size()));
                int target = Math.max(0, a.requestedBytes() - random.nextInt(64) + random.nextInt(64));
                // runs are resized to run sizes, dedicated regions to dedicated sizes
                target = a.reservedBytes() > DEDICATED_ABOVE ? Math.max(DEDICATED_ABOVE + 1, target) : Math.min(DEDICATED_ABOVE, target);
                boolean sameClass = a.reservedBytes() > DEDICATED_ABOVE
                        ? DedicatedRegions.fits(a.reservedBytes(), pool.reservedSizeFor(target))
                        : pool.reservedSizeFor(target) == a.reservedBytes();
                int before = a.requestedBytes();
                assertEquals(sameClass, pool.resizeInPlace(a, target), a + " to " + target);
                assertEquals(sameClass ? target : before, a.requestedBytes());
            } else {
                pool.free(live.remove(random.nextInt(live.size())));
                releases++;
            }
            assertEquals(sum(live, false), pool.requestedBytes(), "requested, step " + step);
            assertEquals(sum(live, true), pool.reservedBytes(), "reserved, step " + step);
            if (step % 25 == 0) {
                assertStatsMatch(pool, live, categories, allocations, releases);
            }
        }
        assertStatsMatch(pool, live, categories, allocations, releases);
        for (Allocation a : live) {
            pool.free(a);
        }
        live.clear();
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.reservedBytes());
        PoolStats end = pool.stats();
        assertEquals(0, end.liveAllocations());
        assertEquals(end.chunks() * (long) CHUNK + end.hugeIdleBytes(), PoolMemory.regionBytes(pool),
                "no live dedicated region is left");
        assertTrue(end.hugeIdleBytes() <= 3L * CHUNK, "idle dedicated regions: a chunk's bytes listed, the recent cell"
                + " and this thread's slot, each at most a chunk");
        pool.trim();
        assertEquals(0, pool.committedBytes());
        assertEquals(0, pool.stats().chunks());
    }

    private static long sum(List<Allocation> live, boolean reserved) {
        long total = 0;
        for (Allocation a : live) {
            total += reserved ? a.reservedBytes() : a.requestedBytes();
        }
        return total;
    }

    private static void assertStatsMatch(MemoryPool pool, List<Allocation> live, Category[] categories,
                                         long allocations, long releases) {
        PoolStats stats = pool.stats();
        long huge = 0;
        long hugeCount = 0;
        for (Allocation a : live) {
            if (a.reservedBytes() > DEDICATED_ABOVE) {
                huge += a.reservedBytes();
                hugeCount++;
            }
        }
        assertEquals(sum(live, false), stats.requestedBytes());
        assertEquals(sum(live, true), stats.reservedBytes());
        assertEquals((long) stats.chunks() * CHUNK + huge + stats.hugeIdleBytes(), PoolMemory.regionBytes(pool),
                "regions = chunks + live and idle dedicated regions");
        assertTrue(stats.committedBytes() >= PoolMemory.regionBytes(pool), "committed = regions + room in their groups");
        assertEquals(stats.committedBytes(), pool.committedBytes());
        assertEquals(huge, stats.hugeCommittedBytes());
        assertEquals(hugeCount, stats.hugeAllocations());
        assertEquals(allocations, stats.allocations());
        assertEquals(releases, stats.releases());
        assertEquals(live.size(), stats.liveAllocations());
        for (Category category : categories) {
            long requested = 0;
            long reserved = 0;
            long count = 0;
            for (Allocation a : live) {
                if (a.category() == category) {
                    requested += a.requestedBytes();
                    reserved += a.reservedBytes();
                    count++;
                }
            }
            CategoryStats c = stats.category(category.name());
            assertNotNull(c, category.name());
            assertEquals(requested, c.requested(), category.name());
            assertEquals(reserved, c.reserved(), category.name());
            assertEquals(count, c.liveBuffers(), category.name());
        }
        assertTrue(stats.cachedBytes() >= 0);
        assertTrue(stats.reservedBytes() + stats.cachedBytes() <= stats.committedBytes());
    }

    /**
     * After everything is freed, memory sits in idle chunks and the thread
     * cache; {@code trim()} gives every chunk back, the pool stays usable and
     * takes a chunk again on the next allocation.
     */
    @Test
    void trimGivesEveryIdleChunkBack() {
        MemoryPool pool = new MemoryPool(config().arenas(1).build());
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            Allocation a = new Allocation();
            pool.allocate(100_000 + i, a);
            all.add(a);
            Allocation small = new Allocation();
            pool.allocate(64 + i, small);
            all.add(small);
        }
        PoolStats full = pool.stats();
        assertTrue(full.chunks() >= 4, full::report);
        all.forEach(pool::free);
        PoolStats freed = pool.stats();
        assertEquals(0, freed.requestedBytes());
        assertTrue(freed.committedBytes() > 0, "an idle chunk is kept for reuse, and the cache holds small elements");
        assertEquals(1, freed.idleChunks(), "maxIdleChunksPerArena is 1: " + freed.report());
        int released = pool.trim();
        assertTrue(released >= 1);
        PoolStats trimmed = pool.stats();
        assertEquals(0, pool.committedBytes(), trimmed::report);
        assertEquals(0, trimmed.chunks());
        assertEquals(0, trimmed.idleChunks());
        assertEquals(0, trimmed.cachedBytes());
        assertEquals(trimmed.chunksAllocated(), trimmed.chunksReleased());
        Allocation again = new Allocation();
        pool.allocate(5000, again);
        assertEquals(CHUNK, pool.committedBytes());
        pool.free(again);
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /** Without thread caches, freeing whole chunks keeps exactly maxIdleChunksPerArena of them; trim keeps minIdleChunks. */
    @Test
    void idleChunksAreBoundedAndTrimKeepsTheConfiguredMinimum() {
        MemoryPool pool = new MemoryPool(config().arenas(1).maxCachedSize(0).maxIdleChunksPerArena(2).minIdleChunks(1)
                .dedicatedAbove(CHUNK).build()); // whole-chunk runs, not regions of their own
        List<Allocation> chunks = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            Allocation a = new Allocation();
            pool.allocate(CHUNK, a);
            chunks.add(a);
        }
        assertEquals(5L * CHUNK, pool.committedBytes());
        chunks.forEach(pool::free);
        PoolStats stats = pool.stats();
        assertEquals(2, stats.chunks());
        assertEquals(2, stats.idleChunks());
        assertEquals(2L * CHUNK, pool.committedBytes());
        assertEquals(1, pool.trim());
        assertEquals(CHUNK, pool.committedBytes(), "minIdleChunks = 1 is kept");
        assertEquals(1, pool.stats().idleChunks());
    }

    /**
     * The smallest chunk (64 KiB, eight pages) serves every size class: small
     * classes whose ideal subpage run would be longer than the chunk get a
     * run that fits. Each class, three times over, at its size and one byte
     * below; the memory is disjoint and keeps its patterns, and everything
     * goes back.
     */
    @Test
    void theSmallestChunkServesEverySizeClass() {
        int chunk = PoolConfig.MIN_CHUNK_SIZE;
        MemoryPool pool = new MemoryPool(config(chunk).arenas(1).build());
        SizeClasses sizes = pool.general.sizes();
        List<Allocation> live = new ArrayList<>();
        Map<Allocation, Long> ids = new IdentityHashMap<>();
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < sizes.count(); i++) {
                for (int size : new int[] {sizes.size(i), sizes.size(i) - 1}) {
                    Allocation a = new Allocation();
                    pool.allocate(size, a);
                    assertEquals(sizes.size(i), a.reservedBytes());
                    assertTrue(a.offset() + a.reservedBytes() <= chunk);
                    Patterns.write(a, live.size());
                    ids.put(a, (long) live.size());
                    live.add(a);
                }
            }
        }
        assertDisjoint(live);
        long reserved = 0;
        for (Allocation a : live) {
            Patterns.verify(a, ids.get(a));
            reserved += a.reservedBytes();
        }
        assertEquals(reserved, pool.reservedBytes());
        live.forEach(pool::free);
        assertEquals(0, pool.reservedBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * An emptied subpage gives its run back unless it is the last of its
     * class, also when it holds a single element (with 64 KiB chunks a
     * 61440-byte subpage is one element on a whole chunk): freeing four of
     * them keeps one empty subpage and one idle chunk, the rest go back.
     */
    @Test
    void emptiedOneElementSubpagesGiveTheirRunsBack() {
        MemoryPool pool = new MemoryPool(config(PoolConfig.MIN_CHUNK_SIZE).arenas(1).maxCachedSize(0).build());
        int index = SizeClasses.indexOf(61440);
        assertTrue(pool.general.sizes().isSmall(index));
        assertEquals(1, pool.general.sizes().subpageRunPages(index) * PAGE / 61440, "one element per subpage");
        List<Allocation> four = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Allocation a = new Allocation();
            pool.allocate(61440, a);
            four.add(a);
        }
        assertEquals(4L * PoolConfig.MIN_CHUNK_SIZE, pool.committedBytes());
        four.forEach(pool::free);
        PoolStats stats = pool.stats();
        assertEquals(1, stats.chunks(), "the last subpage of the class does not pin its chunk: " + stats.report());
        assertEquals(1, stats.idleChunks(), "one idle chunk kept, the rest given back");
        assertEquals(PoolConfig.MIN_CHUNK_SIZE, pool.committedBytes());
        pool.trim();
        assertEquals(0, pool.committedBytes());
    }

    /**
     * The empty last subpage of a size class is kept for the next allocation
     * of that class, but not when it is all its chunk holds: small buffers
     * of many classes, all freed, leave no chunk behind.
     */
    @Test
    void anEmptyLastSubpageDoesNotPinItsChunk() {
        MemoryPool pool = new MemoryPool(config(PoolConfig.MIN_CHUNK_SIZE).arenas(1).maxCachedSize(0)
                .maxIdleChunksPerArena(0).build());
        List<Allocation> small = new ArrayList<>();
        for (int size = 16; size <= 4096; size += size / 4) { // one buffer of each of many small classes
            Allocation a = new Allocation();
            pool.allocate(size, a);
            small.add(a);
        }
        Allocation run = new Allocation();
        pool.allocate(3 * PAGE, run); // a run in the same chunk, freed last
        assertTrue(pool.committedBytes() > 0);
        small.forEach(pool::free);
        PoolStats holding = pool.stats();
        assertTrue(holding.chunks() >= 1, holding::report);
        pool.free(run);
        PoolStats emptied = pool.stats();
        assertEquals(0, emptied.chunks(), "empty subpages and a freed run leave nothing: " + emptied.report());
        assertEquals(0, pool.committedBytes());
    }

    @Test
    void badRequestsThrowClearly() {
        MemoryPool pool = new MemoryPool(config().arenas(1).build());
        Allocation a = new Allocation();

        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> pool.allocate(-1, a));
        assertTrue(negative.getMessage().contains("negative") && negative.getMessage().contains("-1"), negative.getMessage());
        assertThrows(IllegalArgumentException.class, () -> pool.allocate(Integer.MIN_VALUE, a));
        assertThrows(IllegalArgumentException.class, () -> pool.reservedSizeFor(-5));

        int max = pool.maxRequest();
        assertEquals(Integer.MAX_VALUE & -PAGE, max);
        IllegalArgumentException oversized = assertThrows(IllegalArgumentException.class, () -> pool.allocate(max + 1, a));
        assertTrue(oversized.getMessage().contains(String.valueOf(max + 1)) && oversized.getMessage().contains(String.valueOf(max)),
                oversized.getMessage());
        assertThrows(IllegalArgumentException.class, () -> pool.allocate(Integer.MAX_VALUE, a));
        assertFalse(a.isLive(), "a refused request leaves the holder empty");

        pool.allocate(100, a);
        IllegalStateException stillLive = assertThrows(IllegalStateException.class, () -> pool.allocate(100, a));
        assertTrue(stillLive.getMessage().contains("still live"), stillLive.getMessage());
        assertEquals(100, pool.requestedBytes(), "the refused request counted nothing");

        MemoryPool other = new MemoryPool(config().arenas(1).build());
        Category foreign = other.category("log_cache");
        IllegalArgumentException wrongPool = assertThrows(IllegalArgumentException.class,
                () -> pool.allocate(foreign, 10, new Allocation()));
        assertTrue(wrongPool.getMessage().contains("another pool"), wrongPool.getMessage());
        assertSame(other, foreign.pool(), "a category names the pool it belongs to");
        assertSame(pool, a.category().pool(), "so a live allocation names the pool that frees it");

        pool.free(a);
        IllegalStateException doubleFree = assertThrows(IllegalStateException.class, () -> pool.free(a));
        assertTrue(doubleFree.getMessage().contains("double free"), doubleFree.getMessage());
        IllegalStateException neverAllocated = assertThrows(IllegalStateException.class, () -> pool.free(new Allocation()));
        assertTrue(neverAllocated.getMessage().contains("double free"), neverAllocated.getMessage());
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.reservedBytes());
        assertEquals(1, pool.stats().releases(), "the failed frees counted nothing");
    }

    /**
     * A resize in place is accepted exactly while the new size keeps the size
     * class (for a huge region: the page-rounded size), changes requested but
     * not reserved bytes, and is refused for a freed allocation.
     */
    @Test
    void resizeInPlaceKeepsTheSizeClass() {
        MemoryPool pool = new MemoryPool(config().arenas(1).build());
        Allocation a = new Allocation();
        pool.allocate(100, a); // class 112: 97..112
        assertTrue(pool.resizeInPlace(a, 112));
        assertEquals(112, a.requestedBytes());
        assertEquals(112, pool.requestedBytes());
        assertTrue(pool.resizeInPlace(a, 97));
        assertEquals(97, pool.requestedBytes());
        assertEquals(112, pool.reservedBytes(), "reserved never changes");
        assertFalse(pool.resizeInPlace(a, 96), "96 is a class of its own");
        assertFalse(pool.resizeInPlace(a, 113), "beyond the reserved bytes");
        assertFalse(pool.resizeInPlace(a, -1));
        assertEquals(97, a.requestedBytes(), "refused resizes change nothing");
        assertEquals(97, pool.requestedBytes());

        Allocation tiny = new Allocation();
        pool.allocate(16, tiny);
        assertTrue(pool.resizeInPlace(tiny, 0), "0 bytes still uses the 16-byte class");
        assertEquals(0, tiny.requestedBytes());

        Allocation run = new Allocation();
        pool.allocate(8193, run); // class 9216
        assertTrue(pool.resizeInPlace(run, 9216));
        assertFalse(pool.resizeInPlace(run, 8192));

        Allocation huge = new Allocation();
        pool.allocate(CHUNK + 3 * PAGE, huge);
        assertEquals(CHUNK + 3 * PAGE, huge.reservedBytes());
        assertTrue(pool.resizeInPlace(huge, CHUNK + 2 * PAGE + 1), "same page-rounded size");
        assertTrue(pool.resizeInPlace(huge, 117 * PAGE), "14 of 131 pages fewer: as a reused region would serve it");
        assertFalse(pool.resizeInPlace(huge, 116 * PAGE), "more than an eighth fewer: it must move");
        assertFalse(pool.resizeInPlace(huge, CHUNK + 3 * PAGE + 1));
        assertEquals(117 * PAGE, huge.requestedBytes());

        assertEquals(97 + 0 + 9216 + 117 * PAGE, pool.requestedBytes());
        assertEquals(112 + 16 + 9216 + CHUNK + 3 * PAGE, pool.reservedBytes());
        pool.free(a);
        pool.free(tiny);
        pool.free(run);
        pool.free(huge);
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.reservedBytes());
        assertThrows(IllegalStateException.class, () -> pool.resizeInPlace(a, 100));
    }

    /**
     * Above 64 KiB a run is fitted to whole pages: a resize stays in place
     * while the new size needs the same pages, and a thread's large slot
     * serves the next request only when it needs just as many pages.
     */
    @Test
    void aFittedRunResizesInPlaceWithinItsPagesAndTheLargeSlotMatchesPages() {
        MemoryPool pool = new MemoryPool(config().arenas(1).dedicatedAbove(CHUNK).build()); // runs up to a chunk
        Allocation a = new Allocation();
        pool.allocate(200_000, a); // 25 pages
        assertEquals(25 * PAGE, a.reservedBytes());
        assertTrue(pool.resizeInPlace(a, 25 * PAGE));
        assertTrue(pool.resizeInPlace(a, 24 * PAGE + 1));
        assertFalse(pool.resizeInPlace(a, 24 * PAGE), "24 pages would do: it must move");
        assertEquals(24 * PAGE + 1, pool.requestedBytes());
        assertEquals(25 * PAGE, pool.reservedBytes());
        int offset = a.offset();
        pool.free(a); // into this thread's large slot

        Allocation b = new Allocation();
        pool.allocate(200_000 + PAGE, b); // the same class, one page more
        assertEquals(26 * PAGE, b.reservedBytes());
        assertTrue(b.offset() != offset, "26 pages do not fit the slot's 25");
        pool.free(b); // the slot keeps the 25 pages; these go back to the arena
        Allocation c = new Allocation();
        pool.allocate(24 * PAGE + 100, c);
        assertEquals(offset, c.offset(), "25 pages: the slot serves it");
        pool.free(c);
        assertEquals(0, pool.reservedBytes());
        pool.close();
    }

    /** A resize by a thread other than the allocating one is counted against the allocating thread's figures. */
    @Test
    void resizeOnAnotherThreadIsCounted() throws Exception {
        MemoryPool pool = new MemoryPool(config().arenas(2).arenaSpreadBytes(0).build());
        Allocation a = new Allocation();
        pool.allocate(1000, a); // class 1024
        ConcurrentTasks.runConcurrently(List.of(() -> {
            assertTrue(pool.resizeInPlace(a, 1024));
            assertEquals(1024, pool.requestedBytes());
            pool.free(a);
        }));
        assertFalse(a.isLive());
        PoolStats stats = pool.stats();
        assertEquals(0, stats.requestedBytes());
        assertEquals(0, stats.reservedBytes());
        assertEquals(1, stats.allocations());
        assertEquals(1, stats.releases());
    }

    /** Every figure of a snapshot, worked out by hand for a known set of allocations, and their text forms. */
    @Test
    void statsFiguresAndTheirTextForms() {
        MemoryPool pool = new MemoryPool(config().arenas(1).maxCachedSize(0).build());
        Category logCache = pool.category("log_cache");
        Allocation a = new Allocation();
        Allocation b = new Allocation();
        Allocation c = new Allocation();
        Allocation d = new Allocation();
        pool.allocate(1000, a);              // 1024, small
        pool.allocate(logCache, 3000, b);    // 3072, small
        pool.allocate(24_000, c);            // 24576, a run of 3 pages
        pool.allocate(CHUNK + 1, d);         // CHUNK + 8192, huge
        long requested = 1000 + 3000 + 24_000 + CHUNK + 1;
        long reserved = 1024 + 3072 + 24_576 + CHUNK + PAGE;
        long committed = CHUNK + CHUNK + PAGE;

        PoolStats stats = pool.stats();
        assertEquals(requested, stats.requestedBytes());
        assertEquals(reserved, stats.reservedBytes());
        assertEquals(committed, stats.committedBytes());
        assertEquals(CHUNK + PAGE, stats.hugeCommittedBytes());
        assertEquals(1, stats.hugeAllocations());
        assertEquals(4, stats.allocations());
        assertEquals(0, stats.releases());
        assertEquals(4, stats.liveAllocations());
        assertEquals(1, stats.chunks());
        assertEquals(0, stats.idleChunks());
        assertEquals(1, stats.chunksAllocated());
        assertEquals(0, stats.chunksReleased());
        assertEquals(1, stats.arenaCount());
        assertEquals(CHUNK, stats.chunkSize());
        assertEquals(0, stats.cachedBytes(), "no thread caches");
        assertEquals(1 - (double) requested / reserved, stats.internalFragmentation(), 1e-12);
        assertEquals(1 - (double) reserved / committed, stats.externalFragmentation(), 1e-12);
        assertEquals((double) committed / requested, stats.overhead(), 1e-12);
        int usedPercent = (1024 + 3072 + 24_576) * 100 / CHUNK;
        assertEquals(1, pool.chunkUsePercent().length);
        assertEquals(usedPercent, pool.chunkUsePercent()[0]);
        assertEquals(1, stats.chunksByOccupancy()[1], "one chunk under 25% used");
        CategoryStats network = stats.category("network");
        assertEquals(1000 + 24_000 + CHUNK + 1, network.requested());
        assertEquals(1024 + 24_576 + CHUNK + PAGE, network.reserved());
        assertEquals(3, network.liveBuffers());
        CategoryStats log = stats.category("log_cache");
        assertEquals(3000, log.requested());
        assertEquals(3072, log.reserved());
        assertEquals(1, log.liveBuffers());
        assertEquals(1 - 3000.0 / 3072, log.internalFragmentation(), 1e-12);
        assertEquals(null, stats.category("nope"));

        String summary = stats.summary();
        for (String part : new String[] {"requested=" + PoolStats.bytes(requested), "reserved=" + PoolStats.bytes(reserved),
                "committed=" + PoolStats.bytes(committed), "chunks=1", "idle=0", "huge=1",
                String.format(Locale.ROOT, "internal=%.1f%%", stats.internalFragmentation() * 100),
                String.format(Locale.ROOT, "external=%.1f%%", stats.externalFragmentation() * 100),
                String.format(Locale.ROOT, "overhead=%.2fx", stats.overhead())}) {
            assertTrue(summary.contains(part), "'" + part + "' in " + summary);
        }
        assertEquals(summary, stats.toString());
        String report = stats.report();
        assertTrue(report.startsWith(summary), report);
        assertTrue(report.contains("category network"), report);
        assertTrue(report.contains("category log_cache"), report);
        assertTrue(report.contains("live=3") && report.contains("live=1"), report);
        assertTrue(report.contains("chunks=1 idle=0 used=" + PoolStats.bytes(1024 + 3072 + 24_576)
                        + " by occupancy: idle=0 <25%=1 25-50%=0 50-75%=0 75-99%=0 full=0"),
                report);
        String poolReport = pool.report();
        assertTrue(poolReport.endsWith("  arena  0 chunk map [" + PoolStats.occupancyChar(usedPercent) + "]\n"), poolReport);

        pool.free(a);
        pool.free(b);
        pool.free(c);
        pool.free(d);
        PoolStats idle = pool.stats();
        assertEquals(0, idle.requestedBytes());
        assertEquals(0, idle.reservedBytes());
        assertEquals(CHUNK, idle.committedBytes(), "the idle chunk is kept, the huge region is gone");
        assertEquals(1, idle.chunks());
        // the empty subpages of 1024 and 3072 bytes are the last of their classes, but with nothing else
        // handed out of the chunk they give their runs back: the chunk is idle
        assertEquals(1, idle.idleChunks());
        assertEquals(0, pool.chunkUsePercent()[0]);
        assertEquals(1, idle.chunksByOccupancy()[0]);
        assertEquals(0, idle.hugeAllocations());
        assertEquals(4, idle.releases());
        assertEquals(0, idle.internalFragmentation());
        assertEquals(1.0, idle.externalFragmentation());
        assertTrue(Double.isNaN(idle.overhead()), "no ratio while nothing is requested");
        assertTrue(idle.summary().contains("overhead=n/a"), idle.summary());
        assertTrue(idle.summary().contains("chunks=1 idle=1"), idle.summary());
        assertTrue(idle.report().contains("by occupancy: idle=1 <25%=0"), idle.report());
        assertTrue(pool.report().contains("chunk map [.]"), pool.report());
        pool.trim();
        PoolStats empty = pool.stats();
        assertEquals(0, empty.committedBytes());
        assertEquals(0, empty.externalFragmentation());
        assertEquals(1, empty.chunksReleased());
        assertTrue(empty.report().contains("chunks=0 idle=0"), empty.report());
    }

    /**
     * A chunk pinned by a single small buffer is not idle: it counts in the
     * lowest band above idle and is not drawn as {@code .} in the report,
     * though less than 1% of it is in use.
     */
    @Test
    void aChunkPinnedByOneSmallBufferIsNotReportedIdle() {
        MemoryPool pool = new MemoryPool(config().arenas(1).maxCachedSize(0).build());
        Allocation pin = new Allocation();
        pool.allocate(16, pin);
        PoolStats stats = pool.stats();
        assertEquals(1, pool.chunkUsePercent()[0], "under 1% in use rounds up to 1%");
        assertEquals(0, stats.chunksByOccupancy()[0]);
        assertEquals(1, stats.chunksByOccupancy()[1]);
        assertTrue(pool.report().contains("chunk map [1]"), pool.report());
        pool.free(pin);
        pool.trim();
        assertEquals(0, pool.chunkUsePercent().length);
    }

    @Test
    void byteCountsAreFormattedWithBinaryUnits() {
        assertEquals("0 B", PoolStats.bytes(0));
        assertEquals("1023 B", PoolStats.bytes(1023));
        assertEquals("1.0 KiB", PoolStats.bytes(1024));
        assertEquals("1.5 KiB", PoolStats.bytes(1536));
        assertEquals("4.0 MiB", PoolStats.bytes(4L << 20));
        assertEquals("2.5 GiB", PoolStats.bytes(5L << 29));
        assertEquals("-2.0 KiB", PoolStats.bytes(-2048));
        assertEquals('.', PoolStats.occupancyChar(0));
        assertEquals('1', PoolStats.occupancyChar(2));
        assertEquals('5', PoolStats.occupancyChar(57));
        assertEquals('#', PoolStats.occupancyChar(100));
    }

    /** Resizing in place up to the reserved bytes, whatever the dedicated threshold. */
    @Nested
    @Timeout(60)
    class ResizeAtAnUnalignedThreshold {

        private static final int PAGE = PoolConfig.PAGE_SIZE;

        /**
         * A dedicated threshold between two pages: a run fitted to the pages of a
         * request just below it reserves bytes past it, and must be able to stand
         * for all of them without moving, as {@link MemoryPool#reservedSizeFor} says it reserves them.
         */
        @Test
        void aRunWhoseLastPageCrossesAnUnalignedDedicatedThresholdResizesUpToItsPages() {
            int threshold = 12 * PAGE + 100;
            MemoryPool pool = new MemoryPool(MemoryPoolTest.config().arenas(1).dedicatedAbove(threshold).build());
            Allocation run = new Allocation();
            assertTrue(pool.allocate(threshold - 1, run));
            assertEquals(13 * PAGE, run.reservedBytes());
            assertEquals(13 * PAGE, pool.reservedSizeFor(13 * PAGE));
            Chunk chunk = run.chunk;
            long address = run.address();
            assertTrue(pool.resizeInPlace(run, 13 * PAGE), "its own pages");
            assertSame(chunk, run.chunk);
            assertEquals(address, run.address());
            assertEquals(13 * PAGE, pool.stats().requestedBytes());
            assertEquals(13 * PAGE, pool.stats().reservedBytes());
            assertTrue(pool.resizeInPlace(run, threshold - 1), "back below the threshold");
            assertFalse(pool.resizeInPlace(run, 13 * PAGE + 1), "past its pages");
            assertFalse(pool.resizeInPlace(run, 12 * PAGE), "fewer pages");
            assertEquals(threshold - 1, pool.stats().requestedBytes());
            pool.free(run);
            assertEquals(0, pool.stats().requestedBytes());
            assertEquals(0, pool.stats().reservedBytes());
            pool.close();
            assertEquals(0, pool.committedBytes());
        }
    }
}
