package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.IllegalReferenceCountException;
import io.slabwise.Allocation;
import io.slabwise.BlockStats;
import io.slabwise.CategoryStats;
import io.slabwise.PoolConfig;
import io.slabwise.PoolStats;
import io.slabwise.SequentialStats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Buffers of the sequential allocator and the block pool at the
 * {@link ByteBuf} level: exact capacities, composites of blocks, sub-blocks
 * and mini-blocks, bytes across part boundaries, release of every part, growth
 * that moves a slice, shrinking to capacity 0, and the categories in the
 * allocator's statistics.
 */
@Timeout(60)
class SequentialAndBlockByteBufTest {

    private static final int KIB = 1024;
    private static final int CHUNK = 1 << 20;
    private static final int BLOCK = 1 << 20;
    private static final int SUB = BLOCK / 16;
    private static final int MINI = SUB / 32;
    private static final int PAGE = PoolConfig.PAGE_SIZE;

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(2).build();
    private final SequentialByteBufAllocator log = allocator.sequential("log_cache", 2, CHUNK);
    private final BlockByteBufAllocator blocks = allocator.blocks("block_cache");

    private CategoryStats category(String name) {
        return allocator.stats().category(name);
    }

    /** The pool allocation behind a Slabwise buffer, through any leak-detection wrapper. */
    private static Allocation allocationOf(ByteBuf buf) {
        ByteBuf b = buf;
        while (!(b instanceof SlabwiseDirectByteBuf)) {
            b = b.unwrap();
        }
        return ((SlabwiseDirectByteBuf) b).allocation();
    }

    private static CompositeByteBuf compositeOf(ByteBuf buf) {
        ByteBuf b = buf;
        while (!(b instanceof CompositeByteBuf)) {
            b = b.unwrap();
        }
        return (CompositeByteBuf) b;
    }

    private void assertNothingLive(String name) {
        CategoryStats stats = category(name);
        assertEquals(0, stats.requested(), allocator.stats()::report);
        assertEquals(0, stats.reserved());
        assertEquals(0, stats.liveBuffers());
    }

    @Test
    void aSequentialBufferHasExactlyTheRequestedCapacity() {
        ByteBuf a = log.allocate(1001);
        ByteBuf b = log.allocate(24);
        assertEquals(1001, a.capacity());
        assertEquals(Integer.MAX_VALUE, a.maxCapacity());
        assertTrue(a.isDirect());
        assertEquals(0, a.readerIndex());
        assertEquals(0, a.writerIndex());
        assertEquals(1, a.refCnt());
        assertSame(allocator.forCategory("log_cache"), a.alloc(), "derived buffers stay in the category");
        assertEquals(1008, allocationOf(a).reservedBytes(), "rounded to 8");
        assertEquals(allocationOf(a).address() + 1008, allocationOf(b).address(), "carved one after the other");
        assertEquals(1001 + 24, category("log_cache").requested());
        assertEquals(1008 + 24, category("log_cache").reserved());
        SequentialStats stats = log.stats();
        assertEquals(1008 + 24, stats.liveBytes());
        assertEquals(2, stats.slicesCarved());
        assertEquals("log_cache", log.category());

        ByteBuf bounded = log.allocate(10, 20);
        assertEquals(10, bounded.capacity());
        assertEquals(20, bounded.maxCapacity());
        assertThrows(IndexOutOfBoundsException.class, () -> bounded.writeZero(21));
        a.release();
        b.release();
        bounded.release();
        assertNothingLive("log_cache");
    }

    /**
     * A cache allocator refused for its arguments (no stripes, a largest
     * request of zero, a block size that is no power of two) creates no
     * category: stats() lists none, for the name was never used.
     */
    @Test
    void aRefusedCacheAllocatorLeavesNoCategoryBehind() {
        assertThrows(IllegalArgumentException.class, () -> allocator.sequential("x", 0, 100));
        assertThrows(IllegalArgumentException.class, () -> allocator.sequential("y", 1, 0));
        assertThrows(IllegalArgumentException.class, () -> allocator.blocks("z", 3000, 1));
        assertThrows(IllegalArgumentException.class, () -> allocator.blocks("w", 1 << 20, 0));
        Set<String> names = allocator.stats().categories().stream().map(CategoryStats::name).collect(Collectors.toSet());
        for (String refused : new String[] {"x", "y", "z", "w"}) {
            assertFalse(names.contains(refused), refused + " in " + names);
        }
    }

