package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A subpage's element bitmap: every element once, frees in any order, double frees caught. */
class SubpageTest {

    private static final int PAGE = 8192;
    private static final SizeClasses SIZES = new SizeClasses(PAGE, 4 << 20);

    /** A subpage of {@code elementSize}'s class on a fresh chunk, with the run length the size-class table picks. */
    private static Subpage newSubpage(int elementSize) {
        int index = SizeClasses.indexOf(elementSize);
        assertEquals(elementSize, SIZES.size(index), "a class size");
        assertTrue(SIZES.isSmall(index));
        int runPages = SIZES.subpageRunPages(index);
        Chunk chunk = ChunkTest.newChunk(64);
        chunk.allocateRun(1); // so the run does not start at offset 0
        long run = chunk.allocateRun(runPages);
        Subpage subpage = new Subpage(chunk, Chunk.runStart(run), runPages, index, elementSize);
        chunk.setSubpage(subpage.runStart, subpage);
        return subpage;
    }

    /** Element sizes with 512 elements (capped), with a multiple of 64, with a partial last bitmap word, and multi-page ones. */
    private static final int[] ELEMENT_SIZES = {16, 32, 48, 112, 144, 1024, 3072, 5120, 9216, 36864, 61440};

    @Test
    void everyElementIsHandedOutOnceAtADistinctOffsetInsideTheRun() {
        for (int size : ELEMENT_SIZES) {
            Subpage subpage = newSubpage(size);
            Chunk chunk = subpage.chunk;
            int runBytes = subpage.runPages * PAGE;
            int expectedElements = Math.min(Subpage.MAX_ELEMENTS, runBytes / size);
            assertEquals(expectedElements, subpage.elements(), "elements of " + size);
            assertEquals(expectedElements, subpage.freeElements());
            assertTrue(subpage.isEmpty());
            long runOffset = (long) subpage.runStart * PAGE;
            Set<Integer> elements = new HashSet<>();
            Set<Long> offsets = new HashSet<>();
            while (subpage.hasFree()) {
                long handle = subpage.allocate();
                assertTrue(Chunk.isSubpage(handle));
                assertEquals(subpage.runStart, Chunk.runStart(handle));
                assertEquals(subpage.runPages, Chunk.runPages(handle));
                assertTrue(elements.add(Chunk.element(handle)), "element handed out twice");
                long offset = chunk.offset(handle, size);
                assertTrue(offsets.add(offset));
                assertEquals(0, (offset - runOffset) % size, "offsets are whole elements apart");
                assertTrue(offset >= runOffset && offset + size <= runOffset + runBytes, "element inside its run");
                assertFalse(subpage.isEmpty());
            }
            assertEquals(expectedElements, elements.size(), "size " + size);
            assertEquals(0, subpage.freeElements());
            assertThrows(IllegalStateException.class, subpage::allocate, "a full subpage has nothing to give");
        }
    }

    /** Freed in a seeded random order, every element comes back; allocating again hands out exactly the freed ones. */
    @Test
    void elementsFreedInRandomOrderAreAllReusable() {
        Random random = new Random(99);
        for (int size : ELEMENT_SIZES) {
            Subpage subpage = newSubpage(size);
            List<Integer> taken = new ArrayList<>();
            while (subpage.hasFree()) {
                taken.add(Chunk.element(subpage.allocate()));
            }
            Collections.shuffle(taken, random);
            // free half, take them back, then free all
            int half = taken.size() / 2;
            Set<Integer> freed = new HashSet<>(taken.subList(0, half));
            for (int e : taken.subList(0, half)) {
                subpage.free(e);
            }
            assertEquals(half, subpage.freeElements());
            Set<Integer> again = new HashSet<>();
            for (int i = 0; i < half; i++) {
                assertTrue(subpage.hasFree());
                again.add(Chunk.element(subpage.allocate()));
            }
            assertEquals(freed, again, "the freed elements, and only those, come back");
            assertFalse(subpage.hasFree());
            for (int e : taken) {
                assertFalse(subpage.isEmpty());
                subpage.free(e);
            }
            assertTrue(subpage.isEmpty(), "size " + size);
            assertEquals(subpage.elements(), subpage.freeElements());
        }
    }

    /** The lowest free element is handed out first, including one freed below the search start. */
    @Test
    void theLowestFreeElementComesFirst() {
        Subpage subpage = newSubpage(16);
        for (int i = 0; i < Subpage.MAX_ELEMENTS; i++) {
            assertEquals(i, Chunk.element(subpage.allocate()));
        }
        subpage.free(300);
        subpage.free(5);
        subpage.free(130);
        assertEquals(5, Chunk.element(subpage.allocate()));
        assertEquals(130, Chunk.element(subpage.allocate()));
        assertEquals(300, Chunk.element(subpage.allocate()));
        assertFalse(subpage.hasFree());
    }

    /**
     * A subpage released when it empties is kept, without its chunk, to serve
     * the next run of its class: the same object, with every element free
     * again and the new run's offsets; nothing of it keeps a chunk from going
     * back.
     */
    @Test
    void aReleasedSubpageServesTheNextRunOfItsClass() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(1).maxCachedSize(0).build());
        Allocation[] first = {new Allocation(), new Allocation()};
        Allocation third = new Allocation();
        for (Allocation a : first) {
            pool.allocate(4096, a); // two elements to a one-page subpage
        }
        pool.allocate(4096, third); // a second subpage, one element free: the first is not the last of its class
        Subpage released = first[0].chunk.subpageAt(Chunk.runStart(first[0].handle));
        assertEquals(2, released.elements());
        for (Allocation a : first) {
            pool.free(a);
        }
        assertEquals(null, released.chunk, "released: a spare names no chunk");

        Allocation fourth = new Allocation();
        Allocation fifth = new Allocation();
        pool.allocate(4096, fourth); // the second subpage's free element
        pool.allocate(4096, fifth); // a new run, served by the spare
        Subpage serving = fifth.chunk.subpageAt(Chunk.runStart(fifth.handle));
        assertSame(released, serving, "the spare serves the new run");
        assertEquals(fifth.chunk, serving.chunk);
        assertEquals(Chunk.runStart(fifth.handle), serving.runStart);
        assertEquals(1, serving.freeElements(), "every element but the one just taken is free");
        assertTrue(fifth.address() != fourth.address() && fifth.address() != third.address());
        for (Allocation a : new Allocation[] {third, fourth, fifth}) {
            pool.free(a);
        }
        pool.trim();
        assertEquals(0, pool.committedBytes(), pool.stats()::report);
        pool.close();
    }

    @Test
    void aDoubleFreeThrowsAndChangesNothing() {
        Subpage subpage = newSubpage(48);
        long a = subpage.allocate();
        long b = subpage.allocate();
        subpage.free(Chunk.element(a));
        int free = subpage.freeElements();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> subpage.free(Chunk.element(a)));
        assertTrue(e.getMessage().contains("already free"), e.getMessage());
        assertEquals(free, subpage.freeElements(), "the failed free counted nothing");
        IllegalStateException never = assertThrows(IllegalStateException.class, () -> subpage.free(100));
        assertTrue(never.getMessage().contains("100"), never.getMessage());
        subpage.free(Chunk.element(b));
        assertTrue(subpage.isEmpty());
    }
}
