package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.slabwise.ConcurrentTasks;
import io.slabwise.PoolStats;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Buffers grown in place, shrunk and released across two threads never see each other's bytes. */
@Timeout(60)
class GrowthAcrossThreadsTest {

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
