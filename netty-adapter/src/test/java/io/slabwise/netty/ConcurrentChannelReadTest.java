package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Absolute reads of one buffer into channels from several threads at once,
 * through the buffer itself and through its slices and duplicates. Netty's
 * buffers allow concurrent absolute reads; each
 * {@code getBytes(index, GatheringByteChannel, length)} and
 * {@code getBytes(index, FileChannel, position, length)} must therefore hand
 * the channel a view of its own, never the buffer's one internal view, which
 * another thread could move while the channel is still reading it.
 *
 * <p>Each case runs with native access (where the JVM has it) and without.
 */
@Timeout(60)
class ConcurrentChannelReadTest {

    private static final int SIZE = 64 * 1024;
    private static final int THREADS = 4;
    private static final int ROUNDS = 400;
    private static final byte[] DATA = data();

    private final ExecutorService executor = Executors.newFixedThreadPool(THREADS);

    @AfterEach
    void stopThreads() throws InterruptedException {
        executor.shutdownNow();
        assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
    }

    /** Deterministic content: every window of it differs from the others. */
    private static byte[] data() {
        byte[] bytes = new byte[SIZE];
        for (int i = 0; i < SIZE; i++) {
            bytes[i] = (byte) (i * 131 + (i >>> 8));
        }
        return bytes;
    }

    private static ByteBuf filledBuffer(SlabwiseAllocator allocator) {
        return allocator.directBuffer(SIZE).writeBytes(DATA);
    }

    private static SlabwiseAllocator allocator(boolean nativeAccess) {
        return nativeAccess ? SlabwiseContractFixture.ALLOCATOR : SlabwiseContractFixture.NO_ADDRESS;
    }

    /**
     * A gathering channel that keeps what it is written, taking the bytes a
     * few at a time with a yield in between, so that a view moved by another
     * thread in the meantime shows as wrong or missing bytes.
     */
    static class RecordingChannel implements GatheringByteChannel {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        @Override
        public int write(ByteBuffer src) throws IOException {
            int n = 0;
            while (src.hasRemaining()) {
                bytes.write(src.get());
                if ((++n & 63) == 0) {
                    Thread.yield();
                }
            }
            return n;
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
            long n = 0;
            for (int i = offset; i < offset + length; i++) {
                n += write(srcs[i]);
            }
            return n;
        }

        @Override
        public long write(ByteBuffer[] srcs) throws IOException {
            return write(srcs, 0, srcs.length);
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }

        byte[] take() {
            byte[] taken = bytes.toByteArray();
            bytes.reset();
            return taken;
        }
    }

    /**
     * The interleaving that broke, forced with latches: a read through a slice
     * hands its channel a view; before the channel has read it, a read
     * through a duplicate on another thread runs to completion. The first
     * channel must still see its own window, whole.
     */
    @ParameterizedTest(name = "native access {0}")
    @ValueSource(booleans = {true, false})
    void aChannelKeepsItsViewWhileAnotherThreadReads(boolean nativeAccess) throws Exception {
        ByteBuf buf = filledBuffer(allocator(nativeAccess));
        try {
            ByteBuf slice = buf.slice(100, SIZE / 2);
            ByteBuf duplicate = buf.duplicate();
            CountDownLatch firstHasItsView = new CountDownLatch(1);
            CountDownLatch secondIsDone = new CountDownLatch(1);
            RecordingChannel first = new RecordingChannel() {
                @Override
                public int write(ByteBuffer src) throws IOException {
                    firstHasItsView.countDown();
                    try {
                        assertTrue(secondIsDone.await(10, TimeUnit.SECONDS));
                    } catch (InterruptedException e) {
                        throw new IOException(e);
                    }
                    return super.write(src);
                }
            };
            Future<Integer> firstRead = executor.submit(() -> slice.getBytes(0, first, 4096));
            assertTrue(firstHasItsView.await(10, TimeUnit.SECONDS));
            RecordingChannel second = new RecordingChannel();
            assertEquals(4096, duplicate.getBytes(SIZE - 5000, second, 4096));
            secondIsDone.countDown();

            assertEquals(4096, firstRead.get(10, TimeUnit.SECONDS));
            assertArrayEquals(Arrays.copyOfRange(DATA, 100, 100 + 4096), first.take());
            assertArrayEquals(Arrays.copyOfRange(DATA, SIZE - 5000, SIZE - 904), second.take());
        } finally {
            buf.release();
        }
        SlabwiseContractFixture.assertNothingLive();
    }

    /**
     * Four threads start together and read random windows of one buffer into
     * channels of their own: one through the buffer itself, the others
     * through a slice, a duplicate and a slice of a duplicate, alternating a
     * gathering channel and a file channel, absolute and relative reads. Every
     * channel must receive exactly the bytes of its window.
     */
    @ParameterizedTest(name = "native access {0}")
    @ValueSource(booleans = {true, false})
    void threadsReadingOneBufferToChannelsGetTheirOwnBytes(boolean nativeAccess, @TempDir Path dir) throws Exception {
        ByteBuf buf = filledBuffer(allocator(nativeAccess));
        Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        try {
            ByteBuf[] views = {buf, buf.slice(1000, SIZE - 1000), buf.duplicate(), buf.duplicate().slice(7, SIZE - 7)};
            int[] starts = {0, 1000, 0, 7};
            CyclicBarrier start = new CyclicBarrier(THREADS);
            List<Future<?>> readers = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                ByteBuf view = views[t];
                int viewStart = starts[t];
                Path file = dir.resolve("reader-" + t);
                long seed = 31L * t + (nativeAccess ? 1 : 0);
                boolean relativeAllowed = view != buf; // relative reads move the reader index of a buffer one thread owns
                readers.add(executor.submit(() -> {
                    try (FileChannel fileChannel = FileChannel.open(file, StandardOpenOption.CREATE,
                            StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                        read(view, viewStart, fileChannel, new Random(seed), relativeAllowed, start);
                    } catch (Throwable failure) {
                        failures.add(failure);
                    }
                    return null;
                }));
            }
            for (Future<?> reader : readers) {
                reader.get(50, TimeUnit.SECONDS);
            }
        } finally {
            buf.release();
        }
        if (!failures.isEmpty()) {
            AssertionError error = new AssertionError(failures.size() + " readers failed; the first: " + failures.peek());
            failures.forEach(error::addSuppressed);
            throw error;
        }
        SlabwiseContractFixture.assertNothingLive();
    }

