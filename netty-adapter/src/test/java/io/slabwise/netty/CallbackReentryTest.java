package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.ByteProcessor;
import io.netty.util.IllegalReferenceCountException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Code the caller hands in runs in the middle of some accesses: an
 * {@link InputStream}'s {@code read} before {@code setBytes(int, InputStream, int)}
 * stores what it read, an {@link OutputStream}'s {@code write} between the
 * chunks of {@code getBytes(int, OutputStream, int)}, a {@code ByteProcessor}
 * between the bytes of {@code forEachByte}. When that code releases the buffer
 * or shrinks it (moving it), the rest of the access must throw
 * {@link IllegalReferenceCountException} or {@link IndexOutOfBoundsException},
 * as any access after a release or past the capacity does, and never store
 * into the buffers that took the memory, nor hand their bytes to the stream or
 * processor. Netty's pooled buffers check only once, on entry, and do both.
 */
@Timeout(60)
class CallbackReentryTest {

    private static final int SIZE = 16 * 1024;
    private static final int SHRUNK = 16;
    private static final byte PATTERN = 0x5A;

    static Stream<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        for (boolean nativeAccess : new boolean[] {true, false}) {
            for (String view : List.of("buffer", "slice", "duplicate")) {
                for (boolean release : new boolean[] {true, false}) {
                    for (String access : List.of("setBytes(InputStream)", "getBytes(OutputStream)", "forEachByte",
                            "forEachByteDesc", "forEachByte(readable)", "forEachByteDesc(readable)")) {
                        cases.add(Arguments.of(access, view, release, nativeAccess));
                    }
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} on a {1}, release {2}, native access {3}")
    @MethodSource("cases")
    void aCallbackThatReleasesOrShrinksTheBufferStopsTheAccess(String access, String view, boolean release,
                                                               boolean nativeAccess) {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1)
                .nativeAccess(nativeAccess).build();
        try {
            ByteBuf buf = allocator.directBuffer(SIZE).writeZero(SIZE);
            ByteBuf target = switch (view) {
                case "slice" -> buf.slice(0, SIZE);
                case "duplicate" -> buf.duplicate();
                default -> buf;
            };
            List<ByteBuf> victims = new ArrayList<>();
            int[] victimBytesSeen = {0};
            boolean[] done = {false};
            // released, the memory goes back and the next buffers of its size take it; shrunk, the buffer
            // moves to a 16-byte slot and the slots after it go to the next 16-byte buffers
            Runnable hostile = () -> {
                if (done[0]) {
                    return;
                }
                done[0] = true;
                if (release) {
                    buf.release();
                    victims.addAll(filled(allocator, SIZE, 8));
                } else {
                    buf.capacity(SHRUNK);
                    victims.addAll(filled(allocator, SHRUNK, 2 * SIZE / SHRUNK));
                }
            };
            Class<? extends RuntimeException> expected = release
                    ? IllegalReferenceCountException.class : IndexOutOfBoundsException.class;
            assertThrows(expected, () -> {
                switch (access) {
                    case "setBytes(InputStream)" -> target.setBytes(0, new InputStream() {
                        @Override
                        public int read() {
                            throw new UnsupportedOperationException();
                        }

                        @Override
                        public int read(byte[] b, int off, int len) {
                            hostile.run();
                            Arrays.fill(b, off, off + len, (byte) 1);
                            return len;
                        }
                    }, SIZE / 2);
                    case "getBytes(OutputStream)" -> target.getBytes(0, new OutputStream() {
                        @Override
                        public void write(int b) throws IOException {
                            throw new UnsupportedOperationException();
                        }

                        @Override
                        public void write(byte[] b, int off, int len) {
                            hostile.run();
                            victimBytesSeen[0] += count(b, off, len);
                        }
                    }, SIZE);
                    case "forEachByte" -> target.forEachByte(0, SIZE, b -> see(b, hostile, victimBytesSeen));
                    case "forEachByteDesc" -> target.forEachByteDesc(0, SIZE, b -> see(b, hostile, victimBytesSeen));
                    case "forEachByte(readable)" -> target.forEachByte(b -> see(b, hostile, victimBytesSeen));
                    case "forEachByteDesc(readable)" -> target.forEachByteDesc(b -> see(b, hostile, victimBytesSeen));
                    default -> throw new AssertionError(access);
                }
            });
            assertEquals(0, victimBytesSeen[0], "bytes of other buffers handed to the callback");
            for (int i = 0; i < victims.size(); i++) {
                ByteBuf victim = victims.get(i);
                assertEquals(victim.capacity(), count(victim), "victim " + i + " was overwritten");
                victim.release();
            }
            if (buf.refCnt() > 0) {
                buf.release();
            }
            assertEquals(0, allocator.stats().liveAllocations(), allocator.stats()::report);
        } finally {
            allocator.close();
        }
    }

    private static boolean see(byte b, Runnable hostile, int[] victimBytesSeen) {
        hostile.run();
        if (b == PATTERN) {
            victimBytesSeen[0]++;
        }
        return true;
    }

    private static List<ByteBuf> filled(SlabwiseAllocator allocator, int size, int count) {
        byte[] pattern = new byte[size];
        Arrays.fill(pattern, PATTERN);
        List<ByteBuf> buffers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            buffers.add(allocator.directBuffer(size).writeBytes(pattern));
        }
        return buffers;
    }

