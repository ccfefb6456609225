package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.BlockStats;
import io.slabwise.CompactionStats;
import io.slabwise.netty.BlockByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The block cache moves its payloads when a compaction asks: once most
 * payloads are invalidated, the few left keep blocks cut into sub-blocks and
 * mini-blocks sparsely used; moving them lets those blocks go back.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BlockCacheRelocationTest {

    private static final String CATEGORY = "block_cache";
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private static final int KEYS = 200;

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();
    private final BlockByteBufAllocator blocks = allocator.blocks(CATEGORY);
    private final CacheRelocator relocator = new CacheRelocator(allocator, CATEGORY);

    /** Keys from here on are whole blocks: payloads of exactly one block, which no compaction moves. */
    private static final int WHOLE = 1000;

    /**
     * The size of a payload: 20 to 200 KiB, fixed per key, so every one has
     * sub-blocks or mini-blocks; one block from {@link #WHOLE} on.
     */
    private static int sizeOf(int key) {
        return key >= WHOLE ? MIB : new SplittableRandom(key).nextInt(20 * KIB, 200 * KIB + 1);
    }

    /** The bytes of a payload: follow from its key, so any reader can check them. */
    private static byte[] content(int key, int size) {
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) (key * 17 + i * 5);
        }
        return bytes;
    }

    private static String name(int key) {
        return "k" + key;
    }

    /** A retained duplicate of the payload of {@code key}, loaded on a miss. */
    private static ByteBuf load(BlockCache cache, int key) {
        int size = sizeOf(key);
        ByteBuf b = cache.getOrLoad(name(key), size, (k, buf) -> buf.writeBytes(content(key, size)));
        assertNotNull(b, name(key));
        return b;
    }

    /** Checks the length and every byte of a payload read from the cache. */
    private static void verify(ByteBuf read, int key) {
        int size = sizeOf(key);
        assertEquals(size, read.capacity(), name(key));
        assertEquals(size, read.readableBytes(), name(key));
        byte[] bytes = new byte[size];
        read.getBytes(read.readerIndex(), bytes);
        assertArrayEquals(content(key, size), bytes, name(key));
    }

    /** Reads and checks the payload of {@code key}, which must be cached (a hit: it becomes the most recently used). */
    private static void verifyCached(BlockCache cache, int key) {
        ByteBuf read = cache.get(name(key));
        assertNotNull(read, name(key) + " is cached");
        try {
            verify(read, key);
        } finally {
            read.release();
        }
    }

    /**
     * Loads every key, invalidates nine in ten (their segments were deleted),
     * then reads the survivors in a seeded order: that order is the LRU order.
     */
    private List<Integer> fillAndInvalidate(BlockCache cache) {
        return fillAndInvalidate(cache, 0);
    }

    /** As {@link #fillAndInvalidate(BlockCache)}, with {@code wholeBlocks} whole-block payloads among the survivors. */
    private List<Integer> fillAndInvalidate(BlockCache cache, int wholeBlocks) {
        List<Integer> survivors = new ArrayList<>();
        for (int key = 0; key < KEYS; key++) {
            load(cache, key).release();
            if (key % 10 == 0) {
                survivors.add(key);
            }
            if (key % 20 == 0 && key / 20 < wholeBlocks) {
                load(cache, WHOLE + key / 20).release();
                survivors.add(WHOLE + key / 20);
            }
        }
        for (int key = 0; key < KEYS; key++) {
            if (key % 10 != 0) {
                assertTrue(cache.invalidate(name(key)));
            }
        }
        Collections.shuffle(survivors, new Random(3));
        for (int key : survivors) {
            verifyCached(cache, key);
        }
        return survivors;
    }

    /** Blocks holding payload bytes: held, less the idle ones kept for reuse. */
    private long blocksInUse() {
        BlockStats stats = blocks.stats();
        return stats.blocks() - stats.idleBlocks();
    }

    /**
     * (a) the blocks that only a few payloads still used empty and go back;
     * (b) every payload reads back its exact bytes, and the category's
     * requested bytes are still the cache's bytes.
     */
    @Test
    void compactionEmptiesTheBlocksLeftSparseByInvalidations() {
        BlockCache cache = new BlockCache(blocks, 48L * MIB, relocator);
        List<Integer> survivors = fillAndInvalidate(cache);
        BlockStats before = blocks.stats();
        long inUseBefore = blocksInUse();
        long committedBefore = allocator.stats().committedBytes();

        CompactionStats done = allocator.compact();

        BlockStats after = blocks.stats();
        assertTrue(done.chunksFreed() > 0, done::toString);
        // the blocks emptied, less the blocks the moved payloads took: what left the pool
        assertEquals(committedBefore - allocator.stats().committedBytes(), done.bytesFreed(), done::toString);
        assertEquals(cache.relocations(), done.movedEntries(), done::toString);
        assertTrue(done.movedEntries() > 0 && done.movedEntries() <= survivors.size(), done::toString);
        assertTrue(after.blocks() < before.blocks(), () -> before + " -> " + after + " by " + done);
        assertTrue(blocksInUse() < inUseBefore, () -> before + " -> " + after + " by " + done);
        assertEquals(cache.bytes(), allocator.stats().category(CATEGORY).requested());
        for (int key : survivors) {
            verifyCached(cache, key);
        }
        cache.close();
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
    }

    /**
     * A moved payload keeps its place in the LRU order: with whole-block
     * payloads (which stay where they are) among the moved ones, loads that
     * each evict just the least recently used payload evict them all in the
     * order they were last read before the compaction.
     */
    @Test
    void aMovedPayloadKeepsItsPlaceInTheLruOrder() {
        BlockCache cache = new BlockCache(blocks, 48L * MIB, relocator);
        List<Integer> lru = fillAndInvalidate(cache, 5);
        CompactionStats done = allocator.compact();
        assertTrue(done.movedEntries() > 0 && done.movedEntries() <= lru.size() - 5, done::toString);

        int filler = KEYS;
        long room = cache.maxBytes() - cache.bytes();
        for (int i = 0; i < lru.size(); i++) {
            int size = (int) (room + sizeOf(lru.get(i))); // just large enough to evict the least recently used alone
            room = 0;
            ByteBuf b = cache.getOrLoad(name(filler++), size, (k, buf) -> buf.writerIndex(size));
            assertNotNull(b);
            b.release();
            assertFalse(cache.contains(name(lru.get(i))), "evicted in LRU order: " + lru.get(i) + " of " + lru);
            if (i + 1 < lru.size()) {
                assertTrue(cache.contains(name(lru.get(i + 1))), "not yet: " + lru.get(i + 1) + " of " + lru);
            }
        }
        cache.close();
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
    }

    /**
     * (c) a reader that retained a payload before the compaction still reads
     * its old bytes after it, while the cache serves the copy; the old parts
     * keep their block until the reader releases them.
     */
    @Test
    void aReaderKeepsTheOldPayloadAndItsBlockUntilItReleases() {
        BlockCache cache = new BlockCache(blocks, 48L * MIB, relocator);
        List<Integer> lru = fillAndInvalidate(cache);
        int heldKey = lru.get(0);
        ByteBuf held = cache.get(name(heldKey));

        CompactionStats done = allocator.compact();

        assertEquals(1, done.heldByReaders(), done::toString);
        assertTrue(done.chunksFreed() < done.chunksEvacuated(), "the reader's block stays: " + done);
        verify(held, heldKey);
        ByteBuf copy = cache.get(name(heldKey));
        verify(copy, heldKey);
        assertNotSame(held.unwrap(), copy.unwrap(), "the cache serves a copy, another composite");
        copy.release();
        assertEquals(1, held.refCnt(), "the cache let go of the old payload; the reader holds it alone");
        assertEquals(cache.bytes() + sizeOf(heldKey), allocator.stats().category(CATEGORY).requested());
        long inUse = blocksInUse();

        held.release();

        assertTrue(blocksInUse() < inUse, () -> "the reader's block went back: " + blocks.stats());
        assertEquals(cache.bytes(), allocator.stats().category(CATEGORY).requested());
        for (int key : lru) {
            verifyCached(cache, key);
        }
        cache.close();
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
    }

    /**
     * The relocator never waits: a compaction while another thread holds the
     * cache's lock (its loader runs under it) returns at once with nothing
     * moved and nothing freed; the next one, after the load, moves the
     * payloads. A hang here would be a relocator waiting for the lock.
     */
    @Test
    void compactionSkipsACacheWhoseLockAnotherThreadHolds() throws Exception {
        BlockCache cache = new BlockCache(blocks, 48L * MIB, relocator);
        List<Integer> lru = fillAndInvalidate(cache);
        long inUse = blocksInUse();
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread loader = new Thread(() -> {
            try {
                ByteBuf b = cache.getOrLoad("slow", 100 * KIB, (k, buf) -> {
                    inside.countDown();
                    try {
                        assertTrue(letGo.await(30, TimeUnit.SECONDS));
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    buf.writerIndex(buf.capacity());
                });
                b.release();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "loader");
        loader.start();
        assertTrue(inside.await(30, TimeUnit.SECONDS));

        CompactionStats busy = allocator.compact(); // the loader holds the lock now

        letGo.countDown();
        loader.join();
        assertNull(failure.get(), () -> "the loader failed: " + failure.get());
        assertTrue(busy.chunksEvacuated() > 0, "there was something to move");
        assertEquals(0, busy.movedEntries(), busy::toString);
        assertEquals(0, busy.chunksFreed(), busy::toString);
        assertEquals(1, cache.relocationsSkipped());
        assertEquals(0, cache.relocations());

        CompactionStats free = allocator.compact();

        assertTrue(free.movedEntries() > 0 && free.chunksFreed() > 0, free::toString);
        assertTrue(blocksInUse() < inUse, blocks.stats()::toString);
        for (int key : lru) {
            verifyCached(cache, key);
        }
        cache.close();
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
    }

    /**
     * Nor does it wait for its own thread: a compaction started inside a
     * loader (as one at the pool's ceiling would be, from the load's
     * allocation) finds the lock held by the calling thread and leaves the
     * cache alone instead of re-entering it.
     */
    @Test
    void compactionInsideALoadLeavesThatCacheAlone() {
        BlockCache cache = new BlockCache(blocks, 48L * MIB, relocator);
        List<Integer> lru = fillAndInvalidate(cache);
        AtomicReference<CompactionStats> inside = new AtomicReference<>();
        ByteBuf b = cache.getOrLoad("compacting", 100 * KIB, (k, buf) -> {
            inside.set(allocator.compact());
            buf.writerIndex(buf.capacity());
        });
        b.release();
        assertTrue(inside.get().chunksEvacuated() > 0, inside.get()::toString);
        assertEquals(0, inside.get().movedEntries(), inside.get()::toString);
        assertEquals(1, cache.relocationsSkipped());
        assertTrue(allocator.compact().movedEntries() > 0);
        for (int key : lru) {
            verifyCached(cache, key);
        }
        cache.close();
    }

    /**
     * The race checked: two threads load, read and invalidate overlapping
     * keys, each holding its last four payloads and checking each again just
     * before releasing it, while a third compacts after every 20 operations of
     * the first. Every read sees its payload's bytes; afterwards every cached
     * payload is intact, the requested bytes are the cache's, and after
     * closing nothing of the category is live.
     */
    @Test
    void loadsReadsAndInvalidationsWhileAnotherThreadCompacts() throws Exception {
        BlockCache cache = new BlockCache(blocks, 16L * MIB, relocator);
        int operations = 3000;
        int operationsPerRound = 20;
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicReference<CompactionStats> total = new AtomicReference<>(CompactionStats.NONE);
        CountDownLatch working = new CountDownLatch(2);
        Semaphore rounds = new Semaphore(0);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            int self = t;
            threads.add(new Thread(() -> {
                SplittableRandom random = new SplittableRandom(11 + self);
                ArrayDeque<Held> held = new ArrayDeque<>();
                try {
                    for (int i = 0; i < operations && failure.get() == null; i++) {
                        int key = random.nextInt(KEYS);
                        int op = random.nextInt(10);
                        if (op < 3) {
                            cache.invalidate(name(key)); // most are invalidated soon: the blocks stay sparse
                        } else {
                            ByteBuf b = op < 6 ? cache.get(name(key)) : load(cache, key);
                            if (b != null) {
                                verify(b, key);
                                held.addLast(new Held(b, key));
                            }
                        }
                        if (held.size() > 4) {
                            held.removeFirst().checkAndRelease();
                        }
                        if (self == 0 && i % operationsPerRound == 0) {
                            rounds.release();
                        }
                    }
                } finally {
                    while (!held.isEmpty()) {
                        held.removeFirst().checkAndRelease();
                    }
                    working.countDown();
                    rounds.release(operations);
                }
            }, "worker-" + t));
        }
        threads.add(new Thread(() -> {
            for (int i = 0; i < operations / operationsPerRound && working.getCount() > 0 && failure.get() == null; i++) {
                try {
                    assertTrue(rounds.tryAcquire(30, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                total.set(total.get().plus(allocator.compact()));
            }
        }, "compactor"));
        for (Thread t : threads) {
            t.setUncaughtExceptionHandler((thread, e) -> failure.compareAndSet(null, e));
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        assertNull(failure.get(), () -> "a worker failed: " + failure.get());
        assertTrue(total.get().movedEntries() > 0, () -> "compactions under way moved nothing: " + total.get());
        assertEquals(cache.relocations(), total.get().movedEntries());
        assertEquals(cache.bytes(), allocator.stats().category(CATEGORY).requested());
        int cached = 0;
        for (int key = 0; key < KEYS; key++) {
            if (cache.contains(name(key))) {
                verifyCached(cache, key);
                cached++;
            }
        }
        assertEquals(cache.size(), cached);
        cache.close();
        assertEquals(0, allocator.stats().category(CATEGORY).requested());
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
        assertSame(CompactionStats.NONE, allocator.compact(), "no cache joined: the relocator is unregistered");
    }

    /** A payload a reader holds: checked again when released, after compactions may have moved the cache's copy. */
    private record Held(ByteBuf buffer, int key) {
        void checkAndRelease() {
            try {
                verify(buffer, key);
            } finally {
                buffer.release();
            }
        }
    }
}
