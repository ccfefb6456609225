package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A buffer's reference count changed by several threads at once: whatever the
 * interleaving, the memory goes back exactly once, by the release that takes
 * the last reference, and never while a reference is held.
 *
 * <p>Each round, the test thread allocates a buffer and hands it to worker
 * threads that spin until the round starts and then act on it together, so
 * that their compare-and-sets on the count overlap in as many rounds as the
 * machine's cores allow; the jcstress tests ({@code BufferReferenceCountTest}
 * in {@code concurrency-tests}) drive the two-thread interleavings far more
 * often. Both the safe default and recycling buffer objects are checked.
 */
@Timeout(60)
class ReferenceCountRaceTest {

    private static final int ROUNDS = 2_000;
    /** Threads that act at once: more than the cores would only queue behind the spinning ones. */
    private static final int WORKERS = Math.max(2, Math.min(4, Runtime.getRuntime().availableProcessors()));

    private final ExecutorService workers = Executors.newFixedThreadPool(WORKERS);

    @AfterEach
    void stopWorkers() throws InterruptedException {
        workers.shutdownNow();
        workers.awaitTermination(10, TimeUnit.SECONDS);
    }

    private static SlabwiseAllocator allocator(boolean recycle) {
        return SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).recycleBuffers(recycle).build();
    }

    /**
     * The race checked: two to four threads (one per core) each hold one of
     * a buffer's references and release it at the same moment; exactly one release
     * returns true in every round, and nothing is left live.
     */
    @ParameterizedTest(name = "recycleBuffers={0}")
    @ValueSource(booleans = {false, true})
    void racingReleasesGiveTheMemoryBackExactlyOnce(boolean recycle) throws Exception {
        SlabwiseAllocator allocator = allocator(recycle);
        AtomicInteger lastReleases = new AtomicInteger();
        List<Throwable> failures = race(allocator, WORKERS, buf -> buf.retain(WORKERS - 1), buf -> {
            if (buf.release()) {
                lastReleases.incrementAndGet();
            }
        }, buf -> assertEquals(0, buf.refCnt()));
        assertEquals(List.of(), failures);
        assertEquals(ROUNDS, lastReleases.get(), "exactly one last release per round");
        assertEquals(0, allocator.stats().liveAllocations());
        allocator.close();
    }

    /**
     * The race checked: two threads release a buffer that holds one
     * reference (a double release, a bug in the caller); one of them frees
     * it, the other gets {@link IllegalReferenceCountException}, and the
     * memory goes back once.
     */
    @ParameterizedTest(name = "recycleBuffers={0}")
    @ValueSource(booleans = {false, true})
    void aRacingDoubleReleaseFreesOnceAndTellsTheOther(boolean recycle) throws Exception {
        SlabwiseAllocator allocator = allocator(recycle);
        AtomicInteger freed = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        List<Throwable> failures = race(allocator, 2, buf -> { }, buf -> {
            try {
                if (buf.release()) {
                    freed.incrementAndGet();
                }
            } catch (IllegalReferenceCountException e) {
                refused.incrementAndGet();
            }
        }, buf -> assertEquals(0, buf.refCnt()));
        assertEquals(List.of(), failures);
        assertEquals(ROUNDS, freed.get());
        assertEquals(ROUNDS, refused.get());
        assertEquals(0, allocator.stats().liveAllocations());
        assertEquals(ROUNDS, allocator.stats().releases());
        allocator.close();
    }

    /**
     * The race checked: with two references held, one thread releases its
     * reference while another retains and releases its own; the buffer is
     * never freed and its bytes stay as written, and the count ends at 1.
     */
    @ParameterizedTest(name = "recycleBuffers={0}")
    @ValueSource(booleans = {false, true})
    void retainsRacingReleasesNeverFreeAHeldBuffer(boolean recycle) throws Exception {
        SlabwiseAllocator allocator = allocator(recycle);
        AtomicInteger wrongResults = new AtomicInteger();
        AtomicInteger turn = new AtomicInteger();
        List<Throwable> failures = race(allocator, 2, buf -> {
            buf.writeLong(0x5eed_5eed_5eed_5eedL);
            buf.retain();
        }, buf -> {
            boolean freed;
            if ((turn.getAndIncrement() & 1) == 0) {
                freed = buf.release();
            } else {
                freed = buf.retain().release();
            }
            if (freed) {
                wrongResults.incrementAndGet();
            }
        }, buf -> {
            assertEquals(1, buf.refCnt());
            assertEquals(0x5eed_5eed_5eed_5eedL, buf.getLong(0));
            assertEquals(1, allocator.stats().liveAllocations());
            buf.release();
        });
        assertEquals(List.of(), failures);
        assertEquals(0, wrongResults.get(), "a release freed a buffer that still had a reference");
        assertEquals(0, allocator.stats().liveAllocations());
        allocator.close();
    }

    /** A consumer that may throw. */
    private interface BufferAction {
        void accept(ByteBuf buf) throws Exception;
    }

    /**
     * Runs {@link #ROUNDS} rounds: the test thread allocates a buffer and
     * {@code prepares} it, {@code threads} workers {@code act} on it at once,
     * and the test thread {@code checks} it after all of them are done.
     * Returns what the workers threw.
     */
    private List<Throwable> race(SlabwiseAllocator allocator, int threads, BufferAction prepare, BufferAction act,
                                 BufferAction check) throws Exception {
        // workers spin until the round's number is published, so they start within a few hundred
        // nanoseconds of each other (a barrier wakes parked threads one by one, microseconds apart)
        AtomicInteger go = new AtomicInteger(-1);
        CyclicBarrier done = new CyclicBarrier(threads + 1);
        AtomicReference<ByteBuf> current = new AtomicReference<>();
        List<Throwable> failures = new ArrayList<>();
        List<Future<?>> running = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            running.add(workers.submit(() -> {
                for (int round = 0; round < ROUNDS; round++) {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (go.get() != round) {
                        if (System.nanoTime() > deadline) {
                            throw new AssertionError("round " + round + " did not start within 10 s");
                        }
                        Thread.onSpinWait();
                    }
                    try {
                        act.accept(current.get());
                    } catch (Throwable e) {
                        synchronized (failures) {
                            failures.add(e);
                        }
                    }
                    await(done);
                }
                return null;
            }));
        }
        for (int round = 0; round < ROUNDS; round++) {
            ByteBuf buf = allocator.directBuffer(64);
            prepare.accept(buf);
            current.set(buf);
            go.set(round);
            await(done);
            check.accept(buf);
        }
        for (Future<?> worker : running) {
            worker.get(10, TimeUnit.SECONDS);
        }
        return failures;
    }

    private static void await(CyclicBarrier barrier) throws InterruptedException, BrokenBarrierException {
        try {
            barrier.await(10, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("a thread of the race did not arrive within 10 s", e);
        }
    }
}
