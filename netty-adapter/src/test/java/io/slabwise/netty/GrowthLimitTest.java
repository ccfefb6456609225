package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.internal.PlatformDependent;
import io.slabwise.ChunkSource;
import io.slabwise.NativeRegion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A buffer without a bound grows as Netty's do up to the largest buffer the
 * pool serves. Netty's growth policy answers {@code maxCapacity} (here
 * {@link Integer#MAX_VALUE}) for any target within 4 MiB of it; Netty's own
 * allocators serve that, the pool's largest request is 8 KiB short of 2 GiB.
 * The regions of 2 GiB come from a sparse file (or, without Unsafe, from
 * anonymous mappings), so the test touches only the pages it writes.
 */
@Timeout(60)
class GrowthLimitTest {

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
