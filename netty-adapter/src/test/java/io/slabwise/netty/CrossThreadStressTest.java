package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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
}
