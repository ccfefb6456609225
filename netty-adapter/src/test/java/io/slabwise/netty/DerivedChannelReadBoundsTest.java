package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A slice taken before its parent shrank (and moved to a smaller allocation)
 * filled from a channel: like every other write, it must be checked against
 * the parent's current capacity and throw {@link IndexOutOfBoundsException},
 * never write into the buffers that now lie after the parent's new memory.
 * Checked for a general-pool parent and for a sequential one (which moves
 * into its category's general pool when it shrinks to nothing).
 */
@Timeout(60)
class DerivedChannelReadBoundsTest {

    private static final int PARENT = 64 * 1024;
    private static final int VICTIM = 16;
    private static final int VICTIMS = 64;
    private static final int WRITE = 4096;
    private static final byte PATTERN = 0x5A;

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
