package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.slabwise.CompactionStats;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The builder's {@code memoryAddress(false)}: buffers without native access
 * then report no address, whatever Netty's own buffers do, from every path
 * that makes a buffer (the general pool, its views, recycled objects, growth,
 * sequential allocators, block pools, relocation) and through their slices
 * and duplicates; buffers with native access keep theirs. The allocators
 * here turn native access off with the package-private {@code nativeAccess(false)},
 * so the buffers without it are exercised on every JVM; on JDK 24 and later
 * with Netty 4.2 they would report an address without the option.
 */
@Timeout(60)
class MemoryAddressOptionTest {

    private static final int CHUNK = 1 << 20;

    private final SlabwiseAllocator allocator = noAddress().build();
    private final List<ByteBuf> held = new ArrayList<>();

    private static SlabwiseAllocator.Builder noAddress() {
        return SlabwiseAllocator.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1)
                .nativeAccess(false).memoryAddress(false);
    }

    @AfterEach
    void releaseAndClose() {
        held.forEach(ByteBuf::release);
        assertEquals(0, allocator.stats().liveAllocations(), allocator.stats()::report);
        allocator.close();
    }

    private ByteBuf hold(ByteBuf buf) {
        held.add(buf);
        return buf;
    }

    /** The buffer under the leak detector's wrappers. */
    private static ByteBuf root(ByteBuf buf) {
        ByteBuf b = buf;
        while (!(b instanceof SlabwiseDirectByteBuf)) {
            b = b.unwrap();
        }
        return b;
    }

    /**
     * No address from the buffer, nor from its slices and duplicates (retained
     * ones too), and its bytes still readable and writable.
     */
    private static void assertNoAddress(ByteBuf buf) {
        assertInstanceOf(SlabwiseNoAddressDirectByteBuf.class, root(buf), "the buffer class that reports none");
        assertFalse(buf.hasMemoryAddress(), buf::toString);
        assertThrows(UnsupportedOperationException.class, buf::memoryAddress, buf::toString);
        int half = buf.capacity() / 2;
        for (ByteBuf derived : List.of(buf.slice(1, half), buf.duplicate(), buf.slice(1, half).duplicate())) {
            assertFalse(derived.hasMemoryAddress(), derived::toString);
            assertThrows(UnsupportedOperationException.class, derived::memoryAddress, derived::toString);
        }
        for (ByteBuf retained : List.of(buf.retainedSlice(1, half), buf.retainedDuplicate())) {
            try {
                assertFalse(retained.hasMemoryAddress(), retained::toString);
                assertThrows(UnsupportedOperationException.class, retained::memoryAddress, retained::toString);
            } finally {
                retained.release();
            }
        }
        if (half >= 8) {
            buf.setLong(0, 0x0102030405060708L);
            assertEquals(0x0102030405060708L, buf.getLong(0));
            assertEquals(0x02030405060708L, buf.slice(1, half).getLong(0) >>> 8);
        }
    }

    @Test
    void buffersOfTheGeneralPoolAndItsViewsReportNone() {
        assertNoAddress(hold(allocator.directBuffer(64)));
        assertNoAddress(hold(allocator.ioBuffer(64)));
        assertNoAddress(hold(allocator.buffer(64))); // direct: preferDirect by default
        assertNoAddress(hold(allocator.tryDirectBuffer(64)));
        assertNoAddress(hold(allocator.directBuffer(300_000))); // a dedicated region
        assertNoAddress(hold(allocator.forCategory("network").directBuffer(64)));
        assertNoAddress(hold(allocator.forCategory("network").ioBuffer(4096)));
    }

    @Test
    void aBufferThatGrewOrShrankStillReportsNone() {
        ByteBuf buf = hold(allocator.directBuffer(64));
        buf.capacity(100_000); // to a new allocation
        assertNoAddress(buf);
        buf.capacity(16); // in place
        assertNoAddress(buf);
    }

    @Test
    void recycledBufferObjectsReportNone() {
        SlabwiseAllocator recycling = noAddress().recycleBuffers(true).build();
        try {
            ByteBuf first = recycling.directBuffer(64); // a new object for the holder
            assertNoAddress(first);
            first.release();
            ByteBuf second = recycling.directBuffer(64); // the same object again, unless the leak detector took one
            try {
                assertNoAddress(second);
            } finally {
                second.release();
            }
        } finally {
            recycling.close();
        }
    }

    @Test
    void sequentialBuffersReportNone() {
        SequentialByteBufAllocator log = allocator.sequential("log_cache", 1, 64 * 1024);
        assertNoAddress(hold(log.allocate(100)));
        assertNoAddress(hold(log.tryAllocate(100)));
        ByteBuf grown = hold(log.allocate(100));
        grown.capacity(200_000); // past the largest request: to the category's general pool
        assertNoAddress(grown);
    }

    @Test
    void blocksOfAPayloadReportNone() {
        BlockByteBufAllocator blocks = allocator.blocks("block_cache", 16 * 1024, 1);
        ByteBuf oneBlock = hold(blocks.allocate(16 * 1024));
        CompositeByteBuf single = compositeOf(oneBlock);
        assertEquals(1, single.numComponents());
        assertFalse(oneBlock.hasMemoryAddress(), "a composite of one part answers as its part");
        assertThrows(UnsupportedOperationException.class, oneBlock::memoryAddress);
        ByteBuf parts = hold(blocks.allocate(16 * 1024 + 3000));
        CompositeByteBuf several = compositeOf(parts);
        assertTrue(several.numComponents() > 1, several::toString);
        for (CompositeByteBuf composite : List.of(single, several)) {
            for (int i = 0; i < composite.numComponents(); i++) {
                assertNoAddress(composite.component(i));
            }
        }
    }

    private static CompositeByteBuf compositeOf(ByteBuf buf) {
        ByteBuf b = buf;
        while (!(b instanceof CompositeByteBuf)) {
            b = b.unwrap();
        }
        return (CompositeByteBuf) b;
    }

    /** A relocated entry's copy is made by the allocator too: of the same class. */
    @Test
    void relocatedCopiesReportNone() {
        ByteBufAllocator cache = allocator.forCategory("cache");
        int entry = 16 * 1024;
        List<ByteBuf> all = new ArrayList<>();
        for (int i = 0; i < 2 * CHUNK / entry; i++) {
            all.add(cache.directBuffer(entry));
        }
        List<ByteBuf> entries = new ArrayList<>();
        Random random = new Random(3);
        List<Long> checksums = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            if (i % 8 == 0) {
                checksums.add(BufferChecksums.fill(all.get(i), random));
                entries.add(all.get(i));
            } else {
                all.get(i).release();
            }
        }
        allocator.trim();
        allocator.setRelocator("cache", evacuation -> {
            for (int i = 0; i < entries.size() && evacuation.budgetLeft(); i++) {
                ByteBuf old = entries.get(i);
                if (evacuation.contains(old)) {
                    ByteBuf moved = evacuation.move(old);
                    if (moved != null) {
                        entries.set(i, moved);
                        old.release();
                    }
                }
            }
        });
        CompactionStats done = allocator.compact();
        held.addAll(entries);
        assertTrue(done.movedEntries() > 0, done::toString);
        for (int i = 0; i < entries.size(); i++) {
            assertEquals(checksums.get(i), BufferChecksums.crc(entries.get(i)), "entry " + i);
            assertNoAddress(entries.get(i));
        }
    }

    @Test
    void aReleasedBufferSaysItIsReleased() {
        ByteBuf buf = allocator.directBuffer(64);
        buf.release();
        assertFalse(buf.hasMemoryAddress());
        assertThrows(IllegalReferenceCountException.class, buf::memoryAddress);
    }

    /**
     * Where native access is available (Netty with {@code Unsafe}), buffers
     * keep their address with the option off: Java's reads and writes use it.
     */
    @Test
    void buffersWithNativeAccessKeepTheirAddress() {
        SlabwiseAllocator defaults = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(1).memoryAddress(false).build();
        try {
            ByteBuf buf = defaults.directBuffer(64);
            try {
                assertEquals(NativeAccess.AVAILABLE, buf.hasMemoryAddress());
                assertEquals(NativeAccess.AVAILABLE, buf.slice(8, 8).hasMemoryAddress());
                if (NativeAccess.AVAILABLE) {
                    long address = ((SlabwiseDirectByteBuf) root(buf)).allocation().address();
                    assertEquals(address, buf.memoryAddress());
                    assertEquals(address + 8, buf.slice(8, 8).memoryAddress());
                } else {
                    assertNoAddress(buf);
                }
            } finally {
                buf.release();
            }
        } finally {
            defaults.close();
        }
    }

    /**
     * {@code slabwise.memoryAddress=false} is read when the builder is made,
     * and a builder method called afterwards overrides it; without it a
     * buffer without native access reports its address where Netty's own
     * buffers do, as before the option.
     */
    @Test
    void theSystemPropertyIsReadWhenTheBuilderIsMade() {
        SlabwiseAllocator.Builder fromProperty;
        SlabwiseAllocator.Builder overridden;
        System.setProperty("slabwise.memoryAddress", "false");
        try {
            fromProperty = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(1).nativeAccess(false);
            overridden = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(1).nativeAccess(false).memoryAddress(true);
        } finally {
            System.clearProperty("slabwise.memoryAddress");
        }
        SlabwiseAllocator.Builder unset = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(1).nativeAccess(false);
        assertKind(fromProperty, DirectBufferKind.NIO_NO_ADDRESS, false);
        assertKind(overridden, DirectBufferKind.NIO, NativeAccess.ADDRESS_WITHOUT_IT);
        assertKind(unset, DirectBufferKind.NIO, NativeAccess.ADDRESS_WITHOUT_IT);
    }

    private static void assertKind(SlabwiseAllocator.Builder builder, DirectBufferKind kind, boolean address) {
        SlabwiseAllocator built = builder.build();
        try {
            assertEquals(kind, built.bufferKind());
            ByteBuf buf = built.directBuffer(64);
            try {
                assertEquals(address, buf.hasMemoryAddress(), buf::toString);
                assertEquals(address, buf.duplicate().hasMemoryAddress());
            } finally {
                buf.release();
            }
        } finally {
            built.close();
        }
    }
}
