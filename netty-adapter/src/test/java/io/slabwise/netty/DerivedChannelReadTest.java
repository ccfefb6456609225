package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;

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
@Timeout(30)
class DerivedChannelReadTest {

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
