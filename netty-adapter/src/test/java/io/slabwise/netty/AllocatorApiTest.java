package io.slabwise.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.FixedLengthFrameDecoder;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.handler.codec.string.StringDecoder;
import io.netty.handler.codec.string.StringEncoder;
import io.netty.util.ResourceLeakDetector;
import io.slabwise.LimitPolicy;
import io.slabwise.ManualTime;
import io.slabwise.MemoryLimitException;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.CharBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The allocator API next to Netty's pooled allocator: every {@link ByteBufAllocator}
 * method with ordinary and hostile arguments, on the allocator, a category view
 * and the view behind a sequential allocator's buffers; the metric; and the
 * Netty helpers and pipelines that allocate through {@code alloc()}.
 */
@Timeout(60)
class AllocatorApiTest {

    private static final int M = Integer.MAX_VALUE;
    private static final PooledByteBufAllocator NETTY = new PooledByteBufAllocator(true);

    private static SlabwiseAllocator small() {
        return SlabwiseAllocator.builder().chunkSize(256 * 1024).arenas(1).build();
    }

    private static void assertNothingLive(SlabwiseAllocator allocator) {
        PoolStats stats = allocator.stats();
        assertEquals(0, stats.liveAllocations(), stats::report);
        assertEquals(0, stats.requestedBytes(), stats::report);
        assertEquals(0, allocator.metric().usedHeapMemory());
    }

    /** What a call gave: the exception's type, or the buffer's kind and bounds (released at once). */
    private static String outcome(ByteBufAllocator expectedAlloc, Supplier<ByteBuf> call) {
        ByteBuf buf;
        try {
            buf = call.get();
        } catch (RuntimeException | OutOfMemoryError e) {
            return e.getClass().getSimpleName();
        }
        String composite = buf instanceof CompositeByteBuf ? " components<=" + ((CompositeByteBuf) buf).maxNumComponents() : "";
        String result = "direct=" + buf.isDirect() + " cap=" + buf.capacity() + " max=" + buf.maxCapacity()
                + " refCnt=" + buf.refCnt() + composite + " ownAlloc=" + (buf.alloc() == expectedAlloc);
        buf.release(); // false for the empty buffer of (0, 0), as Netty's
        return result;
    }

    private static List<String> everyCall(ByteBufAllocator a) {
        int[][] sized = {{-1}, {0}, {1}, {4096}, {300_000}, {0, 0}, {1, 0}, {0, -1}, {-1, -1}, {-1, 10}, {10, 5},
            {5, 5}, {0, M}, {7, 100}};
        List<String> results = new ArrayList<>();
        results.add("buffer() " + outcome(a, a::buffer));
        results.add("ioBuffer() " + outcome(a, a::ioBuffer));
        results.add("directBuffer() " + outcome(a, a::directBuffer));
        // the heap buffers of a view are its allocator's (documented): compare their kind and bounds only
        results.add("heapBuffer() " + outcome(a, a::heapBuffer).replace(" ownAlloc=false", " ownAlloc=true"));
        for (int[] s : sized) {
            String args = Arrays.toString(s);
            boolean one = s.length == 1;
            results.add("buffer" + args + ' ' + outcome(a, () -> one ? a.buffer(s[0]) : a.buffer(s[0], s[1])));
            results.add("ioBuffer" + args + ' ' + outcome(a, () -> one ? a.ioBuffer(s[0]) : a.ioBuffer(s[0], s[1])));
            results.add("directBuffer" + args + ' '
                    + outcome(a, () -> one ? a.directBuffer(s[0]) : a.directBuffer(s[0], s[1])));
            results.add("heapBuffer" + args + ' '
                    + outcome(a, () -> one ? a.heapBuffer(s[0]) : a.heapBuffer(s[0], s[1])).replace(" ownAlloc=false", " ownAlloc=true"));
        }
        results.add("compositeBuffer() " + outcome(a, a::compositeBuffer));
        results.add("compositeDirectBuffer() " + outcome(a, a::compositeDirectBuffer));
        results.add("compositeHeapBuffer() " + outcome(a, a::compositeHeapBuffer));
        for (int n : new int[] {-1, 0, 1, 2, 16, M}) {
            results.add("compositeBuffer(" + n + ") " + outcome(a, () -> a.compositeBuffer(n)));
            results.add("compositeDirectBuffer(" + n + ") " + outcome(a, () -> a.compositeDirectBuffer(n)));
            results.add("compositeHeapBuffer(" + n + ") " + outcome(a, () -> a.compositeHeapBuffer(n)));
        }
        int[][] growth = {{-1, 10}, {10, 5}, {0, 0}, {0, 10}, {1, 0}, {64, 64}, {65, 100}, {5, M}, {64, M}, {65, M},
            {4 << 20, M}, {(4 << 20) + 1, M}, {M - (4 << 20), M}, {M, M}, {M - 1, M}, {M, M - 1}, {-5, -1},
            {100, -1}, {3 << 20, 5 << 20}};
        for (int[] g : growth) {
            String r;
            try {
                r = String.valueOf(a.calculateNewCapacity(g[0], g[1]));
            } catch (RuntimeException e) {
                r = e.getClass().getSimpleName();
            }
            results.add("calculateNewCapacity" + Arrays.toString(g) + ' ' + r);
        }
        results.add("isDirectBufferPooled " + a.isDirectBufferPooled());
        results.add("metric provider " + (a instanceof ByteBufAllocatorMetricProvider));
        return results;
    }

