package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Regions taken through {@link MallocArenaThread} are taken on its one thread,
 * whoever asks; what the source throws reaches the caller; an interrupted
 * caller still gets its region and keeps its interrupt.
 */
@Timeout(30)
class MallocArenaThreadTest {

    /** A source that records the thread of each allocation and can be held at a latch. */
    private static final class RecordingSource implements ChunkSource {
        final List<String> threads = new ArrayList<>();
        volatile CountDownLatch hold;
        volatile RuntimeException failure;

        @Override
        public synchronized NativeRegion allocate(int size) {
            threads.add(Thread.currentThread().getName());
            if (failure != null) {
                throw failure;
            }
            CountDownLatch latch = hold;
            if (latch != null) {
                ConcurrentTasks.await(latch, "the test to let the allocation go");
            }
            ByteBuffer buffer = ByteBuffer.allocateDirect(size);
            return new NativeRegion(buffer, BufferAddress.of(buffer), size);
        }

        @Override
        public void release(NativeRegion region) {
        }
    }

    @Test
    void everyCallerIsServedOnTheOneMallocThread() throws Exception {
        RecordingSource source = new RecordingSource();
        int callers = 4;
        CyclicBarrier start = new CyclicBarrier(callers);
        List<Thread> threads = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int i = 0; i < callers; i++) {
            Thread thread = new Thread(() -> {
                ConcurrentTasks.await(start, "the other callers");
                for (int n = 0; n < 25; n++) {
                    assertEquals(8192, MallocArenaThread.allocate(source, 8192).size());
                }
            }, "caller-" + i);
            thread.setUncaughtExceptionHandler((t, e) -> failure.set(e));
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertEquals(null, failure.get());
        assertEquals(callers * 25, source.threads.size());
        assertTrue(source.threads.stream().allMatch("slabwise-malloc"::equals), source.threads.toString());
    }

    @Test
    void whatTheSourceThrowsReachesTheCaller() {
        RecordingSource source = new RecordingSource();
        source.failure = new IllegalStateException("no memory here");
        assertSame(source.failure, assertThrows(IllegalStateException.class, () -> MallocArenaThread.allocate(source, 4096)));
        OutOfMemoryError oom = new OutOfMemoryError("Cannot reserve 4096 bytes of direct buffer memory");
        ChunkSource throwing = new ChunkSource() {
            @Override
            public NativeRegion allocate(int size) {
                throw oom;
            }

            @Override
            public void release(NativeRegion region) {
            }
        };
        assertSame(oom, assertThrows(OutOfMemoryError.class, () -> MallocArenaThread.allocate(throwing, 4096)));
    }

    @Test
    void anInterruptedCallerGetsItsRegionAndKeepsItsInterrupt() throws Exception {
        RecordingSource source = new RecordingSource();
        source.hold = new CountDownLatch(1);
        AtomicReference<NativeRegion> got = new AtomicReference<>();
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        Thread caller = new Thread(() -> {
            got.set(MallocArenaThread.allocate(source, 16384));
            interruptedAfter.set(Thread.currentThread().isInterrupted());
        });
        caller.start();
        caller.interrupt(); // before or while it waits: either way it must not give up on the region
        source.hold.countDown();
        caller.join();
        assertEquals(16384, got.get().size());
        assertTrue(interruptedAfter.get(), "the interrupt is kept for the caller");
    }
}