    private static int count(byte[] bytes, int off, int len) {
        int n = 0;
        for (int i = off; i < off + len; i++) {
            n += bytes[i] == PATTERN ? 1 : 0;
        }
        return n;
    }

    private static int count(ByteBuf buf) {
        int n = 0;
        for (int i = 0; i < buf.capacity(); i++) {
            n += buf.getByte(i) == PATTERN ? 1 : 0;
        }
        return n;
    }

    /**
     * The walks read eight bytes at a time: for every length from 0 to 40, start, stop position and
     * direction (seeded), they visit the same bytes in the same order and stop at the same index as the
     * walks of a Netty heap buffer with the same content, on both access paths.
     */
    @Test
    void walksVisitEveryByteInOrderAsNettysBuffersDo() {
        Random random = new Random(42);
        for (boolean nativeAccess : new boolean[] {true, false}) {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().nativeAccess(nativeAccess).build();
            try {
                for (int length = 0; length <= 40; length++) {
                    byte[] content = new byte[length + 5];
                    random.nextBytes(content);
                    ByteBuf ours = allocator.directBuffer(content.length).writeBytes(content);
                    ByteBuf theirs = Unpooled.wrappedBuffer(content);
                    try {
                        for (int trial = 0; trial < 20; trial++) {
                            int start = random.nextInt(content.length - length + 1);
                            int stopAfter = random.nextInt(length + 2); // past the end: never stops
                            for (boolean descending : new boolean[] {false, true}) {
                                List<Byte> seenOurs = new ArrayList<>();
                                List<Byte> seenTheirs = new ArrayList<>();
                                int stopOurs = walk(ours, start, length, descending, stopAfter, seenOurs);
                                int stopTheirs = walk(theirs, start, length, descending, stopAfter, seenTheirs);
                                String what = (descending ? "forEachByteDesc(" : "forEachByte(") + start + ", "
                                        + length + "), stop after " + stopAfter + ", native access " + nativeAccess;
                                assertEquals(stopTheirs, stopOurs, what);
                                assertEquals(seenTheirs, seenOurs, what);
                            }
                        }
                    } finally {
                        ours.release();
                    }
                }
            } finally {
                allocator.close();
            }
        }
    }

    /** One walk that records the bytes it is handed and stops at the {@code stopAfter}-th. */
    private static int walk(ByteBuf buf, int start, int length, boolean descending, int stopAfter, List<Byte> seen) {
        ByteProcessor processor = b -> {
            seen.add(b);
            return seen.size() < stopAfter;
        };
        return descending ? buf.forEachByteDesc(start, length, processor) : buf.forEachByte(start, length, processor);
    }
}
