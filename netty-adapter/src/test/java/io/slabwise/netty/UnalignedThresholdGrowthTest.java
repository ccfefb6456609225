package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.slabwise.Allocation;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A buffer grows in place up to the bytes its allocation reserved. */
@Timeout(60)
class UnalignedThresholdGrowthTest {

    private static final int CHUNK = 1 << 20;

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
