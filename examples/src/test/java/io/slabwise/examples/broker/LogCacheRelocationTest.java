package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledHeapByteBuf;
import io.slabwise.CompactionStats;
import io.slabwise.LimitPolicy;
import io.slabwise.SequentialStats;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The log cache moves its batches when a compaction asks: a quiet partition's
 * few batches, interleaved in the sequential allocator's chunks with a busy
 * partition's long-evicted ones, stop pinning those chunks.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LogCacheRelocationTest {

    private static final int HOT = 0;
    private static final int COLD = 1;
    private static final String CATEGORY = "log_cache";

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();
    private final SequentialByteBufAllocator sequential = allocator.sequential(CATEGORY);
    private final CacheRelocator relocator = new CacheRelocator(allocator, CATEGORY);

    /** The size of a batch: the hot partition's 1 to 32 KiB, the cold one's 100 B to 2 KiB, fixed per offset. */
    static int sizeOf(int partition, long offset) {
        SplittableRandom random = new SplittableRandom(offset * 2 + partition);
        return partition == HOT ? random.nextInt(1024, 32 * 1024 + 1) : random.nextInt(100, 2 * 1024 + 1);
    }

    /** The byte at {@code index} of a batch: follows from its partition and offset, so any reader can check it. */
    private static byte byteAt(int partition, long offset, int index) {
        return (byte) (offset * 31 + index * 7 + partition * 13);
    }

    /** A heap batch of the partition at the offset. */
    static ByteBuf batch(int partition, long offset) {
        int size = sizeOf(partition, offset);
        ByteBuf b = Unpooled.buffer(size);
        for (int i = 0; i < size; i++) {
            b.writeByte(byteAt(partition, offset, i));
        }
        return b;
    }

    /** Checks every readable byte and the length of a batch read from the cache. */
    static void verify(ByteBuf read, int partition, long offset) {
        assertEquals(sizeOf(partition, offset), read.readableBytes(), "length of batch " + offset);
        for (int i = 0; i < read.readableBytes(); i++) {
            if (read.getByte(read.readerIndex() + i) != byteAt(partition, offset, i)) {
                throw new AssertionError("partition " + partition + " batch " + offset + ": byte " + i + " is wrong");
            }
        }
    }

    /** Reads every cached batch of the partition and checks its bytes; returns how many. */
    private static int verifyAll(LogCache cache, int partition) {
        int checked = 0;
        for (long o = cache.oldestOffset(); o >= 0 && o <= cache.newestOffset(); o++) {
            ByteBuf read = cache.read(o);
            assertNotNull(read, "batch " + o + " of a gap-free cache");
            try {
                verify(read, partition, o);
            } finally {
                read.release();
            }
            checked++;
        }
        return checked;
    }

    /**
     * One request thread appends to both partitions: the cold one gets one
     * batch in ten; the hot one cycles its 256 KiB bound many times, so the
     * chunks behind are emptied of its batches but pinned by cold ones.
     */
    private void interleave(LogCache hot, LogCache cold, int hotBatches) {
        long coldOffset = cold.newestOffset() + 1;
        for (long o = hot.newestOffset() + 1, end = o + hotBatches; o < end; o++) {
            assertTrue(hot.append(o, batch(HOT, o)));
            if (o % 10 == 0) {
                assertTrue(cold.append(coldOffset, batch(COLD, coldOffset)));
                coldOffset++;
            }
        }
    }

    private SequentialStats logStats() {
        return sequential.stats();
    }

    /**
     * (a) the cold partition's batches leave the pinned chunks, which go back:
     * none stays pinned; (b) every batch reads back its exact bytes and the
     * category's requested bytes are still the cache's bytes.
     */
    @Test
    void compactionEmptiesTheChunksPinnedByAQuietPartition() {
        LogCache hot = new LogCache(sequential, 256 * 1024, relocator);
        LogCache cold = new LogCache(sequential, 1 << 20, relocator);
        interleave(hot, cold, 1000); // about 16 MiB through the hot partition
        hot.close(); // the partition moved to another broker: its batches go, the cold ones stay
        SequentialStats before = logStats();
        assertTrue(before.pinnedChunks() >= 8, before::toString);
        assertTrue(before.pinnedOccupancy() < 0.1, before::toString);

        CompactionStats done = allocator.compact();

        SequentialStats after = logStats();
        assertEquals(0, after.pinnedChunks(), () -> after + " after " + done);
        assertTrue(after.chunks() < before.chunks(), () -> before + " -> " + after);
        assertEquals(done.chunksEvacuated(), done.chunksFreed(), done::toString);
        assertEquals(cold.relocations(), done.movedEntries(), done::toString);
        assertTrue(done.movedEntries() > 0 && done.movedEntries() < cold.size(), "only the batches in pinned chunks move");
        assertEquals(0, done.refusedEntries());
        assertEquals(0, done.heldByReaders());
        assertEquals(100, verifyAll(cold, COLD));
        assertEquals(cold.bytes(), allocator.stats().category(CATEGORY).requested());
        cold.close();
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
    }

    /**
     * (c) a reader that retained a batch before the compaction still reads its
     * old bytes after it, while the cache serves the copy; the chunk holding
     * the old bytes stays pinned until the reader releases them, and only then
     * goes back.
     */
    @Test
    void aReaderKeepsTheOldBytesAndTheirChunkUntilItReleases() {
        LogCache hot = new LogCache(sequential, 256 * 1024, relocator);
        LogCache cold = new LogCache(sequential, 1 << 20, relocator);
        interleave(hot, cold, 1000);
        hot.close();
        ByteBuf held = cold.read(0); // the oldest cold batch: in the first chunk, long pinned
        int heldSize = held.readableBytes();

        CompactionStats done = allocator.compact();

        assertEquals(1, done.heldByReaders(), done::toString);
        assertEquals(done.chunksEvacuated() - 1, done.chunksFreed(), "all but the chunk the reader holds: " + done);
        assertEquals(1, logStats().pinnedChunks(), logStats()::toString);
        verify(held, COLD, 0);
        ByteBuf copy = cold.read(0);
        verify(copy, COLD, 0);
        assertNotSame(held, copy, "the cache serves the copy");
        if (held.hasMemoryAddress() && copy.hasMemoryAddress()) { // not on JDK 22+ without native access
            assertNotEquals(held.memoryAddress(), copy.memoryAddress(), "the copy lies elsewhere");
        }
        copy.release();
        assertEquals(1, held.refCnt(), "the cache let go of the old buffer; the reader holds it alone");
        assertEquals(cold.bytes() + heldSize, allocator.stats().category(CATEGORY).requested(), "live until released");
        int chunksHeld = logStats().chunks();

        held.release();

        assertEquals(0, logStats().pinnedChunks(), logStats()::toString);
        assertTrue(logStats().chunks() < chunksHeld || logStats().spareChunks() == 1, logStats()::toString);
        assertEquals(cold.bytes(), allocator.stats().category(CATEGORY).requested());
        assertEquals(100, verifyAll(cold, COLD));
        cold.close();
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
    }

    /**
     * A buffer reports its memory address (where Netty's own do), so native
     * code (OpenSSL, a native transport) may write through it. A move never
     * frees memory something still holds: native code that took the address
     * before a compaction moved the entry, and writes through it after, writes
     * into the old copy, which stays the holder's until it releases it and is
     * never another buffer's memory meanwhile. The cache serves the copy, with
     * its bytes as they were; every other batch is untouched. (The owner moves
     * only entries nothing is writing; the log cache's batches are written once,
     * before they are appended.)
     */
    @Test
    void aNativeWriteThroughAnAddressTakenBeforeAMoveLandsInMemoryNoOtherBufferHas() {
        LogCache hot = new LogCache(sequential, 256 * 1024, relocator);
        LogCache cold = new LogCache(sequential, 1 << 20, relocator);
        interleave(hot, cold, 1000);
        hot.close();
        ByteBuf held = cold.read(0); // a native reader-writer retains the buffer and keeps its address
        int heldSize = held.readableBytes();
        boolean nativeWrite = held.hasMemoryAddress() && io.netty.util.internal.PlatformDependent.hasUnsafe();
        long address = held.hasMemoryAddress() ? held.memoryAddress() + held.readerIndex() : 0;

        CompactionStats done = allocator.compact();
        assertEquals(1, done.heldByReaders(), done::toString);

        if (nativeWrite) { // what native code does with an address: a raw store, no Java bounds check
            io.netty.util.internal.PlatformDependent.setMemory(address, heldSize, (byte) 0x5A);
        } else { // no raw stores on this JVM (JDK 22+ without Unsafe): the same bytes through the held buffer
            System.out.println("no Unsafe here: the write goes through the held buffer instead of its address");
            for (int i = 0; i < heldSize; i++) {
                held.setByte(held.readerIndex() + i, 0x5A);
            }
        }
        for (int i = 0; i < heldSize; i++) {
            assertEquals((byte) 0x5A, held.getByte(held.readerIndex() + i), "the write landed in the held copy");
        }
        ByteBuf copy = cold.read(0);
        verify(copy, COLD, 0); // the cache's copy kept its bytes
        copy.release();
        assertEquals(100, verifyAll(cold, COLD), "no other batch was written");
        assertEquals(1, logStats().pinnedChunks(), "the old chunk stays while the writer holds its memory");

        held.release();

        assertEquals(0, logStats().pinnedChunks(), logStats()::toString);
        assertEquals(100, verifyAll(cold, COLD));
        cold.close();
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
    }

    /** A heap batch whose first {@code readableBytes()} runs a hook: append calls it under the cache's lock. */
    private static final class HookedBatch extends UnpooledHeapByteBuf {
        private final Runnable hook;
        private boolean ran;

        HookedBatch(int partition, long offset, Runnable hook) {
            super(UnpooledByteBufAllocator.DEFAULT, sizeOf(partition, offset), sizeOf(partition, offset));
            this.hook = hook;
            writeBytes(batch(partition, offset));
        }

        @Override
        public int readableBytes() {
            if (hook != null && !ran) {
                ran = true;
                hook.run();
            }
            return super.readableBytes();
        }
    }

    /**
     * The relocator never waits: a compaction while another thread holds the
     * cache's lock (inside an append) returns at once with nothing moved and
     * the cold partition's chunks still pinned; the next one, after the
     * append, moves them. A hang here would be a relocator waiting for the lock.
     */
    @Test
    void compactionSkipsACacheWhoseLockAnotherThreadHolds() throws Exception {
        LogCache hot = new LogCache(sequential, 256 * 1024, relocator);
        LogCache cold = new LogCache(sequential, 1 << 20, relocator);
        interleave(hot, cold, 1000);
        hot.close();
        int pinned = logStats().pinnedChunks();
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread appender = new Thread(() -> {
            try {
                assertTrue(cold.append(100, new HookedBatch(COLD, 100, () -> {
                    inside.countDown();
                    try {
                        assertTrue(letGo.await(30, TimeUnit.SECONDS));
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                })));
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "appender");
        appender.start();
        assertTrue(inside.await(30, TimeUnit.SECONDS));

        CompactionStats busy = allocator.compact(); // the appender holds the lock now

        letGo.countDown();
        appender.join();
        assertNull(failure.get(), () -> "the appender failed: " + failure.get());
        assertEquals(0, busy.movedEntries(), busy::toString);
        assertEquals(0, busy.chunksFreed(), busy::toString);
        assertTrue(busy.chunksEvacuated() > 0, "there was something to move");
        assertEquals(1, cold.relocationsSkipped());
        assertEquals(0, cold.relocations());
        assertEquals(pinned, logStats().pinnedChunks());

        CompactionStats free = allocator.compact();

        assertTrue(free.movedEntries() > 0, free::toString);
        assertEquals(0, logStats().pinnedChunks(), logStats()::toString);
        assertEquals(101, verifyAll(cold, COLD));
        cold.close();
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
    }

    /**
     * Nor does it wait for its own thread: a compaction started inside an
     * append (as one at the pool's ceiling would be) finds the lock held by
     * the calling thread and leaves the cache alone instead of re-entering it.
     */
    @Test
    void compactionInsideAnAppendLeavesThatCacheAlone() {
        LogCache hot = new LogCache(sequential, 256 * 1024, relocator);
        LogCache cold = new LogCache(sequential, 1 << 20, relocator);
        interleave(hot, cold, 1000);
        hot.close();
        AtomicReference<CompactionStats> inside = new AtomicReference<>();
        assertTrue(cold.append(100, new HookedBatch(COLD, 100, () -> inside.set(allocator.compact()))));
        assertEquals(0, inside.get().movedEntries(), inside.get()::toString);
        assertEquals(1, cold.relocationsSkipped());
        assertTrue(logStats().pinnedChunks() > 0);
        allocator.compact();
        assertEquals(0, logStats().pinnedChunks(), logStats()::toString);
        assertEquals(101, verifyAll(cold, COLD));
        cold.close();
    }

    /**
     * At the pool's ceiling, cold batches (about 100 of 1 KiB) pin every chunk
     * of a 16 MiB pool and the hot partition's appends are refused. The
     * refused append compacts: the cold batches move into the chunk kept under
     * the ceiling for compactions, the pinned chunks go back, and the hot
     * partition appends again. Without that reserve every move was refused
     * (no open chunk had room, and a new one was over the ceiling) and
     * nothing was freed.
     */
    @Test
    void compactionAtTheCeilingEmptiesThePinnedChunks() {
        SlabwiseAllocator limited = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).maxMemory(16L << 20)
                .limitPolicy(LimitPolicy.RETURN_NULL).build();
        SequentialByteBufAllocator oneStripe = limited.sequential(CATEGORY, 1, 1 << 20);
        CacheRelocator limitedRelocator = new CacheRelocator(limited, CATEGORY);
        LogCache hot = new LogCache(oneStripe, 2 << 20, limitedRelocator);
        LogCache cold = new LogCache(oneStripe, 8 << 20, limitedRelocator);
        long coldOffset = 0;
        long o = 0;
        for (; o < 100_000 && limited.pool().compactionTotals().compactions() == 0; o++) {
            hot.append(o, batch(HOT, o)); // refused at the ceiling once the cold batches pin every chunk
            if (o % 10 == 0 && cold.append(coldOffset, batch(COLD, coldOffset))) {
                coldOffset++;
            }
        }
        CompactionStats atCeiling = limited.pool().compactionTotals();
        assertEquals(1, atCeiling.compactions(), "an append reached the ceiling and compacted");
        assertTrue(atCeiling.chunksFreed() >= 8, atCeiling::toString);
        SequentialStats after = oneStripe.stats();
        assertTrue(after.pinnedOccupancy() > 0.5, after::toString); // what stays pinned is the hot partition, dense
        assertTrue(hot.append(o, batch(HOT, o)), "the hot partition appends again");
        assertTrue(limited.pool().committedBytes() <= 16L << 20);
        assertEquals(coldOffset, verifyAll(cold, COLD));
        hot.close();
        cold.close();
        limited.close();
    }

    /**
     * The race checked: one thread appends to a hot and a cold partition, one
     * reads both, holding its last eight batches and checking each again just
     * before releasing it (so compactions move batches that readers hold), and
     * a third compacts after every 25 hot batches, while the appends go on.
     * Every read sees its batch's bytes; after the run, a last compaction
     * empties every pinned chunk once the hot partition is gone, every cold
     * batch is intact, and after closing nothing of the category is live.
     */
    @Test
    void appendsAndReadsWhileAnotherThreadCompacts() throws Exception {
        LogCache hot = new LogCache(sequential, 256 * 1024, relocator);
        LogCache cold = new LogCache(sequential, 1 << 20, relocator);
        int hotBatches = 3000;
        int batchesPerRound = 25;
        AtomicLong hotNext = new AtomicLong();
        AtomicLong coldNext = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicReference<CompactionStats> total = new AtomicReference<>(CompactionStats.NONE);
        CountDownLatch appending = new CountDownLatch(1);
        Semaphore rounds = new Semaphore(0);
        List<Thread> threads = new ArrayList<>();
        threads.add(new Thread(() -> {
            try {
                for (long o = 0; o < hotBatches && failure.get() == null; o++) {
                    assertTrue(hot.append(o, batch(HOT, o)));
                    hotNext.set(o + 1);
                    if (o % 10 == 0) {
                        long c = coldNext.get();
                        assertTrue(cold.append(c, batch(COLD, c)));
                        coldNext.set(c + 1);
                    }
                    if (o % batchesPerRound == 0) {
                        rounds.release(); // the compactor does not hold the appends up: it runs beside them
                    }
                }
            } finally {
                appending.countDown();
                rounds.release(hotBatches);
            }
        }, "appender"));
        threads.add(new Thread(() -> {
            SplittableRandom random = new SplittableRandom(7);
            ArrayDeque<Read> held = new ArrayDeque<>();
            try {
                for (int i = 0; i < 10_000_000 && appending.getCount() > 0 && failure.get() == null; i++) {
                    boolean fromHot = random.nextBoolean();
                    long next = (fromHot ? hotNext : coldNext).get();
                    if (next == 0) {
                        continue;
                    }
                    long o = fromHot ? next - 1 - random.nextInt((int) Math.min(next, 20)) : random.nextLong(next);
                    ByteBuf read = (fromHot ? hot : cold).read(o);
                    if (read != null) {
                        verify(read, fromHot ? HOT : COLD, o);
                        held.addLast(new Read(read, fromHot ? HOT : COLD, o));
                    }
                    if (held.size() > 8) {
                        held.removeFirst().checkAndRelease();
                    }
                }
            } finally {
                while (!held.isEmpty()) {
                    held.removeFirst().checkAndRelease();
                }
            }
        }, "reader"));
        threads.add(new Thread(() -> {
            for (int i = 0; i < hotBatches / batchesPerRound && appending.getCount() > 0 && failure.get() == null; i++) {
                try {
                    assertTrue(rounds.tryAcquire(30, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                CompactionStats done = allocator.compact();
                total.set(total.get().plus(done));
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
        assertEquals(hotBatches, hotNext.get());
        assertEquals(hotBatches / 10, coldNext.get());
        assertTrue(total.get().movedEntries() > 0, () -> "compactions under way moved nothing: " + total.get());
        assertEquals(cold.relocations() + hot.relocations(), total.get().movedEntries());
        assertEquals(cold.bytes() + hot.bytes(), allocator.stats().category(CATEGORY).requested());
        verifyAll(hot, HOT);
        assertEquals(hotBatches / 10, verifyAll(cold, COLD));

        hot.close();
        allocator.compact();
        assertEquals(0, logStats().pinnedChunks(), logStats()::toString);
        assertEquals(hotBatches / 10, verifyAll(cold, COLD));
        cold.close();
        assertEquals(0, allocator.stats().category(CATEGORY).requested());
        assertEquals(0, allocator.stats().category(CATEGORY).liveBuffers());
        assertSame(CompactionStats.NONE, allocator.compact(), "no cache joined: the relocator is unregistered");
    }

    /** A batch a reader holds: checked again when released, after compactions may have moved the cache's copy. */
    private record Read(ByteBuf buffer, int partition, long offset) {
        void checkAndRelease() {
            try {
                verify(buffer, partition, offset);
            } finally {
                buffer.release();
            }
        }
    }
}