    /** The allocator, a category view and a sequential allocator's view answer every call as Netty's pooled one. */
    @Test
    void everyAllocatorMethodAnswersAsNettysPooledAllocator() {
        SlabwiseAllocator allocator = small();
        SequentialByteBufAllocator sequential = allocator.sequential("log");
        ByteBuf logEntry = sequential.allocate(100);
        ByteBufAllocator sequentialView = logEntry.alloc();
        assertSame(allocator.forCategory("log"), sequentialView, "a sequential buffer's alloc() is its category's view");
        List<String> expected = everyCall(NETTY);
        for (ByteBufAllocator a : new ByteBufAllocator[] {allocator, allocator.forCategory("view"), sequentialView}) {
            List<String> actual = everyCall(a);
            for (int i = 0; i < expected.size(); i++) {
                assertEquals(expected.get(i), actual.get(i), a.toString());
            }
        }
        logEntry.release();
        assertNothingLive(allocator);
        allocator.close();
    }

    /** Composite buffers of every allocator and view are leak-tracked as Netty's are, and the blocks' too. */
    @Test
    void compositesAreLeakTrackedAsNettysAre() {
        ResourceLeakDetector.Level previous = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        try {
            SlabwiseAllocator allocator = small();
            List<String> expected = trackedKinds(NETTY);
            assertEquals(expected, trackedKinds(allocator));
            assertEquals(expected, trackedKinds(allocator.forCategory("view")));
            ByteBuf blocks = allocator.blocks("blocks", 16 * 1024, 1).allocate(40_000);
            assertEquals(expected.get(1), blocks.getClass().getSimpleName());
            blocks.release();
            assertNothingLive(allocator);
            allocator.close();
        } finally {
            ResourceLeakDetector.setLevel(previous);
        }
    }

    private static List<String> trackedKinds(ByteBufAllocator a) {
        List<String> kinds = new ArrayList<>();
        for (ByteBuf buf : new ByteBuf[] {a.compositeBuffer(), a.compositeDirectBuffer(3), a.compositeHeapBuffer(),
            a.directBuffer(10), a.heapBuffer(10), a.ioBuffer(), a.directBuffer(0, 0)}) {
            kinds.add(buf.getClass().getSimpleName());
            buf.release();
        }
        return kinds;
    }

