package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Slices and duplicates of a buffer whose capacity shrank after they were
 * taken. Shrinking moves the parent to a smaller allocation; the old memory
 * goes back to the pool and the memory right after the new allocation belongs
 * to other buffers. A derived buffer must then be bounds-checked against the
 * parent's current capacity and throw {@link IndexOutOfBoundsException}, as
 * Slabwise promises that no buffer ever reaches another buffer's memory.
 * Netty's own derived buffers check only their own window and would write
 * through the parent's unchecked setters into the neighbours.
 *
 * <p>Each case runs with native access (where the JVM has it) and without.
 * Deriving again from such a buffer is checked against the parent as Netty
 * checks it, on Netty's pooled and unpooled buffers as well as ours.
 */
@Timeout(60)
class DerivedBufferBoundsTest {

    private static final int PARENT = 64 * 1024;
    private static final int SHRUNK = 16;
    private static final int VICTIMS = 64;
    private static final byte PATTERN = 0x5A;

    /** A parent shrunk under its derived buffers, and the buffers allocated right after it, full of a pattern. */
    private record Shrunk(SlabwiseAllocator allocator, ByteBuf parent, Map<String, ByteBuf> derived, List<ByteBuf> victims) {

        @SuppressWarnings("deprecation") // ByteBuf.order(ByteOrder): how Netty 4.1 users get little-endian views
        static Shrunk make(boolean nativeAccess) {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1)
                    .nativeAccess(nativeAccess).build();
            ByteBuf parent = allocator.directBuffer(PARENT);
            Map<String, ByteBuf> derived = new LinkedHashMap<>();
            derived.put("slice", parent.slice(0, PARENT));
            derived.put("slice at 8", parent.slice(8, PARENT - 8));
            derived.put("slice of a slice", parent.slice(0, PARENT).slice(4, 8192));
            derived.put("slice of a duplicate", parent.duplicate().slice(0, PARENT));
            derived.put("duplicate of a slice", parent.slice(0, PARENT).duplicate());
            derived.put("retained slice", parent.retainedSlice(0, PARENT));
            derived.put("read slice", parent.writerIndex(PARENT).readSlice(PARENT));
            derived.put("little-endian slice", parent.order(ByteOrder.LITTLE_ENDIAN).slice(0, PARENT));
            derived.put("slice of a read-only view", parent.asReadOnly().slice(0, PARENT));
            parent.capacity(SHRUNK);
            assertEquals(SHRUNK, parent.capacity());
            parent.setZero(0, SHRUNK);
            List<ByteBuf> victims = new ArrayList<>();
            for (int i = 0; i < VICTIMS; i++) {
                ByteBuf victim = allocator.directBuffer(SHRUNK);
                victim.writeBytes(filled(SHRUNK));
                victims.add(victim);
            }
            return new Shrunk(allocator, parent, derived, victims);
        }

