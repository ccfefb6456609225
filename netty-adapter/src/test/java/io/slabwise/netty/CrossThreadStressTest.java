package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.slabwise.ConcurrentTasks;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Allocation and release across threads, with patterns that expose any overlap of live buffers. */
@Timeout(120)
class CrossThreadStressTest {

    private static final int THREADS = 4;
    private static final int ROUNDS = 6000;
    private static final Object POISON = new Object();

    /**
     * The race checked: buffers allocated on one thread and released on another
     * go back to the owning arena (through its remote-free queue) while that
     * arena keeps allocating. Each buffer carries a pattern unique to it and is
     * verified before release; if two live buffers ever shared memory, one of the
     * patterns would be overwritten. At the end nothing is live and, after a trim,
     * nothing is committed.
     */
    @Test
    void buffersReleasedOnOtherThreadsNeverOverlap() throws Exception {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();
        List<BlockingQueue<Object>> inboxes = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
            inboxes.add(new ArrayBlockingQueue<>(64));
        }
        AtomicLong verified = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(THREADS, r -> {
            Thread thread = new Thread(r, "stress");
            threads.add(thread);
            return thread;
        });
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int self = t;
            futures.add(pool.submit(() -> {
                Random random = new Random(1000 + self);
                List<ByteBuf> mine = new ArrayList<>();
                BlockingQueue<Object> inbox = inboxes.get(self);
                BlockingQueue<Object> next = inboxes.get((self + 1) % THREADS);
                long serial = (long) self << 40;
                for (int round = 0; round < ROUNDS; round++) {
                    int size = 1 + (random.nextInt(8) == 0 ? random.nextInt(200_000) : random.nextInt(4096));
                    ByteBuf buf = allocator.directBuffer(size);
                    fill(buf, serial++);
                    if (random.nextBoolean()) {
                        mine.add(buf);
                    } else {
                        while (!next.offer(buf)) {
                            drain(inbox, verified); // keep the ring moving instead of blocking
                        }
                    }
                    if (mine.size() > 32) {
                        ByteBuf old = mine.remove(random.nextInt(mine.size()));
                        verifyAndRelease(old, verified);
                    }
                    drain(inbox, verified);
                }
                for (ByteBuf buf : mine) {
                    verifyAndRelease(buf, verified);
                }
                next.put(POISON);
                // wait for our own poison from the previous thread, releasing what arrives before it
                while (true) {
                    Object item = inbox.poll(30, TimeUnit.SECONDS);
                    if (item == null) {
                        throw new AssertionError("no end marker from the previous thread");
                    }
                    if (item == POISON) {
                        break;
                    }
                    verifyAndRelease((ByteBuf) item, verified);
                }
                return null;
            }));
        }
        for (Future<?> f : futures) {
            f.get(120, TimeUnit.SECONDS);
        }
        pool.shutdown();
        assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
        for (Thread thread : threads) {
            thread.join(30_000); // a pool reports termination before its last threads have ended
        }
        assertEquals((long) THREADS * ROUNDS, verified.get());
        PoolStats stats = allocator.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals(0, stats.liveAllocations(), stats::report);
        allocator.trim();
        assertEquals(0, allocator.stats().committedBytes(), () -> allocator.stats().report());
    }

    /**
     * Thread death: threads of a pool that shrinks leave memory in their caches.
     * Once they have ended, the pool takes that memory back, so a trim returns
     * every chunk (a long-standing leak with Netty's thread caches).
     */
    @Test
    void cachesOfDeadThreadsGoBackToThePool() throws Exception {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();
        List<Thread> threads = new ArrayList<>();
        ThreadPoolExecutor workers = new ThreadPoolExecutor(4, 4, 1, TimeUnit.MILLISECONDS,
                new ArrayBlockingQueue<>(16), r -> {
                    Thread thread = new Thread(r, "worker");
                    threads.add(thread);
                    return thread;
                });
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            futures.add(workers.submit(() -> {
                for (int i = 0; i < 200; i++) {
                    allocator.directBuffer(512 + i).release(); // cached by this worker's thread cache
                }
            }));
        }
        for (Future<?> f : futures) {
            f.get(30, TimeUnit.SECONDS);
        }
        assertTrue(allocator.stats().cachedBytes() > 0, "released buffers sit in the workers' caches");
        workers.shutdown();
        assertTrue(workers.awaitTermination(30, TimeUnit.SECONDS));
        for (Thread thread : threads) {
            thread.join(30_000);
        }
        PoolStats afterDeath = allocator.stats(); // reclaims caches of dead threads
        assertEquals(0, afterDeath.cachedBytes(), afterDeath::report);
        allocator.trim();
        assertEquals(0, allocator.stats().committedBytes(), () -> allocator.stats().report());
    }

    private static void drain(BlockingQueue<Object> inbox, AtomicLong verified) {
        Object item;
        while ((item = inbox.peek()) != null && item != POISON) {
            inbox.poll();
            verifyAndRelease((ByteBuf) item, verified);
        }
    }

    private static void fill(ByteBuf buf, long serial) {
        int i = 0;
        for (; i + 8 <= buf.capacity(); i += 8) {
            buf.setLong(i, serial ^ i);
        }
        for (; i < buf.capacity(); i++) {
            buf.setByte(i, (int) (serial + i));
        }
        buf.writerIndex(buf.capacity());
        // remember the serial in the reader index space: the first 8 bytes encode it (xor 0)
    }

    private static void verifyAndRelease(ByteBuf buf, AtomicLong verified) {
        int capacity = buf.capacity();
        if (capacity >= 8) {
            long serial = buf.getLong(0);
            int i = 0;
            for (; i + 8 <= capacity; i += 8) {
                if (buf.getLong(i) != (serial ^ i)) {
                    throw new AssertionError("pattern broken at " + i + " of a " + capacity + "-byte buffer");
                }
            }
        }
        buf.release();
        verified.incrementAndGet();
    }

    /** Buffers grown in place, shrunk and released across two threads never see each other's bytes. */
    @Nested
    @Timeout(60)
    class GrowthAcrossThreads {

        private static final int CHUNK = 1 << 20;
        /** Buffers each thread allocates, grows and hands over; seeded, so every run makes the same requests. */
        private static final int STEPS = 3000;
        private static final int[] SIZES = {0, 1, 9, 100, 500, 1100, 3000, 9000, 70_000, 99_999, 140_000, 300_000};

        private static final class Entry {
            final ByteBuf buf;
            final long seed;

            Entry(ByteBuf buf, long seed) {
                this.buf = buf;
                this.seed = seed;
            }
        }

        private static void stamp(ByteBuf b, long seed) {
            Random r = new Random(seed);
            for (int i = 0; i < b.capacity(); i += 7) {
                b.setByte(i, r.nextInt());
            }
        }

        private static void verify(ByteBuf b, long seed) {
            Random r = new Random(seed);
            for (int i = 0; i < b.capacity(); i += 7) {
                byte expected = (byte) r.nextInt();
                if (b.getByte(i) != expected) {
                    throw new AssertionError("byte " + i + " of " + b + " changed");
                }
            }
        }

        @ParameterizedTest
        @ValueSource(booleans = {false, true})
        void growShrinkAndReleaseAcrossThreads(boolean recycle) throws Exception {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(2).dedicatedAbove(100_000)
                    .recycleBuffers(recycle).build();
            SequentialByteBufAllocator log = allocator.sequential("log", 2, CHUNK);
            BlockingQueue<Entry> handOff = new ArrayBlockingQueue<>(64);
            // threads of its own, joined: an executor's threads may still be alive when it says it terminated, and a
            // live thread's cache keeps what it holds through the trim below
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                int id = t;
                threads.add(ConcurrentTasks.startCapturingFailure(() -> {
                    Random random = new Random(id);
                    List<Entry> mine = new ArrayList<>();
                    int steps = STEPS;
                    long seed = id * 1_000_000_000L;
                    while (steps-- > 0) {
                        int size = SIZES[random.nextInt(SIZES.length)];
                        ByteBuf b = random.nextInt(4) == 0 && size > 0 && size <= CHUNK / 4 ? log.allocate(size)
                                : allocator.directBuffer(size);
                        b.writerIndex(b.capacity());
                        b.ensureWritable(b.maxFastWritableBytes()); // in place, up to what it reserved
                        stamp(b, ++seed);
                        mine.add(new Entry(b, seed));
                        Entry other = handOff.poll();
                        if (other != null) {
                            verify(other.buf, other.seed);
                            if (random.nextBoolean() && other.buf.capacity() > 1) {
                                other.buf.capacity(other.buf.capacity() - 1 - random.nextInt(other.buf.capacity() / 2 + 1));
                                verify(other.buf, other.seed);
                                other.buf.writerIndex(other.buf.capacity());
                                other.buf.ensureWritable(other.buf.maxFastWritableBytes());
                                stamp(other.buf, ++seed);
                                mine.add(new Entry(other.buf, seed));
                            } else {
                                other.buf.release();
                            }
                        }
                        if (mine.size() > 30) {
                            Entry e = mine.remove(random.nextInt(mine.size()));
                            verify(e.buf, e.seed);
                            if (!handOff.offer(e)) {
                                e.buf.release();
                            }
                        }
                    }
                    for (Entry e : mine) {
                        verify(e.buf, e.seed);
                        e.buf.release();
                    }
                }, failure));
            }
            for (Thread thread : threads) {
                thread.join();
            }
            if (failure.get() != null) {
                throw new AssertionError("a thread failed", failure.get());
            }
            for (Entry e; (e = handOff.poll()) != null; ) {
                verify(e.buf, e.seed);
                e.buf.release();
            }
            PoolStats stats = allocator.stats();
            assertEquals(0, stats.requestedBytes(), stats::report);
            assertEquals(0, stats.reservedBytes(), stats::report);
            assertEquals(0, stats.liveAllocations(), stats::report);
            log.trim();
            allocator.trim();
            allocator.close();
            assertEquals(0, allocator.stats().committedBytes(), () -> allocator.stats().report());
        }
    }
}