    /** usedHeapMemory follows the arrays of live heap buffers through growth, shrinking, copies and derived releases. */
    @Test
    void theHeapMetricFollowsLiveArrays() {
        SlabwiseAllocator allocator = small();
        ByteBufAllocatorMetric metric = allocator.metric();
        ByteBuf heap = allocator.heapBuffer(10);
        assertEquals(10, metric.usedHeapMemory());
        heap.capacity(1000);
        assertEquals(1000, metric.usedHeapMemory());
        heap.writeZero(5000);
        assertEquals(heap.capacity(), metric.usedHeapMemory());
        heap.capacity(3);
        assertEquals(3, metric.usedHeapMemory());
        ByteBuf copy = heap.copy();
        ByteBuf duplicate = heap.retainedDuplicate();
        assertFalse(heap.release());
        assertEquals(3 + copy.capacity(), metric.usedHeapMemory());
        duplicate.release();
        copy.release();
        assertEquals(0, metric.usedHeapMemory());
        ByteBufAllocator view = allocator.forCategory("view");
        ByteBuf viewHeap = view.heapBuffer(100);
        assertEquals(100, ((ByteBufAllocatorMetricProvider) view).metric().usedHeapMemory());
        CompositeByteBuf composite = view.compositeHeapBuffer(2);
        for (int i = 0; i < 3; i++) {
            composite.addComponent(true, view.heapBuffer(4).writeInt(i)); // consolidates through alloc()
        }
        assertEquals(100 + composite.capacity(), metric.usedHeapMemory());
        viewHeap.release();
        composite.release();
        assertNothingLive(allocator);
        allocator.close();
    }

