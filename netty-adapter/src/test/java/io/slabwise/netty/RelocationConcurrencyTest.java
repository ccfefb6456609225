package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.IllegalReferenceCountException;
import io.slabwise.CompactionStats;
import io.slabwise.ConcurrentTasks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Relocation with other threads at work: readers retaining, reading and
 * releasing entries while the owner replaces them and another thread
 * compacts; allocations racing the marking of chunks; two threads compacting
 * at once. Each test says which race it checks.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RelocationConcurrencyTest {

    private static final int CHUNK = 256 * 1024;
    private static final int BLOCK = 64 * 1024;

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(2).arenaSpreadBytes(0).build();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    @AfterEach
    void close() {
        allocator.close();
    }

    /**
     * A cache of slots, copy on write: a slot is replaced, never written in
     * place, so a reader that retained a slot's buffer under the lock reads
     * it whole outside the lock. Its relocator takes the lock only with
     * {@code tryLock}.
     */
    private final class SlotCache implements BufferRelocator {
        final ReentrantLock lock = new ReentrantLock();
        final ByteBuf[] buffers;
        final long[] checksums;
        final ByteBufAllocator general = allocator.forCategory("cache");
        final SequentialByteBufAllocator sequential = allocator.sequential("cache", 2, CHUNK);
        final BlockByteBufAllocator blocks = allocator.blocks("cache", BLOCK, 2);
        final AtomicLong moved = new AtomicLong();
        final AtomicLong held = new AtomicLong();
        final AtomicInteger inside = new AtomicInteger();
        final AtomicInteger mostInside = new AtomicInteger();
        final AtomicInteger busy = new AtomicInteger();

        SlotCache(int slots, Random random) {
            buffers = new ByteBuf[slots];
            checksums = new long[slots];
            for (int i = 0; i < slots; i++) {
                buffers[i] = newEntry(random);
                checksums[i] = BufferChecksums.fill(buffers[i], random);
            }
        }

        ByteBuf newEntry(Random random) {
            int kind = random.nextInt(3);
            if (kind == 0) {
                return general.directBuffer(1 + random.nextInt(8192));
            }
            if (kind == 1) {
                return sequential.allocate(1 + random.nextInt(8192));
            }
            return blocks.allocate(1 + random.nextInt(40_000));
        }

        /** Replaces slot {@code i} with a new buffer of new bytes; the old one lives on while readers hold it. */
        void replace(int i, Random random) {
            ByteBuf fresh = newEntry(random);
            long checksum = BufferChecksums.fill(fresh, random);
            ByteBuf old;
            lock.lock();
            try {
                old = buffers[i];
                buffers[i] = fresh;
                checksums[i] = checksum;
            } finally {
                lock.unlock();
            }
            old.release();
        }

        @Override
        public void relocate(BufferEvacuation evacuation) {
            mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
            try {
                if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
                    busy.incrementAndGet();
                    return; // never wait: a reader or the owner has it
                }
                try {
                    for (int i = 0; i < buffers.length && evacuation.budgetLeft(); i++) {
                        ByteBuf old = buffers[i];
                        if (!evacuation.contains(old)) {
                            continue;
                        }
                        boolean shared = old.refCnt() > 1;
                        ByteBuf copy = evacuation.move(old);
                        if (copy == null) {
                            continue;
                        }
                        buffers[i] = copy;
                        old.release(); // a reader that retained it keeps reading it
                        moved.incrementAndGet();
                        if (shared) {
                            held.incrementAndGet();
                        }
                    }
                } finally {
                    lock.unlock();
                }
            } finally {
                inside.decrementAndGet();
            }
        }

        void releaseAll() {
            for (ByteBuf buf : buffers) {
                buf.release();
            }
        }
    }

    /** A buffer a reader retained, with the checksum its slot had then. */
    private record Retained(ByteBuf buffer, long checksum) {
    }

    private Thread start(Runnable task) {
        return ConcurrentTasks.startCapturingFailure(task, failure);
    }

    private void joinAll(List<Thread> threads) throws InterruptedException {
        for (Thread thread : threads) {
            thread.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("a thread failed", failure.get());
        }
    }

    private static void check(Retained retained) {
        assertEquals(retained.checksum(), BufferChecksums.crc(retained.buffer()), "a retained buffer changed");
    }

    /** The owner's churn: replaces random slots, and keeps a window of buffers of another category in the same chunks. */
    private Runnable churn(SlotCache cache, int rounds, long seed, AtomicBoolean done) {
        return () -> {
            Random random = new Random(seed);
            ByteBufAllocator network = allocator.forCategory("network");
            ArrayDeque<ByteBuf> window = new ArrayDeque<>();
            try {
                for (int round = 0; round < rounds; round++) {
                    cache.replace(random.nextInt(cache.buffers.length), random);
                    window.add(network.directBuffer(1 + random.nextInt(4096)));
                    if (window.size() > 64) {
                        (random.nextBoolean() ? window.pollFirst() : window.pollLast()).release();
                    }
                }
            } finally {
                window.forEach(ByteBuf::release);
                done.set(true);
            }
        };
    }

    /** After everything is released and the threads are gone: nothing requested, nothing to compact, nothing committed. */
    private void assertEverythingGoesBack() {
        assertEquals(0, allocator.stats().category("cache").requested(), allocator.stats()::report);
        assertEquals(0, allocator.stats().category("network").requested(), allocator.stats()::report);
        assertEquals(0, allocator.stats().liveAllocations());
        allocator.trim();
        CompactionStats last = allocator.compact();
        assertEquals(0, last.chunksEvacuated(), last::toString);
        assertEquals(0, allocator.pool().committedBytes(), allocator.stats()::report);
    }

    /**
     * The race: two readers retain random entries under the owner's lock and
     * read them outside it, keeping some across later moves and releasing
     * them later; the owner replaces entries (copy on write) and churns
     * buffers of another category through the same chunks; a third thread
     * compacts over and over, its relocator moving entries whenever it gets
     * the lock. A reader must always read the bytes its slot had when it
     * retained it, and never meet {@link IllegalReferenceCountException}.
     */
    @Test
    void readersKeepReadingWhatTheyRetainedWhileEntriesMove() throws Exception {
        SlotCache cache = new SlotCache(300, new Random(1));
        allocator.setRelocator("cache", cache);
        AtomicBoolean ownerDone = new AtomicBoolean();
        AtomicLong reads = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            int self = r;
            threads.add(start(() -> {
                Random random = new Random(10 + self);
                ArrayDeque<Retained> kept = new ArrayDeque<>();
                for (int round = 0; round < 40_000 && failure.get() == null; round++) {
                    int i = random.nextInt(cache.buffers.length);
                    Retained got;
                    cache.lock.lock();
                    try {
                        got = new Retained(cache.buffers[i].retain(), cache.checksums[i]);
                    } finally {
                        cache.lock.unlock();
                    }
                    check(got);
                    reads.incrementAndGet();
                    if (random.nextInt(8) == 0) {
                        kept.add(got); // held across later moves and replacements
                    } else {
                        got.buffer().release();
                    }
                    if (kept.size() > 16) {
                        Retained old = kept.poll();
                        check(old);
                        old.buffer().release();
                    }
                }
                for (Retained old : kept) {
                    check(old);
                    old.buffer().release();
                }
            }));
        }
        threads.add(start(churn(cache, 6000, 3, ownerDone)));
        AtomicLong compactions = new AtomicLong();
        threads.add(start(() -> {
            Random random = new Random(4);
            for (int round = 0; round < 20_000 && !ownerDone.get() && failure.get() == null; round++) {
                CompactionStats done = random.nextBoolean() ? allocator.compact()
                        : allocator.pool().compact(random.nextDouble() * 0.9, random.nextInt(4) == 0 ? CHUNK : Long.MAX_VALUE);
                compactions.addAndGet(done.compactions());
            }
        }));
        joinAll(threads);
        CompactionStats totals = allocator.pool().compactionTotals();
        assertEquals(compactions.get(), totals.compactions());
        assertTrue(cache.moved.get() > 0, totals::toString);
        assertEquals(cache.moved.get(), totals.movedEntries(), "every move counted once");
        assertTrue(totals.heldByReaders() <= cache.held.get(), "held by readers when moved, as the owner saw it");
        assertEquals(1, cache.mostInside.get(), "relocator calls overlapped");
        assertEquals(80_000, reads.get());
        for (int i = 0; i < cache.buffers.length; i++) {
            assertEquals(cache.checksums[i], BufferChecksums.crc(cache.buffers[i]));
        }
        cache.releaseAll();
        assertEverythingGoesBack();
    }

    /** A buffer a worker holds, with its checksum. */
    private record Held(ByteBuf buffer, long checksum) {
    }

    /**
     * The race: two threads allocate, fill, check and release buffers in
     * tight loops (the general pool in the relocatable category and in
     * another, slices, composites of blocks), handing a quarter over to each
     * other to release, while this thread compacts over and over and the
     * owner moves its entries. New buffers may land in chunks being marked,
     * frees may reach an arena as it marks: nothing may be corrupted, and
     * once everything is released and the threads are gone, nothing is live,
     * a compaction finds nothing to empty, and nothing is committed.
     */
    @Test
    void allocationsRacingTheMarkingCorruptNothing() throws Exception {
        SlotCache cache = new SlotCache(200, new Random(2));
        allocator.setRelocator("cache", cache);
        ConcurrentLinkedQueue<Held> handedOver = new ConcurrentLinkedQueue<>();
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            int self = w;
            workers.add(start(() -> {
                Random random = new Random(20 + self);
                ByteBufAllocator network = allocator.forCategory("network");
                List<Held> mine = new ArrayList<>();
                for (int round = 0; round < 30_000 && failure.get() == null; round++) {
                    ByteBuf buf = random.nextInt(4) == 0 ? network.directBuffer(1 + random.nextInt(16 * 1024))
                            : cache.newEntry(random); // the cache's category and allocators, but no entry of its
                    Held held = new Held(buf, BufferChecksums.fill(buf, random));
                    if (random.nextInt(4) == 0) {
                        handedOver.add(held);
                    } else {
                        mine.add(held);
                    }
                    if (mine.size() > 32) {
                        Held old = mine.remove(random.nextInt(mine.size()));
                        assertEquals(old.checksum(), BufferChecksums.crc(old.buffer()));
                        old.buffer().release();
                    }
                    Held theirs = handedOver.poll();
                    if (theirs != null) {
                        assertEquals(theirs.checksum(), BufferChecksums.crc(theirs.buffer()));
                        theirs.buffer().release();
                    }
                }
                for (Held held : mine) {
                    assertEquals(held.checksum(), BufferChecksums.crc(held.buffer()));
                    held.buffer().release();
                }
            }));
        }
        Random random = new Random(5);
        for (int round = 0; round < 20_000 && workers.stream().anyMatch(Thread::isAlive); round++) {
            allocator.pool().compact(0.3 + 0.6 * random.nextDouble(), Long.MAX_VALUE);
            if (round % 4 == 0) {
                cache.replace(random.nextInt(cache.buffers.length), random);
            }
        }
        joinAll(workers);
        for (Held held; (held = handedOver.poll()) != null; ) {
            assertEquals(held.checksum(), BufferChecksums.crc(held.buffer()));
            held.buffer().release();
        }
        assertTrue(cache.moved.get() > 0, allocator.pool().compactionTotals()::toString);
        for (int i = 0; i < cache.buffers.length; i++) {
            assertEquals(cache.checksums[i], BufferChecksums.crc(cache.buffers[i]));
        }
        cache.releaseAll();
        assertEverythingGoesBack();
    }

    /**
     * The race: two threads call {@code compact()} at the same moment, again
     * and again (a barrier starts each round), while the owner replaces
     * entries. Both calls return every time, one after the other: relocator
     * calls never overlap, and the moves the owner made are the moves the
     * pool counted, once each.
     */
    @Test
    void twoThreadsCompactingAtOnceTakeTurns() throws Exception {
        SlotCache cache = new SlotCache(300, new Random(6));
        allocator.setRelocator("cache", cache);
        AtomicBoolean ownerDone = new AtomicBoolean();
        CyclicBarrier barrier = new CyclicBarrier(2);
        ConcurrentLinkedQueue<CompactionStats> results = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>();
        threads.add(start(churn(cache, 3000, 7, ownerDone)));
        for (int t = 0; t < 2; t++) {
            threads.add(start(() -> {
                for (int round = 0; round < 300 && failure.get() == null; round++) {
                    try {
                        barrier.await(10, TimeUnit.SECONDS); // a bound for a stuck thread, not a pause
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                    results.add(allocator.compact());
                }
            }));
        }
        joinAll(threads);
        assertEquals(600, results.size(), "every call returned");
        CompactionStats sum = results.stream().reduce(CompactionStats.NONE, CompactionStats::plus);
        CompactionStats totals = allocator.pool().compactionTotals();
        assertEquals(sum.compactions(), totals.compactions());
        assertEquals(sum.movedEntries(), totals.movedEntries());
        assertEquals(cache.moved.get(), totals.movedEntries(), "every move counted once");
        assertTrue(cache.moved.get() > 0, totals::toString);
        assertEquals(1, cache.mostInside.get(), "relocator calls overlapped");
        for (int i = 0; i < cache.buffers.length; i++) {
            assertEquals(cache.checksums[i], BufferChecksums.crc(cache.buffers[i]));
        }
        cache.releaseAll();
        assertEverythingGoesBack();
    }
}
