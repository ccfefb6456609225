package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.internal.PlatformDependent;
import io.slabwise.Allocation;
import io.slabwise.ChunkSource;
import io.slabwise.NativeRegion;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The allocator's size paths, buffer kinds, exact accounting and bad-input handling, on one thread. */
@Timeout(60)
class SlabwiseAllocatorTest {

    private static final int CHUNK = 1 << 20;

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(2).build();

    @AfterEach
    void nothingLeaked() {
        PoolStats stats = allocator.stats();
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, stats.reservedBytes(), stats::report);
        assertEquals(0, stats.liveAllocations(), stats::report);
        allocator.trim();
        assertEquals(0, allocator.stats().committedBytes(), () -> allocator.stats().report());
    }

    /** Every size path: zero, small (subpage), run, class boundaries, exactly a chunk, huge. */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 15, 16, 17, 127, 128, 129, 1000, 1024, 4096, 8191, 8192, 8193, 12345, 65535, 65536,
            65537, 300_000, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17})
    void directBufferHasExactCapacityAndIsAccounted(int capacity) {
        ByteBuf buf = allocator.directBuffer(capacity);
        try {
            assertEquals(capacity, buf.capacity());
            assertTrue(buf.isDirect());
            assertEquals(Integer.MAX_VALUE, buf.maxCapacity());
            PoolStats stats = allocator.stats();
            assertEquals(capacity, stats.requestedBytes());
            assertEquals(allocator.pool().reservedSizeFor(capacity), stats.reservedBytes());
            assertTrue(stats.reservedBytes() >= Math.max(capacity, 1));
            assertTrue(stats.committedBytes() >= stats.reservedBytes());
            if (capacity > 0) {
                buf.setByte(capacity - 1, 0xa5).setByte(0, 0x5a);
                assertEquals(0x5a, buf.getUnsignedByte(0));
                assertEquals(capacity == 1 ? 0x5a : 0xa5, buf.getUnsignedByte(capacity - 1));
                assertThrows(IndexOutOfBoundsException.class, () -> buf.getByte(capacity));
            }
        } finally {
            assertTrue(buf.release());
        }
    }

    /**
     * A buffer can be written up to the size its allocation reserved without
     * moving ({@code maxFastWritableBytes}), and Netty's {@code ensureWritable}
     * grows it that far in place: the same memory, the same reserved bytes,
     * only the requested bytes change. Every size path, as above.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 15, 17, 129, 1000, 4096, 8193, 12345, 65535, 65537, 300_000, CHUNK - 1, CHUNK + 1,
            3 * CHUNK + 17})
    void aBufferGrowsInPlaceUpToWhatItsAllocationReserved(int capacity) {
        ByteBuf buf = allocator.directBuffer(capacity);
        try {
            int reserved = allocator.pool().reservedSizeFor(capacity);
            buf.writerIndex(capacity);
            assertEquals(reserved - capacity, buf.maxFastWritableBytes());
            ByteBuf inner = buf.unwrap() == null ? buf : buf.unwrap(); // past a leak detector's wrapper
            SlabwiseDirectByteBuf direct = (SlabwiseDirectByteBuf) inner;
            String before = direct.allocation().toString();
            ByteBuffer memory = direct.memory;
            int offset = direct.offset;
            buf.ensureWritable(reserved - capacity);
            assertEquals(reserved, buf.capacity());
            assertSame(memory, direct.memory, before);
            assertEquals(offset, direct.offset, before);
            PoolStats stats = allocator.stats();
            assertEquals(reserved, stats.requestedBytes());
            assertEquals(reserved, stats.reservedBytes());
            assertEquals(1, stats.liveAllocations());
            buf.writerIndex(reserved);
            assertEquals(0, buf.maxFastWritableBytes());
            buf.ensureWritable(1); // past what it reserved: it moves, as it must
            assertTrue(allocator.stats().reservedBytes() > reserved);
        } finally {
            assertTrue(buf.release());
        }
        assertEquals(0, buf.maxFastWritableBytes() - buf.writableBytes(), "released: nothing past the capacity");
    }

    /**
     * After close: new buffers of every kind are refused with a clear
     * exception, live ones stay usable, and releasing them gives the last
     * chunk back (on another thread too).
     */
    @Test
    void closeRefusesNewBuffersAndLiveOnesGiveTheirMemoryBack() throws Exception {
        SlabwiseAllocator closing = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(2).build();
        ByteBuf small = closing.directBuffer(100);
        ByteBuf slice = closing.sequential("log_cache").allocate(5000);
        ByteBuf block = closing.blocks("block_cache").allocate(CHUNK + 10);
        closing.close();
        closing.close();
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> closing.directBuffer(10));
        assertTrue(refused.getMessage().contains("closed"), refused.getMessage());
        assertThrows(IllegalStateException.class, () -> closing.forCategory("network").directBuffer(10));
        assertThrows(IllegalStateException.class, () -> closing.sequential("log_cache").allocate(10));
        assertThrows(IllegalStateException.class, () -> closing.blocks("block_cache").allocate(10));
        small.writeLong(42);
        assertEquals(42, small.readLong(), "a live buffer is still usable");
        assertTrue(small.release());
        Thread other = new Thread(() -> {
            slice.release();
            block.release();
        });
        other.start();
        other.join();
        assertEquals(0, closing.stats().committedBytes(), () -> closing.stats().report());
    }

    @Test
    void reservedStaysWithinOneEighthOfRequested() {
        for (int size = 129; size <= CHUNK; size += 977) {
            int reserved = allocator.pool().reservedSizeFor(size);
            assertTrue(reserved >= size && reserved <= size + size / 8, size + " -> " + reserved);
        }
    }

    @Test
    void heapBufferIsAHeapBufferOfTheAllocator() {
        ByteBuf heap = allocator.heapBuffer(100, 1000);
        assertFalse(heap.isDirect());
        assertTrue(heap.hasArray());
        assertEquals(100, heap.capacity());
        assertEquals(1000, heap.maxCapacity());
        assertEquals(allocator, heap.alloc());
        assertTrue(allocator.metric().usedHeapMemory() >= 100);
        heap.release();
        assertEquals(0, allocator.metric().usedHeapMemory());
        assertEquals(0, allocator.stats().requestedBytes(), "heap buffers do not use the pool");
    }

    @Test
    void ioAndDefaultBuffersAreDirect() {
        ByteBuf io = allocator.ioBuffer(512);
        ByteBuf plain = allocator.buffer(512);
        assertTrue(io.isDirect());
        assertTrue(plain.isDirect());
        assertEquals(1024, allocator.stats().requestedBytes());
        io.release();
        plain.release();
    }

    @Test
    void compositeBufferOfPooledComponents() {
        CompositeByteBuf composite = allocator.compositeDirectBuffer();
        for (int i = 0; i < 5; i++) {
            ByteBuf part = allocator.directBuffer(1000);
            part.writeZero(1000);
            composite.addComponent(true, part);
        }
        assertEquals(5000, composite.readableBytes());
        assertEquals(5000, allocator.stats().requestedBytes());
        composite.setInt(998, 0x01020304);
        assertEquals(0x01020304, composite.getInt(998));
        assertTrue(composite.release());
    }

    @Test
    void capacityGrowthMovesThroughThePoolAndKeepsContent() {
        ByteBuf buf = allocator.directBuffer(100, 100_000);
        for (int i = 0; i < 100; i++) {
            buf.writeByte(i);
        }
        buf.capacity(110); // same size class: stays in place
        assertEquals(110, allocator.stats().requestedBytes());
        buf.writeBytes(new byte[20_000]); // grows through the pool
        assertTrue(buf.capacity() >= 20_100);
        for (int i = 0; i < 100; i++) {
            assertEquals(i, buf.getByte(i));
        }
        assertEquals(buf.capacity(), allocator.stats().requestedBytes());
        buf.capacity(50);
        assertEquals(50, buf.capacity());
        assertEquals(50, buf.writerIndex());
        assertEquals(50, allocator.stats().requestedBytes());
        assertEquals(49, buf.getByte(49));
        buf.release();
    }

    @Test
    void badCapacitiesAreRejectedClearly() {
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> allocator.directBuffer(-1));
        assertTrue(negative.getMessage().contains("-1"), negative.getMessage());
        IllegalArgumentException inverted = assertThrows(IllegalArgumentException.class, () -> allocator.directBuffer(10, 5));
        assertTrue(inverted.getMessage().contains("10") && inverted.getMessage().contains("5"), inverted.getMessage());
        ByteBuf buf = allocator.directBuffer(10, 20);
        assertThrows(IllegalArgumentException.class, () -> buf.capacity(21));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.writeZero(21));
        assertEquals(10, buf.capacity());
        buf.release();
    }

    @Test
    void doubleReleaseAndUseAfterReleaseThrowWithoutTouchingTheNextBuffer() {
        ByteBuf first = allocator.directBuffer(64);
        first.writeLong(42);
        assertTrue(first.release());
        ByteBuf second = allocator.directBuffer(64); // likely the same memory, from the thread cache
        second.writeLong(7);
        assertThrows(IllegalReferenceCountException.class, first::release);
        assertThrows(IllegalReferenceCountException.class, () -> first.getLong(0));
        assertThrows(IllegalReferenceCountException.class, () -> first.setLong(0, 99));
        assertThrows(IllegalReferenceCountException.class, () -> first.writeByte(1));
        assertThrows(IllegalReferenceCountException.class, first::memoryAddress);
        assertThrows(IllegalReferenceCountException.class, () -> first.nioBuffer(0, 8));
        assertThrows(IllegalReferenceCountException.class, first::retain);
        assertEquals(7, second.getLong(0), "the next owner's bytes are untouched");
        assertEquals(1, second.refCnt());
        second.release();
    }

    @Test
    void recyclingModeReusesBufferObjectsAndStaysExact() {
        SlabwiseAllocator recycling = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(1).recycleBuffers(true).build();
        ByteBuf a = recycling.directBuffer(256);
        a.writeInt(1);
        a.markReaderIndex();
        a.readInt();
        a.release();
        ByteBuf b = recycling.directBuffer(300);
        assertEquals(0, b.readerIndex());
        assertEquals(0, b.writerIndex());
        assertEquals(300, b.capacity());
        assertEquals(1, b.refCnt());
        b.writeInt(2);
        b.resetReaderIndex();
        assertEquals(0, b.readerIndex(), "no mark survives recycling");
        assertEquals(300, recycling.stats().requestedBytes());
        b.release();
        assertEquals(0, recycling.stats().requestedBytes());
        recycling.trim();
        assertEquals(0, recycling.stats().committedBytes());
    }

    /**
     * A seeded random workload of allocations, writes, capacity changes and
     * releases: after every step the pool's requested and reserved bytes equal
     * the sums over live buffers, exactly.
     */
    @Test
    void accountingIsExactAfterRandomWorkload() {
        Random random = new Random(20261122);
        List<ByteBuf> live = new ArrayList<>();
        for (int step = 0; step < 5000; step++) {
            if (live.isEmpty() || random.nextInt(100) < 55) {
                int size = randomSize(random);
                ByteBuf buf = allocator.directBuffer(size, Math.max(size, 1) * 4);
                buf.writerIndex(0);
                live.add(buf);
            } else if (random.nextInt(100) < 20) {
                ByteBuf buf = live.get(random.nextInt(live.size()));
                int newCapacity = random.nextInt(buf.maxCapacity() + 1);
                buf.capacity(newCapacity);
                assertEquals(newCapacity, buf.capacity());
            } else {
                live.remove(random.nextInt(live.size())).release();
            }
            if (step % 97 == 0) {
                assertAccounting(live);
            }
        }
        assertAccounting(live);
        live.forEach(ByteBuf::release);
    }

    private void assertAccounting(List<ByteBuf> live) {
        long requested = 0;
        long reserved = 0;
        long mostReserved = 0; // a reused dedicated region may be up to an eighth larger than a new one
        int dedicatedAbove = allocator.pool().config().dedicatedAbove();
        for (ByteBuf buf : live) {
            requested += buf.capacity();
            int least = allocator.pool().reservedSizeFor(buf.capacity());
            reserved += least;
            mostReserved += buf.capacity() > dedicatedAbove ? least + least / 8 : least;
        }
        PoolStats stats = allocator.stats();
        assertEquals(requested, stats.requestedBytes());
        assertTrue(stats.reservedBytes() >= reserved && stats.reservedBytes() <= mostReserved,
                stats.reservedBytes() + " reserved, expected " + reserved + " to " + mostReserved);
        assertEquals(live.size(), stats.liveAllocations());
        assertTrue(stats.committedBytes() >= stats.reservedBytes());
    }

    static int randomSize(Random random) {
        switch (random.nextInt(10)) {
            case 0:
                return random.nextInt(17);
            case 1:
            case 2:
            case 3:
            case 4:
                return 1 + random.nextInt(2048);
            case 5:
            case 6:
            case 7:
                return 1 + random.nextInt(70_000);
            case 8:
                return 1 + random.nextInt(CHUNK);
            default:
                return CHUNK + 1 + random.nextInt(CHUNK);
        }
    }

    @Test
    void metricReportsCommittedDirectMemory() {
        ByteBuf buf = allocator.directBuffer(1000);
        assertEquals(allocator.stats().committedBytes(), allocator.metric().usedDirectMemory());
        assertTrue(allocator.metric().usedDirectMemory() >= 256 * 1024, "at least an arena's first chunk");
        assertInstanceOf(io.netty.buffer.ByteBufAllocatorMetric.class, allocator.metric());
        buf.release();
    }

    /** A buffer grows in place up to the bytes its allocation reserved. */
    @Nested
    @Timeout(60)
    class UnalignedThresholdGrowth {

        private static SlabwiseDirectByteBuf inner(ByteBuf buf) {
            ByteBuf b = buf;
            while (!(b instanceof SlabwiseDirectByteBuf)) {
                b = b.unwrap();
            }
            return (SlabwiseDirectByteBuf) b;
        }

        /**
         * A fitted run just below a dedicated threshold that is not a whole
         * number of pages reserves pages past the threshold: what it says it can
         * write without moving must be written without moving.
         */
        @Test
        void aRunReservingPagesPastAnUnalignedDedicatedThresholdGrowsInPlace() {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(1).dedicatedAbove(100_000).build();
            ByteBuf buf = allocator.directBuffer(99_999);
            try {
                int reserved = inner(buf).allocation().reservedBytes();
                assertTrue(reserved > 100_000, "reserved " + reserved);
                buf.writerIndex(99_999);
                int fast = buf.maxFastWritableBytes();
                assertEquals(reserved - 99_999, fast);
                SlabwiseDirectByteBuf d = inner(buf);
                Allocation before = d.allocation();
                int offset = d.offset;
                buf.ensureWritable(fast);
                assertEquals(reserved, buf.capacity());
                assertSame(before, d.allocation(), "the same allocation");
                assertEquals(offset, d.offset, "grown in place");
                PoolStats stats = allocator.stats();
                assertEquals(reserved, stats.requestedBytes());
                assertEquals(reserved, stats.reservedBytes());
            } finally {
                assertTrue(buf.release());
            }
            PoolStats stats = allocator.stats();
            assertEquals(0, stats.requestedBytes(), stats::report);
            assertEquals(0, stats.reservedBytes(), stats::report);
            allocator.close();
            assertEquals(0, allocator.stats().committedBytes(), () -> allocator.stats().report());
        }
    }

    /**
     * A buffer without a bound grows as Netty's do up to the largest buffer the
     * pool serves. Netty's growth policy answers {@code maxCapacity} (here
     * {@link Integer#MAX_VALUE}) for any target within 4 MiB of it; Netty's own
     * allocators serve that, the pool's largest request is 8 KiB short of 2 GiB.
     * The regions of 2 GiB come from a sparse file (or, without Unsafe, from
     * anonymous mappings), so the test touches only the pages it writes.
     */
    @Nested
    @Timeout(60)
    class GrowthLimit {

        /** The smallest target for which Netty's policy answers Integer.MAX_VALUE: 2 GiB - 4 MiB. */
        private static final int TARGET = (1 << 31) - (4 << 20);

        @Test
        void nettysGrowthPolicyAnswersMaxCapacityWithin4MiBOfIt() {
            ByteBufAllocator netty = new PooledByteBufAllocator(true);
            assertEquals(Integer.MAX_VALUE, netty.calculateNewCapacity(TARGET, Integer.MAX_VALUE));
            assertEquals(TARGET, netty.calculateNewCapacity(TARGET - 1, Integer.MAX_VALUE));
        }

        @Test
        void aBufferGrowsWithinTheLastFourMiBBelowTwoGiB() throws Exception {
            // without Unsafe (Netty 4.2 on JDK 24 and later) the preferred source maps its regions, which is as lazy
            ChunkSource lazy = PlatformDependent.hasUnsafe() ? new SparseChunkSource() : ChunkSource.preferred();
            assumeTrue(lazy != ChunkSource.direct(), "no chunk source here leaves 2 GiB untouched");
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).chunkSource(lazy).build();
            try {
                for (ByteBufAllocator alloc : new ByteBufAllocator[] {allocator, allocator.forCategory("view")}) {
                    ByteBuf buf = alloc.directBuffer(16).writeLong(42);
                    buf.ensureWritable(TARGET - buf.writerIndex()); // threw IllegalArgumentException: capacity(Integer.MAX_VALUE)
                    assertTrue(buf.capacity() >= TARGET, "capacity " + buf.capacity());
                    assertEquals(allocator.pool().maxRequest(), buf.capacity());
                    assertEquals(42, buf.getLong(0));
                    buf.setByte(buf.capacity() - 1, 7);
                    assertEquals(7, buf.getByte(buf.capacity() - 1));
                    assertEquals(allocator.pool().maxRequest(), alloc.calculateNewCapacity(TARGET, Integer.MAX_VALUE));
                    assertEquals(TARGET, alloc.calculateNewCapacity(TARGET - 1, Integer.MAX_VALUE), "below the window: Netty's answer");
                    buf.release();
                    allocator.trim();
                }
                // past the largest request nothing changes: the pool refuses what it cannot serve
                ByteBuf buf = allocator.directBuffer(16);
                int beyond = allocator.pool().maxRequest() + 1;
                assertEquals(Integer.MAX_VALUE, allocator.calculateNewCapacity(beyond, Integer.MAX_VALUE));
                org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> buf.ensureWritable(beyond));
                assertEquals(16, buf.capacity());
                buf.release();
            } finally {
                allocator.close();
            }
            if (lazy instanceof SparseChunkSource) {
                assertEquals(0, ((SparseChunkSource) lazy).mapped.size(), "every sparse region was given back");
            }
        }

        /** Direct buffers for chunks; regions over 64 MiB mapped from a sparse temporary file, so untouched pages cost nothing. */
        private static final class SparseChunkSource implements ChunkSource {
            /** The files behind the mapped regions, by address (a buffer's hash code would read all its bytes). */
            final Map<Long, Path> mapped = new ConcurrentHashMap<>();

            @Override
            public NativeRegion allocate(int size) {
                if (size <= 64 << 20) {
                    return ChunkSource.direct().allocate(size);
                }
                try {
                    Path file = Files.createTempFile("slabwise-sparse", ".region");
                    MappedByteBuffer buffer;
                    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                        buffer = channel.map(FileChannel.MapMode.READ_WRITE, 0, size);
                    }
                    long address = PlatformDependent.directBufferAddress(buffer);
                    mapped.put(address, file);
                    return new NativeRegion(buffer, address, size);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            @Override
            @SuppressWarnings("deprecation") // PlatformDependent.freeDirectBuffer: deprecated in Netty 4.2, still the way to unmap
            public void release(NativeRegion region) {
                Path file = mapped.remove(region.address());
                if (file == null) {
                    ChunkSource.direct().release(region);
                    return;
                }
                PlatformDependent.freeDirectBuffer(region.buffer());
                try {
                    Files.delete(file);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
    }
}