    /**
     * usedDirectMemory comes back down after a thread that allocated and
     * released dies, with nobody calling stats(): the metric alone, polled as
     * a metrics registry would.
     */
    @Test
    void theDirectMetricComesDownAfterAThreadDiesWithoutStats() throws Exception {
        ManualTime clock = new ManualTime();
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(256 * 1024).arenas(2)
                .idleChunkDecay(Duration.ofMillis(50)).ticker(clock).scheduler(clock).build();
        ByteBufAllocatorMetric metric = allocator.metric();
        assertEquals(0, metric.usedDirectMemory());
        Thread worker = new Thread(() -> {
            List<ByteBuf> buffers = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                buffers.add(allocator.directBuffer(100 + i * 97));
            }
            buffers.add(allocator.directBuffer(1 << 20)); // a region of its own, kept in the thread's slot
            buffers.forEach(ByteBuf::release);
        });
        worker.start();
        worker.join();
        assertTrue(metric.usedDirectMemory() > 0);
        // the periodic decay, as its scheduler runs it: the dead thread's cache, then its chunks idle past the decay
        for (int run = 0; run < 3 && metric.usedDirectMemory() > 0; run++) {
            clock.advance(Duration.ofMillis(50));
            clock.runScheduled();
        }
        assertEquals(0, metric.usedDirectMemory());
        allocator.close();
    }

    /** ByteBufUtil's allocating helpers give Netty's bytes and bounds, in buffers of the allocator they were given. */
    @Test
    void byteBufUtilHelpersGiveNettysBuffers() {
        SlabwiseAllocator allocator = small();
        String text = "h\u00e9llo w\u00f6rld \u20ac\ud834\udd1e " + "x".repeat(300) + " \ud800 lone surrogate";
        List<String> expected = helperResults(NETTY, text);
        for (ByteBufAllocator a : new ByteBufAllocator[] {allocator, allocator.forCategory("view")}) {
            assertEquals(expected, helperResults(a, text));
        }
        assertNothingLive(allocator);
        allocator.close();
    }

    private static List<String> helperResults(ByteBufAllocator a, String text) {
        List<ByteBuf> buffers = new ArrayList<>();
        buffers.add(ByteBufUtil.writeUtf8(a, text));
        buffers.add(ByteBufUtil.writeAscii(a, "plain ascii"));
        buffers.add(ByteBufUtil.encodeString(a, CharBuffer.wrap(text), StandardCharsets.UTF_8));
        buffers.add(ByteBufUtil.encodeString(a, CharBuffer.wrap(text), StandardCharsets.UTF_8, 7));
        buffers.add(ByteBufUtil.encodeString(a, CharBuffer.wrap(text), StandardCharsets.ISO_8859_1));
        ByteBuf growing = a.directBuffer(4);
        ByteBufUtil.writeUtf8(growing, text);
        ByteBufUtil.reserveAndWriteUtf8(growing, text, ByteBufUtil.utf8MaxBytes(text));
        ByteBufUtil.writeAscii(growing, "tail");
        buffers.add(growing);
        buffers.add(growing.copy());
        ByteBuf slice = growing.retainedSlice(3, 50).clear();
        ByteBufUtil.writeUtf8(slice, "\u00e9t\u00e9");
        buffers.add(slice);
        List<String> results = new ArrayList<>();
        for (ByteBuf buf : buffers) {
            results.add(buf.isDirect() + " " + buf.capacity() + " " + buf.readerIndex() + " " + buf.writerIndex() + " "
                    + (buf.alloc() == a) + " " + ByteBufUtil.hexDump(buf));
        }
        buffers.forEach(ByteBuf::release);
        return results;
    }

    /** Unpooled.wrappedBuffer takes ownership of Slabwise buffers, and consolidation of a view's composite stays in its category. */
    @Test
    void wrappedAndConsolidatedBuffersGoBackToThePool() {
        SlabwiseAllocator allocator = small();
        ByteBufAllocator view = allocator.forCategory("view");
        ByteBuf one = Unpooled.wrappedBuffer(view.directBuffer(5).writeZero(5));
        assertSame(view, one.alloc());
        ByteBuf two = Unpooled.wrappedBuffer(view.directBuffer(5).writeZero(5), allocator.directBuffer(5).writeZero(3));
        assertEquals(8, two.readableBytes());
        ByteBuf empty = view.directBuffer(5);
        assertEquals(0, Unpooled.wrappedBuffer(empty).capacity());
        assertEquals(0, empty.refCnt(), "an unreadable buffer is released, as Netty's are");
        CompositeByteBuf composite = view.compositeDirectBuffer(3);
        for (int i = 0; i < 7; i++) {
            composite.addComponent(true, view.directBuffer(10).writeZero(10));
        }
        assertEquals(1, composite.numComponents());
        assertEquals(70, composite.readableBytes());
        assertSame(view, composite.component(0).alloc(), "consolidated through the composite's alloc()");
        PoolStats stats = allocator.stats();
        assertEquals(70 + 5 + 5, stats.categories().stream().filter(c -> c.name().equals("view")).findFirst()
                .orElseThrow().requested(), stats::report);
        one.release();
        two.release();
        composite.release();
        assertNothingLive(allocator);
        allocator.close();
    }

    /** A decoder cuts frames out of buffers that ByteToMessageDecoder merges or composes: the same frames as on Netty's allocator. */
    @Test
    void bothCumulatorsOnAnEmbeddedChannel() {
        SlabwiseAllocator allocator = small();
        String message = "abcdefghijklmnopqrstuvwxyz0123456789".repeat(60);
        for (ByteToMessageDecoder.Cumulator cumulator
                : new ByteToMessageDecoder.Cumulator[] {ByteToMessageDecoder.MERGE_CUMULATOR, ByteToMessageDecoder.COMPOSITE_CUMULATOR}) {
            List<String> expected = frames(NETTY, cumulator, message);
            assertEquals(message.length() / 7, expected.size());
            assertEquals(expected, frames(allocator, cumulator, message));
            assertEquals(expected, frames(allocator.forCategory("net"), cumulator, message));
        }
        assertNothingLive(allocator);
        allocator.close();
    }

    private static List<String> frames(ByteBufAllocator a, ByteToMessageDecoder.Cumulator cumulator, String message) {
        FixedLengthFrameDecoder decoder = new FixedLengthFrameDecoder(7);
        decoder.setCumulator(cumulator);
        EmbeddedChannel channel = new EmbeddedChannel();
        channel.config().setOption(ChannelOption.ALLOCATOR, a);
        assertSame(a, channel.alloc());
        channel.pipeline().addLast(decoder);
        byte[] bytes = message.getBytes(StandardCharsets.US_ASCII);
        for (int at = 0, step = 1; at < bytes.length; at += step, step = step * 3 % 53 + 1) {
            int n = Math.min(step, bytes.length - at);
            channel.writeInbound(a.directBuffer(n).writeBytes(bytes, at, n));
        }
        List<String> frames = new ArrayList<>();
        for (ByteBuf frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
            frames.add(frame.toString(StandardCharsets.US_ASCII));
            frame.release();
        }
        assertFalse(channel.finishAndReleaseAll());
        return frames;
    }

    /**
     * ChannelOption.ALLOCATOR on a local client and server: encoders allocate
     * through ctx.alloc(), the buffers cross event loops, and every one of
     * them comes back.
     */
    @Test
    @SuppressWarnings("deprecation") // DefaultEventLoopGroup and LocalServerChannel: deprecated in Netty 4.2
    void allocatorOptionOnALocalChannelPipeline() throws Exception {
        SlabwiseAllocator allocator = small();
        ByteBufAllocator serverAlloc = allocator.forCategory("server");
        EventLoopGroup group = new DefaultEventLoopGroup(2);
        BlockingQueue<String> replies = new LinkedBlockingQueue<>();
        BlockingQueue<ByteBufAllocator> seen = new LinkedBlockingQueue<>();
        LocalAddress address = new LocalAddress("slabwise-review-" + System.nanoTime());
        try {
            Channel server = new ServerBootstrap().group(group).channel(LocalServerChannel.class)
                    .childOption(ChannelOption.ALLOCATOR, serverAlloc)
                    .childHandler(framedStrings((ctx, msg) -> {
                        seen.add(ctx.alloc());
                        ctx.writeAndFlush(msg.toUpperCase());
                    })).bind(address).sync().channel();
            Channel client = new Bootstrap().group(group).channel(LocalChannel.class)
                    .option(ChannelOption.ALLOCATOR, allocator)
                    .handler(framedStrings((ctx, msg) -> replies.add(msg))).connect(address).sync().channel();
            for (int i = 0; i < 50; i++) {
                client.writeAndFlush("message \u00e9 " + i + " " + "y".repeat(i * 37));
            }
            for (int i = 0; i < 50; i++) {
                assertEquals(("message \u00e9 " + i + " " + "y".repeat(i * 37)).toUpperCase(), replies.poll(10, TimeUnit.SECONDS));
                assertSame(serverAlloc, seen.poll(10, TimeUnit.SECONDS));
            }
            assertSame(allocator, client.alloc());
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
        assertNothingLive(allocator);
        allocator.close();
    }

    /** A pipeline of length-framed UTF-8 strings whose every string goes to {@code onString}. */
    private static ChannelInitializer<LocalChannel> framedStrings(BiConsumer<ChannelHandlerContext, String> onString) {
        return new ChannelInitializer<LocalChannel>() {
            @Override
            protected void initChannel(LocalChannel ch) {
                ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 4), new LengthFieldPrepender(4),
                        new StringDecoder(StandardCharsets.UTF_8), new StringEncoder(StandardCharsets.UTF_8),
                        new SimpleChannelInboundHandler<String>() {
                            @Override
                            protected void channelRead0(ChannelHandlerContext ctx, String msg) {
                                onString.accept(ctx, msg);
                            }
                        });
            }
        };
    }

    /** Refusals at a quota and at the ceiling, through every path, leave nothing live or committed behind. */
    @Test
    void refusalsLeaveNothingBehind() {
        for (LimitPolicy policy : new LimitPolicy[] {LimitPolicy.FAIL, LimitPolicy.RETURN_NULL}) {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(256 * 1024).arenas(1)
                    .maxMemory(1 << 20).limitPolicy(policy).quota("q", 100_000).build();
            ByteBufAllocator quota = allocator.forCategory("q");
            List<ByteBuf> live = new ArrayList<>();
            live.add(quota.directBuffer(60_000));
            assertThrows(MemoryLimitException.class, () -> quota.directBuffer(60_000));
            assertThrows(MemoryLimitException.class, () -> quota.ioBuffer(60_000));
            assertThrows(MemoryLimitException.class, () -> quota.buffer(60_000));
            ByteBuf growing = quota.directBuffer(1000, 200_000).writeZero(1000);
            live.add(growing);
            assertThrows(MemoryLimitException.class, () -> growing.writeZero(90_000));
            assertEquals(1000, growing.capacity());
            assertEquals(1000, growing.writerIndex());
            CompositeByteBuf composite = quota.compositeDirectBuffer(2);
            live.add(composite);
            composite.addComponent(true, quota.directBuffer(10_000).writeZero(10_000));
            composite.addComponent(true, quota.directBuffer(10_000).writeZero(10_000));
            ByteBuf third = quota.directBuffer(1000).writeZero(1000);
            assertThrows(MemoryLimitException.class, () -> composite.addComponent(true, third)); // consolidation refused
            assertThrows(IllegalArgumentException.class, () -> allocator.directBuffer(M));
            assertThrows(MemoryLimitException.class, () -> allocator.directBuffer(2 << 20));
            assertThrows(MemoryLimitException.class, () -> {
                for (int i = 0; i < 100; i++) {
                    live.add(allocator.directBuffer(50_000));
                }
            });
            assertNull(allocator.tryDirectBuffer(50_000));
            SequentialByteBufAllocator sequential = allocator.sequential("s");
            BlockByteBufAllocator blocks = allocator.blocks("b", 16 * 1024, 1);
            assertNull(sequential.tryAllocate(50_000));
            assertNull(blocks.tryAllocate(50_000));
            if (policy == LimitPolicy.FAIL) {
                assertThrows(MemoryLimitException.class, () -> sequential.allocate(50_000));
                assertThrows(MemoryLimitException.class, () -> blocks.allocate(50_000));
            } else {
                assertNull(sequential.allocate(50_000));
                assertNull(blocks.allocate(50_000));
            }
            EmbeddedChannel channel = new EmbeddedChannel(new FixedLengthFrameDecoder(1 << 30));
            channel.config().setAllocator(allocator);
            channel.writeInbound(Unpooled.wrappedBuffer(new byte[100]));
            ByteBuf big = Unpooled.wrappedBuffer(new byte[200_000]);
            DecoderException refused = assertThrows(DecoderException.class, () -> channel.writeInbound(big));
            assertInstanceOf(MemoryLimitException.class, refused.getCause());
            assertEquals(0, big.refCnt());
            assertFalse(channel.finishAndReleaseAll());
            live.forEach(ByteBuf::release);
            allocator.trim();
            assertNothingLive(allocator);
            assertEquals(0, allocator.metric().usedDirectMemory(), allocator.stats()::report);
            allocator.close();
        }
    }

    /** A closed allocator refuses direct memory through every view with IllegalStateException and takes every release back. */
    @Test
    void aClosedAllocatorRefusesEverywhereAndTakesEveryReleaseBack() throws Exception {
        SlabwiseAllocator allocator = small();
        ByteBufAllocator view = allocator.forCategory("view");
        SequentialByteBufAllocator sequential = allocator.sequential("s");
        BlockByteBufAllocator blocks = allocator.blocks("b", 16 * 1024, 1);
        List<ByteBuf> live = new ArrayList<>(List.of(allocator.directBuffer(100), allocator.directBuffer(300_000),
                view.directBuffer(5000), sequential.allocate(100), sequential.tryAllocate(200), blocks.allocate(50_000),
                allocator.heapBuffer(10)));
        ByteBuf sequentialBuf = sequential.allocate(100);
        CompositeByteBuf composite = allocator.compositeDirectBuffer();
        composite.addComponent(true, allocator.directBuffer(10).writeZero(10));
        ByteBuf[] fromOtherThread = new ByteBuf[1];
        Thread other = new Thread(() -> fromOtherThread[0] = view.directBuffer(2000));
        other.start();
        other.join();
        allocator.close();
        for (Supplier<ByteBuf> call : List.<Supplier<ByteBuf>>of(() -> allocator.directBuffer(10), () -> allocator.buffer(0),
                () -> allocator.ioBuffer(), () -> view.directBuffer(10), () -> sequentialBuf.alloc().ioBuffer(10),
                () -> sequential.allocate(10), () -> sequential.tryAllocate(10), () -> blocks.allocate(10),
                () -> blocks.tryAllocate(10), () -> allocator.tryDirectBuffer(10), () -> sequentialBuf.writeZero(5000),
                () -> live.get(0).copy(), () -> composite.writeZero(1000))) {
            assertThrows(IllegalStateException.class, call::get);
        }
        ByteBuf heap = view.heapBuffer(10); // heap buffers are not the pool's
        CompositeByteBuf emptyComposite = sequentialBuf.alloc().compositeBuffer();
        heap.release();
        emptyComposite.release();
        for (ByteBuf buf : live) {
            assertTrue(buf.release());
        }
        assertTrue(sequentialBuf.release());
        assertTrue(composite.release());
        assertTrue(fromOtherThread[0].release());
        assertNothingLive(allocator);
        assertEquals(0, allocator.metric().usedDirectMemory(), allocator.stats()::report);
    }
}