        /** Fails unless every victim still holds the pattern; then releases everything and checks the pool is empty. */
        void assertVictimsIntactAndRelease() {
            for (int i = 0; i < victims.size(); i++) {
                ByteBuf victim = victims.get(i);
                for (int j = 0; j < SHRUNK; j++) {
                    assertEquals(PATTERN, victim.getByte(j), "victim " + i + " byte " + j + " was overwritten");
                }
                victim.release();
            }
            parent.release(parent.refCnt());
            assertEquals(0, allocator.stats().liveAllocations(), allocator.stats()::report);
        }
    }

    private static byte[] filled(int n) {
        byte[] bytes = new byte[n];
        Arrays.fill(bytes, PATTERN);
        return bytes;
    }

    /**
     * Runs each action on each derived buffer (read-only ones only for reads);
     * returns the ones that did not throw {@link IndexOutOfBoundsException}.
     */
    private static List<String> notRejected(Shrunk shrunk, Map<String, Consumer<ByteBuf>> actions, boolean writes) {
        List<String> accepted = new ArrayList<>();
        for (Map.Entry<String, ByteBuf> derived : shrunk.derived().entrySet()) {
            ByteBuf buf = derived.getValue();
            if (writes && buf.isReadOnly()) {
                continue; // a read-only view refuses writes before any bounds check
            }
            for (Map.Entry<String, Consumer<ByteBuf>> action : actions.entrySet()) {
                try {
                    action.getValue().accept(buf);
                    accepted.add(action.getKey() + " on " + derived.getKey());
                } catch (IndexOutOfBoundsException expected) {
                    // past the parent's current capacity
                }
            }
        }
        return accepted;
    }

    @ParameterizedTest(name = "native access {0}")
    @ValueSource(booleans = {true, false})
    void writesPastTheShrunkParentAreRejected(boolean nativeAccess) {
        Shrunk shrunk = Shrunk.make(nativeAccess);
        Map<String, Consumer<ByteBuf>> writes = new LinkedHashMap<>();
        writes.put("setByte", b -> b.setByte(SHRUNK + 4, 1));
        writes.put("setShort", b -> b.setShort(SHRUNK, 1));
        writes.put("setMedium", b -> b.setMedium(SHRUNK, 1));
        writes.put("setInt", b -> b.setInt(100, -1));
        writes.put("setLong", b -> b.setLong(SHRUNK, -1L));
        writes.put("setLongLE", b -> b.setLongLE(SHRUNK + 8, -1L));
        writes.put("setLong across the end", b -> b.setLong(SHRUNK - 4, -1L));
        writes.put("setZero 4 KiB", b -> b.setZero(0, 4096));
        writes.put("setBytes(array) 4 KiB", b -> b.setBytes(0, new byte[4096]));
        writes.put("setBytes(ByteBuffer) 4 KiB", b -> b.setBytes(0, ByteBuffer.allocateDirect(4096)));
        writes.put("setBytes(ByteBuf) 4 KiB", b -> b.setBytes(0, Unpooled.wrappedBuffer(new byte[4096])));
        writes.put("setCharSequence 4 KiB", b -> b.setCharSequence(0, "x".repeat(4096), StandardCharsets.US_ASCII));
        writes.put("setLong loop over 4 KiB", b -> {
            for (int i = 0; i < 4096; i += 8) {
                b.setLong(i, -1L);
            }
        });
        writes.put("writeLong loop over 4 KiB", b -> {
            b.clear();
            for (int i = 0; i < 512; i++) {
                b.writeLong(-1L);
            }
        });
        writes.put("writeBytes 4 KiB", b -> b.clear().writeBytes(new byte[4096]));
        List<String> accepted = notRejected(shrunk, writes, true);
        assertEquals(List.of(), accepted, "writes past the parent's capacity that were let through");
        shrunk.assertVictimsIntactAndRelease();
    }

    @ParameterizedTest(name = "native access {0}")
    @ValueSource(booleans = {true, false})
    void readsPastTheShrunkParentAreRejected(boolean nativeAccess) {
        Shrunk shrunk = Shrunk.make(nativeAccess);
        Map<String, Consumer<ByteBuf>> reads = new LinkedHashMap<>();
        reads.put("getByte", b -> b.getByte(SHRUNK + 4));
        reads.put("getInt", b -> b.getInt(100));
        reads.put("getLong", b -> b.getLong(SHRUNK));
        reads.put("getBytes(array) 4 KiB", b -> b.getBytes(0, new byte[4096]));
        reads.put("getBytes(ByteBuffer) 4 KiB", b -> b.getBytes(0, ByteBuffer.allocate(4096)));
        reads.put("forEachByte over 4 KiB", b -> b.forEachByte(0, 4096, x -> true));
        reads.put("indexOf over 4 KiB", b -> b.indexOf(0, 4096, (byte) 7));
        reads.put("nioBuffer 4 KiB", b -> b.nioBuffer(0, 4096));
        reads.put("internalNioBuffer 4 KiB", b -> b.internalNioBuffer(0, 4096));
        reads.put("copy 4 KiB", b -> b.copy(0, 4096).release());
        reads.put("toString 4 KiB", b -> b.toString(0, 4096, StandardCharsets.ISO_8859_1));
        reads.put("ByteBufUtil.getBytes 4 KiB", b -> ByteBufUtil.getBytes(b, 0, 4096));
        reads.put("copied into a Netty direct buffer", b -> {
            ByteBuf other = Unpooled.directBuffer(4096);
            try {
                other.writeBytes(b, 0, 4096);
            } finally {
                other.release();
            }
        });
        reads.put("memoryAddress", b -> {
            if (b.hasMemoryAddress()) {
                b.memoryAddress(); // callers copy capacity() bytes from it
            } else {
                assertThrows(UnsupportedOperationException.class, b::memoryAddress);
                throw new IndexOutOfBoundsException("no address to check");
            }
        });
        List<String> accepted = notRejected(shrunk, reads, false);
        assertEquals(List.of(), accepted, "reads past the parent's capacity that were let through");
        shrunk.assertVictimsIntactAndRelease();
    }

    /** Within the parent's new capacity a derived buffer still reads and writes the parent's bytes. */
    @ParameterizedTest(name = "native access {0}")
    @ValueSource(booleans = {true, false})
    void accessWithinTheShrunkParentStillWorks(boolean nativeAccess) {
        Shrunk shrunk = Shrunk.make(nativeAccess);
        ByteBuf parent = shrunk.parent();
        ByteBuf slice = shrunk.derived().get("slice");
        slice.setLong(0, 0x0102030405060708L);
        slice.setLong(SHRUNK - 8, -2L);
        assertEquals(0x0102030405060708L, parent.getLong(0));
        assertEquals(-2L, parent.getLong(SHRUNK - 8));
        assertEquals(-2L, shrunk.derived().get("slice at 8").getLong(0), "parent bytes 8 to 16");
        assertEquals(0x05, shrunk.derived().get("slice of a slice").getByte(0), "parent byte 4");
        byte[] back = new byte[SHRUNK];
        slice.getBytes(0, back);
        assertEquals(0x01, back[0]);
        assertEquals(SHRUNK, slice.slice(0, SHRUNK).readableBytes());
        if (slice.hasMemoryAddress()) {
            assertEquals(parent.memoryAddress(), slice.slice(0, SHRUNK).memoryAddress());
        }
        shrunk.assertVictimsIntactAndRelease();
    }

    /** A parent that grows and moves takes its slices along: they read and write the new memory. */
    @ParameterizedTest(name = "native access {0}")
    @ValueSource(booleans = {true, false})
    void slicesFollowAParentThatGrows(boolean nativeAccess) {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1)
                .nativeAccess(nativeAccess).build();
        ByteBuf parent = allocator.directBuffer(64);
        ByteBuf slice = parent.slice(8, 56);
        parent.capacity(100_000);
        slice.setLong(0, 7L);
        assertEquals(7L, parent.getLong(8));
        parent.setInt(60, 9);
        assertEquals(9, slice.getInt(52));
        parent.release();
        assertEquals(0, allocator.stats().liveAllocations());
    }

    /** Shrinking in place (within the size class) stops derived buffers at the new capacity too. */
    @ParameterizedTest(name = "native access {0}")
    @ValueSource(booleans = {true, false})
    void slicesStopAtTheCapacityOfAParentShrunkInPlace(boolean nativeAccess) {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1)
                .nativeAccess(nativeAccess).build();
        ByteBuf parent = allocator.directBuffer(100);
        ByteBuf slice = parent.slice(0, 100);
        ByteBuf duplicate = parent.duplicate();
        parent.capacity(90);
        slice.setByte(89, 1);
        assertEquals(1, parent.getByte(89));
        assertThrows(IndexOutOfBoundsException.class, () -> slice.setByte(90, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> slice.getInt(88));
        assertThrows(IndexOutOfBoundsException.class, () -> duplicate.setByte(95, 1));
        assertTrue(parent.release());
        assertEquals(0, allocator.stats().liveAllocations());
    }

    /**
     * A slice or duplicate taken before its parent shrank derives again only
     * within the parent's current capacity, as Netty's pooled and unpooled
     * buffers do: {@code slice().duplicate()}, {@code slice().slice()} and
     * the rest throw {@link IndexOutOfBoundsException} when the new window
     * reaches past the parent, and work inside it. (Netty's pooled buffers
     * skip the check in one case: a retained slice or duplicate derived from
     * a retained one, which has a reference count of its own there.)
     */
    @ParameterizedTest(name = "{0}, parent of {1} bytes")
    @MethodSource("shrunkParents")
    void derivingAgainPastAShrunkParentThrowsAsInNetty(String kind, int parentCapacity, ByteBufAllocator allocator) {
        ByteBuf parent = allocator.directBuffer(parentCapacity);
        parent.writerIndex(parentCapacity).readerIndex(2);
        ByteBuf slice = parent.slice(0, 32);
        ByteBuf sliceAt8 = parent.slice(8, 24);
        ByteBuf duplicate = parent.duplicate();
        parent.capacity(SHRUNK);
        parent.setZero(0, SHRUNK).setByte(4, 7).setByte(9, 8);

        Map<String, Runnable> derivations = new LinkedHashMap<>();
        derivations.put("slice.duplicate()", () -> slice.duplicate());
        derivations.put("(slice at 8).duplicate()", () -> sliceAt8.duplicate());
        derivations.put("slice.retainedDuplicate()", () -> slice.retainedDuplicate().release());
        derivations.put("slice.slice()", () -> slice.slice());
        derivations.put("slice.slice(20, 8)", () -> slice.slice(20, 8));
        derivations.put("slice.retainedSlice(20, 8)", () -> slice.retainedSlice(20, 8).release());
        derivations.put("slice.readRetainedSlice(30)", () -> slice.readerIndex(0).readRetainedSlice(30).release());
        derivations.put("(slice at 8).slice(10, 4)", () -> sliceAt8.slice(10, 4));
        derivations.put("duplicate.duplicate()", () -> duplicate.duplicate());
        derivations.put("duplicate.slice()", () -> duplicate.slice());
        derivations.put("duplicate.slice(20, 8)", () -> duplicate.slice(20, 8));
        derivations.put("duplicate.retainedSlice(20, 8)", () -> duplicate.retainedSlice(20, 8).release());
        List<String> accepted = new ArrayList<>();
        for (Map.Entry<String, Runnable> derivation : derivations.entrySet()) {
            try {
                derivation.getValue().run();
                accepted.add(derivation.getKey());
            } catch (IndexOutOfBoundsException expected) {
                // the new window reaches past the parent's capacity
            }
        }
        assertEquals(List.of(), accepted, kind + ": derived buffers made past the parent's capacity");

        assertEquals(7, slice.slice(0, 8).getByte(4), "inside the parent: parent byte 4");
        assertEquals(8, sliceAt8.slice(0, 4).getByte(1), "inside the parent: parent byte 9");
        assertEquals(7, duplicate.slice(0, 8).getByte(4));
        assertEquals(1, parent.refCnt(), "a derivation that threw retained nothing");
        assertTrue(parent.release());
        if (allocator instanceof SlabwiseAllocator) {
            assertEquals(0, ((SlabwiseAllocator) allocator).stats().liveAllocations());
        }
    }

    /** Netty's allocators and ours (each new, since JUnit closes it after its case), with a parent that shrinks a little or a lot. */
    static Stream<Arguments> shrunkParents() {
        Map<String, Supplier<ByteBufAllocator>> allocators = new LinkedHashMap<>();
        allocators.put("Netty pooled", () -> new PooledByteBufAllocator(true));
        allocators.put("Netty unpooled", () -> new UnpooledByteBufAllocator(true));
        allocators.put("Slabwise", () -> SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).build());
        allocators.put("Slabwise without native access",
                () -> SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).nativeAccess(false).build());
        return allocators.entrySet().stream().flatMap(a -> Stream.of(64, PARENT).map(
                capacity -> Arguments.of(a.getKey(), capacity, a.getValue().get())));
    }

    /**
     * A slice taken before its parent shrank (and moved to a smaller allocation)
     * filled from a channel: like every other write, it must be checked against
     * the parent's current capacity and throw {@link IndexOutOfBoundsException},
     * never write into the buffers that now lie after the parent's new memory.
     * Checked for a general-pool parent and for a sequential one (which moves
     * into its category's general pool when it shrinks to nothing).
     */
    @Nested
    @Timeout(60)
    class ChannelReads {

        private static final int VICTIM = 16;
        private static final int WRITE = 4096;

        /** A channel that fills whatever it is handed with ones. */
        private static final class OnesChannel extends SingleBufferChannel {
            @Override
            public int read(ByteBuffer dst) {
                int n = dst.remaining();
                while (dst.hasRemaining()) {
                    dst.put((byte) 1);
                }
                return n;
            }
        }

        @ParameterizedTest(name = "{0} parent, native access {1}")
        @CsvSource({"general, true", "general, false", "sequential, true", "sequential, false"})
        void channelReadsIntoASlicePastTheShrunkParentAreRejected(String kind, boolean nativeAccess) throws IOException {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1)
                    .nativeAccess(nativeAccess).build();
            Path file = Files.createTempFile("slabwise-derived-read", ".bin");
            try (FileChannel fileChannel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                fileChannel.write(ByteBuffer.wrap(new byte[WRITE]), 0);
                boolean sequential = kind.equals("sequential");
                ByteBuf parent = sequential
                        ? allocator.sequential("log_cache").allocate(PARENT)
                        : allocator.directBuffer(PARENT);
                Map<String, ByteBuf> derived = new LinkedHashMap<>();
                derived.put("slice", parent.slice(0, PARENT));
                derived.put("retained slice", parent.retainedSlice(0, PARENT));
                // a sequential buffer shrunk to nothing moves to the general pool; a general one to a 16-byte slot
                parent.capacity(sequential ? 0 : VICTIM);
                List<ByteBuf> victims = new ArrayList<>();
                byte[] pattern = new byte[VICTIM];
                Arrays.fill(pattern, PATTERN);
                for (int i = 0; i < VICTIMS; i++) {
                    ByteBuf victim = sequential ? allocator.forCategory("log_cache").directBuffer(VICTIM)
                            : allocator.directBuffer(VICTIM);
                    victims.add(victim.writeBytes(pattern));
                }

                Map<String, Consumer<ByteBuf>> reads = new LinkedHashMap<>();
                reads.put("setBytes(ScatteringByteChannel)", b -> {
                    try {
                        b.setBytes(0, new OnesChannel(), WRITE);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
                reads.put("writeBytes(ScatteringByteChannel)", b -> {
                    try {
                        b.clear().writeBytes(new OnesChannel(), WRITE);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
                reads.put("setBytes(FileChannel)", b -> {
                    try {
                        b.setBytes(0, fileChannel, 0L, WRITE);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
                List<String> accepted = new ArrayList<>();
                for (Map.Entry<String, ByteBuf> d : derived.entrySet()) {
                    for (Map.Entry<String, Consumer<ByteBuf>> read : reads.entrySet()) {
                        try {
                            read.getValue().accept(d.getValue());
                            accepted.add(read.getKey() + " on " + d.getKey());
                        } catch (IndexOutOfBoundsException expected) {
                            // past the parent's current capacity
                        }
                    }
                }
                for (int i = 0; i < VICTIMS; i++) {
                    for (int j = 0; j < VICTIM; j++) {
                        assertEquals(PATTERN, victims.get(i).getByte(j), "victim " + i + " byte " + j + " was overwritten");
                    }
                    victims.get(i).release();
                }
                assertEquals(List.of(), accepted, "channel reads past the parent's capacity that were let through");
                parent.release(parent.refCnt());
                assertEquals(0, allocator.stats().liveAllocations(), allocator.stats()::report);
            } finally {
                Files.deleteIfExists(file);
                allocator.close();
            }
        }
    }
}