    private static void read(ByteBuf view, int viewStart, FileChannel fileChannel, Random random, boolean relativeAllowed,
                             CyclicBarrier start) throws Exception {
        RecordingChannel gathering = new RecordingChannel();
        start.await(10, TimeUnit.SECONDS);
        for (int round = 0; round < ROUNDS; round++) {
            int length = 1 + random.nextInt(4096);
            int index = random.nextInt(view.capacity() - length + 1);
            byte[] expected = Arrays.copyOfRange(DATA, viewStart + index, viewStart + index + length);
            boolean relative = relativeAllowed && random.nextBoolean();
            if (round % 2 == 0) {
                int written;
                if (relative) {
                    view.setIndex(index, view.capacity());
                    written = view.readBytes(gathering, length);
                    assertEquals(index + length, view.readerIndex());
                } else {
                    written = view.getBytes(index, gathering, length);
                }
                assertEquals(length, written, "round " + round);
                assertArrayEquals(expected, gathering.take(), "gathering channel, round " + round);
            } else {
                int written;
                if (relative) {
                    view.setIndex(index, view.capacity());
                    written = view.readBytes(fileChannel, 0, length);
                } else {
                    written = view.getBytes(index, fileChannel, 0, length);
                }
                assertEquals(length, written, "round " + round);
                ByteBuffer back = ByteBuffer.allocate(length);
                while (back.hasRemaining()) {
                    if (fileChannel.read(back, back.position()) < 0) {
                        break;
                    }
                }
                assertArrayEquals(expected, back.array(), "file channel, round " + round);
            }
        }
    }

    /**
     * Two slices of one buffer filled from channels on two threads at once: each
     * channel gets a view of its own, so each slice's bytes land in that slice.
     * A derived buffer hands out a new NIO view every time; the parent reuses one
     * internal view, which two threads must never share.
     *
     * <p>The interleaving is forced with latches: thread A's channel receives its
     * view and waits; the main thread fills slice B; then A writes into the view
     * it was given.
     */
    @Nested
    @Timeout(30)
    class SlicesFilledFromChannels {

        private static final int HALF = 32;

        /** A channel whose read fills the destination with one byte value, after an optional hand-shake. */
        private static final class FillingChannel extends SingleBufferChannel {
            final byte value;
            final CountDownLatch gotView;
            final CountDownLatch mayWrite;
            volatile ByteBuffer seen;

            FillingChannel(byte value, CountDownLatch gotView, CountDownLatch mayWrite) {
                this.value = value;
                this.gotView = gotView;
                this.mayWrite = mayWrite;
            }

            @Override
            public int read(ByteBuffer dst) {
                seen = dst;
                if (gotView != null) {
                    gotView.countDown();
                }
                if (mayWrite != null) {
                    try {
                        if (!mayWrite.await(10, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("not released");
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                }
                int n = dst.remaining();
                for (int i = 0; i < n; i++) {
                    dst.put(value);
                }
                return n;
            }
        }

        @ParameterizedTest
        @ValueSource(booleans = {true, false})
        void slicesFilledFromChannelsOnTwoThreadsKeepTheirOwnBytes(boolean nativeAccess) throws Exception {
            SlabwiseAllocator allocator = nativeAccess ? SlabwiseContractFixture.ALLOCATOR : SlabwiseContractFixture.NO_ADDRESS;
            ByteBuf parent = allocator.directBuffer(2 * HALF);
            ExecutorService executor = Executors.newSingleThreadExecutor();
            try {
                parent.setZero(0, 2 * HALF);
                ByteBuf sliceA = parent.slice(0, HALF);
                ByteBuf sliceB = parent.slice(HALF, HALF);
                CountDownLatch aHasView = new CountDownLatch(1);
                CountDownLatch bDone = new CountDownLatch(1);
                FillingChannel channelA = new FillingChannel((byte) 'A', aHasView, bDone);
                FillingChannel channelB = new FillingChannel((byte) 'B', null, null);

                Future<Integer> a = executor.submit(() -> sliceA.setBytes(0, channelA, HALF));
                if (!aHasView.await(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("thread A never reached its channel");
                }
                try {
                    sliceB.setBytes(0, channelB, HALF); // the other thread's slice, while A's channel holds its view
                } finally {
                    bDone.countDown();
                }
                a.get(10, TimeUnit.SECONDS);

                byte[] expected = new byte[2 * HALF];
                Arrays.fill(expected, 0, HALF, (byte) 'A');
                Arrays.fill(expected, HALF, 2 * HALF, (byte) 'B');
                byte[] actual = new byte[2 * HALF];
                parent.getBytes(0, actual);
                assertArrayEquals(expected, actual, "channel A's bytes for slice [0,32) were lost or misplaced (parent now: "
                        + new String(actual, java.nio.charset.StandardCharsets.ISO_8859_1).replace('\0', '.') + ")");
                assertNotSame(channelA.seen, channelB.seen,
                        "two derived buffers on two threads were handed the same NIO view (the parent's internal one)");
            } finally {
                executor.shutdownNow();
                parent.release();
            }
        }
    }
}