    @Test
    void badSequentialRequestsNameTheCategoryAndTheSize() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> log.allocate(0));
        assertTrue(zero.getMessage().contains("log_cache") && zero.getMessage().endsWith(": 0"), zero.getMessage());
        IllegalArgumentException tooLarge = assertThrows(IllegalArgumentException.class, () -> log.allocate(CHUNK + 1));
        assertTrue(tooLarge.getMessage().contains("log_cache") && tooLarge.getMessage().contains(String.valueOf(CHUNK + 1)),
                tooLarge.getMessage());
        assertThrows(IllegalArgumentException.class, () -> log.allocate(100, 99));
        IllegalArgumentException noBlocks = assertThrows(IllegalArgumentException.class, () -> blocks.allocate(0));
        assertTrue(noBlocks.getMessage().contains("block_cache"), noBlocks.getMessage());
        assertNothingLive("log_cache");
        assertNothingLive("block_cache");
    }

    @Test
    void aBlockCompositeHasExactCapacityAndWriterIndexZero() {
        int size = 2 * BLOCK + 3 * SUB + 2 * PAGE + 5000;
        ByteBuf buf = blocks.allocate(size);
        CompositeByteBuf composite = compositeOf(buf);
        assertEquals(size, buf.capacity());
        assertEquals(0, buf.writerIndex());
        assertEquals(0, buf.readerIndex());
        assertEquals(size, buf.writableBytes());
        assertTrue(buf.isDirect());
        int remainder = 2 * PAGE + 5000; // 10 whole mini-blocks and 904 bytes of an eleventh
        assertEquals(2 + 3 + 11, composite.numComponents(), "2 blocks, 3 sub-blocks, 11 mini-blocks");
        for (int i = 0; i < composite.numComponents(); i++) {
            int expected = i < 2 ? BLOCK : i < 5 ? SUB : i < 15 ? MINI : remainder - 10 * MINI;
            assertEquals(expected, composite.component(i).capacity(), "component " + i);
            assertEquals(i < 2 ? BLOCK : i < 5 ? SUB : MINI, allocationOf(composite.component(i)).reservedBytes(),
                    "component " + i);
        }
        assertEquals(904, composite.component(15).capacity(), "the last mini-block, partly used");
        assertSame(allocator.forCategory("block_cache"), buf.alloc());
        assertEquals(BLOCK, blocks.blockSize());
        assertEquals("block_cache", blocks.category());

        CategoryStats stats = category("block_cache");
        assertEquals(size, stats.requested());
        assertEquals(16, stats.liveBuffers());
        assertEquals(2L * BLOCK + 3 * SUB + 11 * MINI, stats.reserved());
        assertTrue(stats.reserved() - size < MINI, "reserved " + stats.reserved() + " for " + size);
        BlockStats blockStats = blocks.stats();
        assertEquals(2, blockStats.liveBlocks());
        assertEquals(3, blockStats.liveSubBlocks());
        assertEquals(11, blockStats.liveMiniBlocks());
        assertEquals(3, blockStats.blocks(), "two blocks and one cut into sub-blocks");
        PoolStats pooled = allocator.stats();
        assertEquals(3L * BLOCK, pooled.blockRegionBytes(), pooled::report);
        assertEquals(0, pooled.chunksAllocated(), "nothing of a payload comes from the general pool");
        buf.release();
        assertNothingLive("block_cache");
    }

    @Test
    void bytesWrittenAcrossBlockBoundariesReadBackTheSame() {
        int size = 3 * BLOCK + SUB + 2 * MINI + 777;
        byte[] data = new byte[size];
        new Random(13).nextBytes(data);
        ByteBuf buf = blocks.allocate(size);
        for (int at = 0; at < size; ) { // odd-sized writes, so many straddle a boundary
            int n = Math.min(size - at, 100_003);
            buf.writeBytes(data, at, n);
            at += n;
        }
        assertEquals(size, buf.writerIndex());
        assertFalse(buf.isWritable());

        byte[] back = new byte[size];
        buf.getBytes(0, back);
        assertArrayEquals(data, back);
        ByteBuffer expected = ByteBuffer.wrap(data);
        for (int boundary : new int[] {BLOCK, 2 * BLOCK, 3 * BLOCK, 3 * BLOCK + SUB, 3 * BLOCK + SUB + MINI,
                3 * BLOCK + SUB + 2 * MINI}) {
            assertEquals(expected.getLong(boundary - 3), buf.getLong(boundary - 3), "a long across " + boundary);
            assertEquals(expected.getInt(boundary - 2), buf.getInt(boundary - 2));
            assertEquals(expected.getShort(boundary - 1), buf.getShort(boundary - 1));
            buf.setLong(boundary - 5, 0x0102030405060708L);
            assertEquals(0x0102030405060708L, buf.getLong(boundary - 5));
            assertEquals(0x04, buf.getByte(boundary - 2));
            assertEquals(0x05, buf.getByte(boundary - 1));
            assertEquals(0x06, buf.getByte(boundary));
            ByteBuffer[] views = buf.nioBuffers(boundary - 10, 20);
            assertEquals(2, views.length, "one NIO view per part");
            assertEquals(20, views[0].remaining() + views[1].remaining());
        }

        ByteBuf copy = Unpooled.buffer(2 * KIB);
        buf.getBytes(BLOCK - KIB, copy, 2 * KIB);
        assertEquals(buf.slice(BLOCK - KIB, 2 * KIB), copy);
        assertEquals(buf.getByte(size - 1), buf.readerIndex(size - 1).readByte());
        copy.release();
        buf.release();
        assertNothingLive("block_cache");
    }

    /**
     * Releasing a composite, through its last reference, frees every block,
     * sub-block and mini-block, on whatever thread: the category and the
     * block pool go back to zero, the emptied blocks are kept idle (up to the
     * limit) and trim gives them back.
     */
    @Test
    void releaseFreesEveryPart() throws Exception {
        Random random = new Random(21);
        List<ByteBuf> held = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            ByteBuf buf = blocks.allocate(64 * KIB + random.nextInt(5 * BLOCK));
            buf.writerIndex(buf.capacity());
            held.add(buf.retainedDuplicate());
            buf.release(); // the duplicate's reference keeps every part
        }
        long requested = held.stream().mapToLong(ByteBuf::capacity).sum();
        assertEquals(requested, category("block_cache").requested());
        assertTrue(blocks.stats().liveBlocks() > 0);
        Thread releaser = new Thread(() -> held.forEach(ByteBuf::release)); // freed on another thread
        releaser.start();
        releaser.join();
        for (ByteBuf buf : held) {
            assertEquals(0, buf.refCnt());
            assertThrows(IllegalReferenceCountException.class, () -> buf.getByte(0));
        }
        assertNothingLive("block_cache");
        BlockStats stats = blocks.stats();
        assertEquals(0, stats.liveBlocks());
        assertEquals(0, stats.liveSubBlocks());
        assertEquals(0, stats.liveMiniBlocks());
        assertEquals(0, stats.freeSubBlocks() + stats.freeMiniBlocks(), "no cut region is left: " + stats);
        assertEquals(stats.idleBlocks(), stats.blocks(), "only idle blocks are held: " + stats);
        assertEquals(allocator.pool().config().maxIdleBlocks(), stats.idleBlocks(), "as many as the limit: " + stats);
        assertEquals(stats.idleBlocks() * BLOCK, allocator.stats().committedBytes(), allocator.stats()::report);
        assertEquals(stats.idleBlocks(), blocks.trim(), "trim gives back every idle block");
        assertEquals(0, blocks.stats().blocks());
        allocator.trim();
        assertEquals(0, allocator.stats().committedBytes(), allocator.stats()::report);
    }

    /**
     * The allocator's builder sets how many emptied blocks a block pool keeps
     * idle: with one, a second emptied block goes back to the OS at once, and
     * trim gives the idle one back.
     */
    @Test
    void theBuilderSetsHowManyIdleBlocksAreKept() {
        SlabwiseAllocator keepingOne = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(1).maxIdleBlocks(1).build();
        assertEquals(1, keepingOne.pool().config().maxIdleBlocks());
        BlockByteBufAllocator few = keepingOne.blocks("block_cache");
        ByteBuf buf = few.allocate(2 * BLOCK);
        assertEquals(2L * BLOCK, keepingOne.stats().committedBytes());
        buf.release();
        BlockStats stats = few.stats();
        assertEquals(1, stats.idleBlocks(), stats::toString);
        assertEquals(1, stats.blocks());
        assertEquals(BLOCK, keepingOne.stats().committedBytes(), "the second emptied block went back at once");
        assertEquals(1, few.trim());
        assertEquals(0, keepingOne.stats().committedBytes());
        assertThrows(IllegalArgumentException.class, () -> SlabwiseAllocator.builder().maxIdleBlocks(-1));
    }

    /**
     * A sequential buffer that grows within its 8-byte rounding stays where
     * it is; one that grows past it moves to a new slice of the same
     * allocator and category, keeping its bytes, and the old slice is freed.
     */
    @Test
    void growingASequentialBufferMovesIt() {
        ByteBuf buf = log.allocate(100, 64 * KIB);
        for (int i = 0; i < 100; i++) {
            buf.writeByte(i);
        }
        long before = allocationOf(buf).address();
        buf.capacity(104);
        assertEquals(before, allocationOf(buf).address(), "104 fits the 104 bytes reserved");
        assertEquals(104, category("log_cache").requested());

        buf.writeZero(4).writeInt(0xCAFEBABE); // past the reserved bytes: Netty grows it
        int grown = buf.capacity();
        assertTrue(grown > 104, "grew to " + grown);
        Allocation moved = allocationOf(buf);
        assertNotEquals(before, moved.address(), "moved to a new slice");
        assertEquals(grown, moved.requestedBytes());
        assertEquals((grown + 7) & -8, moved.reservedBytes(), "a slice, not a size class");
        for (int i = 0; i < 100; i++) {
            assertEquals((byte) i, buf.getByte(i), "bytes kept at " + i);
        }
        assertEquals(0xCAFEBABE, buf.getInt(104));
        CategoryStats stats = category("log_cache");
        assertEquals(grown, stats.requested(), "the old slice was freed");
        assertEquals(1, stats.liveBuffers());
        assertEquals(2, log.stats().slicesCarved(), "the new slice came from the same sequential allocator");
        assertEquals(moved.reservedBytes(), log.stats().liveBytes());

        buf.capacity(50);
        assertEquals(moved.address(), allocationOf(buf).address(), "shrinking stays in place");
        assertEquals(50, category("log_cache").requested());
        buf.release();
        assertNothingLive("log_cache");
    }

    /**
     * A sequential buffer reports the growth its maximum capacity allows, and
     * Netty code ({@code ensureWritable} in a cumulator, say) relies on it:
     * past the sequential allocator's largest request it moves to its
     * category's general pool, keeping its bytes and its category, and back
     * to a slice when it shrinks to fit again.
     */
    @Test
    void aSequentialBufferGrowsPastTheLargestRequestIntoTheGeneralPool() {
        SequentialByteBufAllocator small = allocator.sequential("small_log", 1, 4 * KIB);
        ByteBuf buf = small.allocate(100);
        byte[] head = new byte[100];
        new Random(11).nextBytes(head);
        buf.writeBytes(head);
        assertEquals(Integer.MAX_VALUE - 100, buf.maxWritableBytes());

        byte[] body = new byte[8000];
        new Random(12).nextBytes(body);
        buf.writeBytes(body); // grows to 8 KiB: past the 4 KiB the allocator serves
        int grown = buf.capacity();
        assertTrue(grown > 4 * KIB, "grew to " + grown);
        assertArrayEquals(head, ByteBufUtil.getBytes(buf, 0, 100));
        assertArrayEquals(body, ByteBufUtil.getBytes(buf, 100, 8000));
        CategoryStats stats = category("small_log");
        assertEquals(grown, stats.requested(), "still the category's, and the slice went back");
        assertEquals(1, stats.liveBuffers());
        assertEquals(0, small.stats().liveBytes(), "held by the general pool");

        buf.capacity(1000);
        assertEquals(2, small.stats().slicesCarved(), "back in a slice of its own allocator once it fits");
        assertEquals(1000, small.stats().liveBytes());
        assertArrayEquals(head, ByteBufUtil.getBytes(buf, 0, 100));
        assertArrayEquals(Arrays.copyOf(body, 900), ByteBufUtil.getBytes(buf, 100, 900));
        buf.release();
        assertNothingLive("small_log");
    }

    /**
     * Netty lets a buffer shrink to capacity 0. A sequential allocator serves
     * no empty request, so an emptied sequential buffer holds its zero bytes in
     * its category's general pool; growing again carves a new slice from the
     * same sequential allocator.
     */
    @Test
    void aSequentialBufferShrinksToZeroAndGrowsAgain() {
        ByteBuf buf = log.allocate(100, 64 * KIB);
        buf.writeBytes(new byte[100]).readerIndex(40);
        assertSame(buf, buf.capacity(0));
        assertEquals(0, buf.capacity());
        assertEquals(0, buf.readerIndex());
        assertEquals(0, buf.writerIndex());
        assertEquals(0, buf.nioBuffer(0, 0).remaining());
        assertThrows(IndexOutOfBoundsException.class, () -> buf.getByte(0));
        CategoryStats stats = category("log_cache");
        assertEquals(0, stats.requested());
        assertEquals(1, stats.liveBuffers(), "the buffer is still live, with no bytes");
        assertEquals(0, log.stats().liveBytes(), "its slice went back");

        byte[] data = new byte[300];
        new Random(5).nextBytes(data);
        buf.writeBytes(data);
        assertTrue(buf.capacity() >= 300);
        assertEquals(buf.capacity(), allocationOf(buf).requestedBytes());
        assertEquals(2, log.stats().slicesCarved(), "grown into a new slice of the same sequential allocator");
        assertArrayEquals(data, ByteBufUtil.getBytes(buf, 0, 300));
        buf.capacity(0);
        assertSame(buf, buf.capacity(0), "shrinking an empty buffer again changes nothing");
        assertEquals(0, buf.capacity());
        buf.release();
        assertNothingLive("log_cache");

        ByteBuf general = allocator.directBuffer(100);
        general.capacity(0);
        assertEquals(0, general.capacity());
        general.release();
        assertNothingLive("network");
    }

    /**
     * The block pool's buffers shrink to capacity 0 too: a composite drops its
     * blocks, and a block held on its own moves to zero bytes of its
     * category's general pool, giving the block back.
     */
    @Test
    void blockBuffersShrinkToZero() {
        ByteBuf payload = blocks.allocate(BLOCK + SUB + 100);
        payload.writerIndex(payload.capacity());
        payload.capacity(0);
        assertEquals(0, payload.capacity());
        assertEquals(0, category("block_cache").requested());
        BlockStats stats = blocks.stats();
        assertEquals(0, stats.liveBlocks() + stats.liveSubBlocks() + stats.liveMiniBlocks(), stats::toString);
        payload.release();
        assertNothingLive("block_cache");

        ByteBuf whole = blocks.allocate(BLOCK);
        ByteBuf block = compositeOf(whole).internalComponent(0).retain();
        whole.release();
        assertTrue(block instanceof SlabwiseDirectByteBuf, "the block itself, not a view of it: " + block);
        assertEquals(BLOCK, block.capacity());
        assertEquals(1, blocks.stats().liveBlocks());
        block.capacity(0);
        assertEquals(0, block.capacity());
        assertEquals(0, blocks.stats().liveBlocks(), "the block went back");
        assertEquals(0, category("block_cache").requested());
        assertEquals(1, category("block_cache").liveBuffers());
        block.writeLong(7);
        assertEquals(7, block.readLong());
        block.release();
        assertNothingLive("block_cache");
    }

    @Test
    void categoriesAreReportedInTheAllocatorsStats() {
        ByteBuf slice = log.allocate(3000);
        ByteBuf payload = blocks.allocate(BLOCK + 10);
        ByteBuf network = allocator.directBuffer(500);
        ByteBuf replication = allocator.forCategory("replication").directBuffer(700);
        PoolStats stats = allocator.stats();
        Set<String> names = stats.categories().stream().map(CategoryStats::name).collect(Collectors.toSet());
        assertTrue(names.containsAll(Set.of("network", "log_cache", "block_cache", "replication")), names::toString);
        assertEquals(3000, stats.category("log_cache").requested());
        assertEquals(BLOCK + 10, stats.category("block_cache").requested());
        assertEquals(500, stats.category("network").requested());
        assertEquals(700, stats.category("replication").requested());
        assertEquals(3000 + BLOCK + 10 + 500 + 700, stats.requestedBytes(), "the categories sum to the pool");
        String report = stats.report();
        assertTrue(report.contains("log_cache") && report.contains("block_cache"), report);
        slice.release();
        payload.release();
        network.release();
        replication.release();
        for (String name : names) {
            assertNothingLive(name);
        }
    }
}
