package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.DefaultEventLoop;
import io.netty.channel.EventLoop;
import io.slabwise.LimitPolicy;
import io.slabwise.MemoryLimitException;
import io.slabwise.PressureConfig;
import io.slabwise.PressureStats;
import io.slabwise.Scheduler;
import io.slabwise.Shrinker;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The caches' shrinkers: the log cache drops its oldest batches, the block
 * cache its least recently read blocks, each only with its lock taken without
 * waiting, releasing what it drops; readers keep what they hold; an event
 * loop shrinks inline within its bounds and never waits; and the accounting
 * stays exact while appends, reads and network bursts race.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CacheShrinkerTest {

    private static final int KIB = 1024;
    private static final int CHUNK = 256 * KIB;
    private static final long CEILING = 16L * CHUNK;
    private static final int BLOCK = 64 * KIB;
    /** The pool's background work never runs: every shrink here is one the test caused. */
    private static final Scheduler NEVER = (task, period) -> () -> { };

    private static SlabwiseAllocator.Builder builder() {
        return SlabwiseAllocator.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxMemory(CEILING)
                .limitPolicy(LimitPolicy.FAIL).scheduler(NEVER);
    }

    private final SlabwiseAllocator allocator = builder().build();

    /** A heap batch of {@code size} bytes starting with {@code offset}. */
    private static ByteBuf batch(int size, long offset) {
        return Unpooled.buffer(size).writerIndex(size).setLong(0, offset);
    }

    private static void load(BlockCache cache, String key, int size) {
        ByteBuf b = cache.getOrLoad(key, size, (k, buf) -> buf.writerIndex(size).setInt(0, k.hashCode()));
        assertNotNull(b, key);
        assertEquals(key.hashCode(), b.getInt(0));
        b.release();
    }

    private long requested(String category) {
        return allocator.stats().category(category).requested();
    }

    /** Network buffers of 64 KiB until {@code bytes} are held; each one past the ceiling shrinks the caches. */
    private static List<ByteBuf> burst(ByteBufAllocator network, long bytes) {
        List<ByteBuf> held = new ArrayList<>();
        for (long taken = 0; taken < bytes; taken += 64 * KIB) {
            held.add(network.directBuffer(64 * KIB));
        }
        return held;
    }

    @Test
    void registeredWhileACacheHasJoinedAndOnlyForItsCategory() {
        CacheShrinker shrinker = new CacheShrinker(allocator, "log_cache");
        assertEquals(0, shrinker.caches());
        LogCache first = new LogCache(allocator.sequential("log_cache"), CHUNK, null, shrinker);
        LogCache second = new LogCache(allocator.sequential("log_cache"), CHUNK, null, shrinker);
        assertEquals(2, shrinker.caches());
        assertSame(shrinker.shrinker(), allocator.setShrinker("log_cache", shrinker.shrinker()), "registered once");
        first.append(0, batch(1000, 0));
        second.append(0, batch(3000, 0));
        assertEquals(4000, shrinker.reclaimable(), "one counter over both partitions");
        first.close();
        first.close();
        assertEquals(3000, shrinker.reclaimable());
        second.close();
        assertEquals(0, shrinker.caches());
        assertNull(allocator.setShrinker("log_cache", null), "the last cache to leave unregistered it");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BlockCache(allocator.blocks("block_cache", BLOCK, 1), CHUNK, null, shrinker));
        assertTrue(e.getMessage().contains("block_cache"), e.getMessage());
        CacheRelocator wrongRelocator = new CacheRelocator(allocator, "network");
        assertThrows(IllegalArgumentException.class,
                () -> new LogCache(allocator.sequential("log_cache"), CHUNK, wrongRelocator, shrinker));
        assertEquals(0, shrinker.caches(), "a cache refused by its relocator left the shrinker");
    }

    /**
     * A network burst at the ceiling makes the log cache drop its oldest
     * batches: what stays is the newest offsets without a gap, every drop is
     * counted as a shrink eviction, and the category's bytes are the cache's.
     */
    @Test
    void theLogCacheDropsItsOldestFirst() {
        CacheShrinker shrinker = new CacheShrinker(allocator, "log_cache");
        LogCache log = new LogCache(allocator.sequential("log_cache"), CEILING, null, shrinker);
        Random random = new Random(21);
        long offset = 0;
        while (allocator.stats().committedBytes() < CEILING - CHUNK) {
            assertTrue(log.append(offset, batch(1024 + random.nextInt(16 * KIB), offset)));
            offset++;
        }
        assertEquals(0, log.evictions());
        long newest = log.newestOffset();
        List<ByteBuf> held = burst(allocator.forCategory("network"), CEILING / 4);

        long dropped = log.oldestOffset();
        assertTrue(dropped > 0, "the burst made the cache shrink");
        assertEquals(newest, log.newestOffset(), "the newest batch stays");
        assertEquals(log.size(), log.newestOffset() - log.oldestOffset() + 1, "what stays is the newest, gap-free");
        assertEquals(dropped, log.shrinkEvictions(), "every batch before the oldest left by shrinking");
        assertEquals(dropped, log.evictions());
        assertNull(log.read(dropped - 1));
        ByteBuf oldest = log.read(dropped);
        assertEquals(dropped, oldest.getLong(0));
        oldest.release();
        assertEquals(log.bytes(), requested("log_cache"));
        assertEquals(log.bytes(), shrinker.reclaimable());
        PressureStats.CategoryPressure pressure = allocator.pool().pressureStats().category("log_cache");
        assertTrue(pressure.freed() > 0 && pressure.calls() > 0, pressure::toString);
        held.forEach(ByteBuf::release);
        log.close();
        assertEquals(0, allocator.stats().requestedBytes());
    }

    /**
     * The block cache's shrinker drops the least recently read blocks first: a
     * read refreshes a block, so after reading the blocks in a seeded order
     * the shrink takes the first ones read, in that order, and no other.
     */
    @Test
    void theBlockCacheDropsTheLeastRecentlyReadFirst() {
        CacheShrinker shrinker = new CacheShrinker(allocator, "block_cache");
        BlockCache blocks = new BlockCache(allocator.blocks("block_cache", BLOCK, 1), CEILING, null, shrinker);
        List<String> keys = new ArrayList<>();
        for (int k = 0; k < 12; k++) {
            keys.add("block-" + k);
            load(blocks, "block-" + k, 2 * BLOCK);
        }
        Collections.shuffle(keys, new Random(22));
        for (String key : keys) { // this order is now the LRU order
            blocks.get(key).release();
        }
        long hits = blocks.hits();

        assertEquals(5L * 2 * BLOCK, shrinker.shrinker().shrink(4L * 2 * BLOCK + 1), "whole blocks, up to the ask");
        for (int i = 0; i < keys.size(); i++) {
            assertEquals(i >= 5, blocks.contains(keys.get(i)), keys.get(i) + " read " + i + "th");
        }
        assertEquals(5, blocks.shrinkEvictions());
        assertEquals(7L * 2 * BLOCK, blocks.bytes());
        assertEquals(blocks.bytes(), requested("block_cache"));
        assertEquals(blocks.bytes(), shrinker.reclaimable());
        assertEquals(hits, blocks.hits(), "shrinking is no lookup");

        blocks.get(keys.get(5)).release(); // refreshed: now the most recently used
        assertEquals(2L * 2 * BLOCK, shrinker.shrinker().shrink(2L * 2 * BLOCK));
        assertTrue(blocks.contains(keys.get(5)), "a read refreshed it");
        assertTrue(!blocks.contains(keys.get(6)) && !blocks.contains(keys.get(7)));
        blocks.close();
        assertEquals(0, shrinker.shrinker().shrink(BLOCK), "an empty cache frees nothing");
        assertEquals(0, requested("block_cache"));
    }

    /**
     * A reader that holds a batch or a block when the shrinker drops it keeps
     * reading it; its memory stays accounted until the reader releases it, and
     * then goes back.
     */
    @Test
    void aReaderHoldingADroppedEntryStillReadsItAndItsMemoryGoesBackOnRelease() {
        CacheShrinker logShrinker = new CacheShrinker(allocator, "log_cache");
        CacheShrinker blockShrinker = new CacheShrinker(allocator, "block_cache");
        LogCache log = new LogCache(allocator.sequential("log_cache"), CEILING, null, logShrinker);
        BlockCache blocks = new BlockCache(allocator.blocks("block_cache", BLOCK, 1), CEILING, null, blockShrinker);
        for (long o = 0; o < 10; o++) {
            assertTrue(log.append(o, batch(10_000, o)));
        }
        load(blocks, "cold", 3 * BLOCK);
        load(blocks, "warm", 3 * BLOCK);
        ByteBuf batch = log.read(0);
        ByteBuf block = blocks.get("cold");
        blocks.get("warm").release();

        assertEquals(10_000, logShrinker.shrinker().shrink(1));
        assertEquals(3L * BLOCK, blockShrinker.shrinker().shrink(1));
        assertNull(log.read(0));
        assertTrue(!blocks.contains("cold") && blocks.contains("warm"));
        assertEquals(0L, batch.getLong(0), "the reader still reads the dropped batch");
        assertEquals("cold".hashCode(), block.getInt(0), "and the dropped block");
        assertEquals(log.bytes() + 10_000, requested("log_cache"), "held by the reader, still accounted");
        assertEquals(blocks.bytes() + 3L * BLOCK, requested("block_cache"));
        assertEquals(1, batch.refCnt());
        batch.release();
        block.release();
        assertEquals(log.bytes(), requested("log_cache"), "released by the reader: its memory went back");
        assertEquals(blocks.bytes(), requested("block_cache"));
        log.close();
        blocks.close();
        assertEquals(0, allocator.stats().requestedBytes());
    }

    /**
     * A shrink never waits for a cache's lock: with a block load in progress
     * on another thread it answers busy at once, and so does a shrink from
     * inside the cache on the thread that holds the lock (an append or a load
     * at the ceiling). The other caches still give.
     */
    @Test
    void aShrinkAnswersBusyWhenTheLockIsHeldByAnotherThreadOrByTheCaller() throws Exception {
        CacheShrinker blockShrinker = new CacheShrinker(allocator, "block_cache");
        BlockCache blocks = new BlockCache(allocator.blocks("block_cache", BLOCK, 1), CEILING, null, blockShrinker);
        load(blocks, "a", 2 * BLOCK);
        AtomicLong insideAnswer = new AtomicLong();
        ByteBuf loaded = blocks.getOrLoad("b", BLOCK, (k, buf) -> {
            insideAnswer.set(blockShrinker.shrinker().shrink(BLOCK)); // the caller holds the lock
            buf.writerIndex(BLOCK);
        });
        loaded.release();
        assertEquals(Shrinker.BUSY, insideAnswer.get(), "held by the calling thread");
        assertTrue(blocks.contains("a"), "nothing dropped from inside the cache");

        CountDownLatch loading = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread loader = new Thread(() -> {
            try {
                blocks.getOrLoad("c", BLOCK, (k, buf) -> {
                    loading.countDown();
                    try {
                        finish.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    buf.writerIndex(BLOCK);
                }).release();
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        loader.start();
        try {
            loading.await();
            // on a third thread, bounded: a shrink that waited for the lock would fail here, not hang the test
            long answer = CompletableFuture.supplyAsync(() -> blockShrinker.shrinker().shrink(BLOCK),
                    task -> new Thread(task, "shrinking").start()).get(10, TimeUnit.SECONDS);
            assertEquals(Shrinker.BUSY, answer, "held by another thread: no wait");
        } finally {
            finish.countDown();
            loader.join();
        }
        assertNull(failure.get());
        assertTrue(blocks.contains("a"), "nothing dropped while it was busy");
        assertEquals(0, blocks.shrinkEvictions());
        assertEquals(2L * BLOCK, blockShrinker.shrinker().shrink(BLOCK), "once the load is done it gives");
        blocks.close();
    }

    /**
     * Network buffers taken on a Netty event loop at the ceiling shrink the
     * caches inline: each allocation asks for no more than the inline bytes,
     * a cache busy with a load is skipped (the event loop never waits for it,
     * it finishes while the load is still held), and once nothing is left to
     * drop the allocation fails at once, although the policy is to wait.
     */
    @Test
    void onAnEventLoopAShrinkNeverWaitsAndStaysWithinTheInlineBounds() throws Exception {
        long inline = 2L * CHUNK;
        SlabwiseAllocator pool = builder().limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(50))
                .pressure(PressureConfig.builder().inline(inline, Duration.ofSeconds(1)).build()).build();
        LogCache log = new LogCache(pool.sequential("log_cache"), CEILING, null, new CacheShrinker(pool, "log_cache"));
        BlockCache blocks = new BlockCache(pool.blocks("block_cache", BLOCK, 1), CEILING, null,
                new CacheShrinker(pool, "block_cache"));
        for (int k = 0; k < 8; k++) {
            load(blocks, "block-" + k, 2 * BLOCK);
        }
        for (long o = 0; pool.stats().committedBytes() < CEILING - CHUNK; o++) {
            assertTrue(log.append(o, batch(8 * KIB, o)));
        }
        CountDownLatch loading = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        Thread loader = new Thread(() -> blocks.getOrLoad("slow", BLOCK, (k, buf) -> {
            loading.countDown();
            try {
                finish.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            buf.writerIndex(BLOCK);
        }).release());
        loader.start();
        EventLoop loop = new DefaultEventLoop();
        ByteBufAllocator network = pool.forCategory("network");
        List<ByteBuf> held = new ArrayList<>();
        try {
            loading.await();
            List<Long> askedPerAllocation = loop.submit(() -> {
                List<Long> asked = new ArrayList<>();
                for (int i = 0; i < 64; i++) {
                    long before = asked(pool);
                    try {
                        held.add(network.directBuffer(64 * KIB));
                    } catch (MemoryLimitException e) {
                        asked.add(asked(pool) - before);
                        return asked; // nothing left to drop but the busy cache: failed at once, no wait
                    }
                    asked.add(asked(pool) - before);
                }
                return asked;
            }).get(30, TimeUnit.SECONDS);
            assertTrue(finish.getCount() == 1 && loader.isAlive(), "the load was still held throughout");
            assertTrue(askedPerAllocation.stream().anyMatch(a -> a > 0), "the event loop shrank");
            for (long asked : askedPerAllocation) {
                assertTrue(asked <= inline + 2, "asked " + asked + " inline, bound " + inline); // a byte per share
            }
            assertTrue(log.shrinkEvictions() > 0);
            assertTrue(pool.pool().pressureStats().category("block_cache").busy() > 0);
        } finally {
            finish.countDown();
            loader.join();
            loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
        assertEquals(0, blocks.shrinkEvictions(), "the busy cache was skipped, never waited for"); // its lock is free now
        held.forEach(ByteBuf::release);
        log.close();
        blocks.close();
        assertEquals(0, pool.stats().requestedBytes());
        pool.close();
    }

    /** The bytes the pool asked every shrinker for so far. */
    private static long asked(SlabwiseAllocator pool) {
        long sum = 0;
        for (PressureStats.CategoryPressure c : pool.pool().pressureStats().categories()) {
            sum += c.asked();
        }
        return sum;
    }

    /**
     * The race checked: two partitions of the log cache appended to on their
     * own threads, a tail reader, a block reader loading misses, and two
     * network threads taking and releasing 64 KiB buffers at the ceiling,
     * which makes both caches shrink from those threads while the others
     * append and read. Readers always see the right bytes; at the end every
     * category's requested bytes equal what its caches hold, the shrinkers'
     * counts equal the caches' bytes, and once everything is released
     * nothing is left requested.
     */
    @Test
    void appendsReadsAndShrinksOnManyThreadsKeepTheAccountingExact() throws Exception {
        CacheShrinker logShrinker = new CacheShrinker(allocator, "log_cache");
        CacheShrinker blockShrinker = new CacheShrinker(allocator, "block_cache");
        List<LogCache> partitions = List.of(
                new LogCache(allocator.sequential("log_cache"), CEILING / 2, null, logShrinker),
                new LogCache(allocator.sequential("log_cache"), CEILING / 2, null, logShrinker));
        BlockCache blocks = new BlockCache(allocator.blocks("block_cache", BLOCK, 1), CEILING / 2, null, blockShrinker);
        List<AtomicLong> next = List.of(new AtomicLong(), new AtomicLong());
        ByteBufAllocator network = allocator.forCategory("network");
        int threads = 6;
        CyclicBarrier start = new CyclicBarrier(threads);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong networkRefused = new AtomicLong();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int self = t;
            workers.add(new Thread(() -> {
                Random random = new Random(30 + self);
                try {
                    start.await();
                    if (self < 2) { // a partition's producer
                        for (int i = 0; i < 3000; i++) {
                            long o = next.get(self).get();
                            partitions.get(self).append(o, batch(64 + random.nextInt(12 * KIB), o));
                            next.get(self).set(o + 1);
                        }
                    } else if (self == 2) { // a tail reader
                        for (int i = 0; i < 6000; i++) {
                            int p = random.nextInt(2);
                            long o = next.get(p).get() - 1 - random.nextInt(50);
                            ByteBuf b = o < 0 ? null : partitions.get(p).read(o);
                            if (b != null) {
                                assertEquals(o, b.getLong(0));
                                b.release();
                            }
                        }
                    } else if (self == 3) { // a block reader
                        for (int i = 0; i < 3000; i++) {
                            int key = (int) (Math.pow(random.nextDouble(), 2) * 60);
                            int size = BLOCK / 2 + (key % 5) * BLOCK;
                            ByteBuf b = blocks.getOrLoad("k" + key, size,
                                    (k, buf) -> buf.writerIndex(size).setInt(0, k.hashCode()).setInt(size - 4, size));
                            if (b != null) {
                                assertEquals(("k" + key).hashCode(), b.getInt(0));
                                assertEquals(size, b.getInt(size - 4));
                                b.release();
                            }
                        }
                    } else { // network bursts: hold up to a quarter of the ceiling, then release it
                        ArrayDeque<ByteBuf> window = new ArrayDeque<>();
                        for (int i = 0; i < 1500; i++) {
                            try {
                                window.add(network.directBuffer(64 * KIB));
                            } catch (MemoryLimitException e) {
                                networkRefused.incrementAndGet(); // the caches were busy or had nothing left
                            }
                            if (window.size() * 64L * KIB >= CEILING / 8 || random.nextInt(8) == 0) {
                                while (!window.isEmpty()) {
                                    window.poll().release();
                                }
                            }
                        }
                        window.forEach(ByteBuf::release);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "worker-" + t));
        }
        workers.forEach(Thread::start);
        for (Thread w : workers) {
            w.join();
        }
        assertNull(failure.get(), () -> "a worker failed: " + failure.get());
        long logBytes = partitions.get(0).bytes() + partitions.get(1).bytes();
        assertEquals(logBytes, requested("log_cache"));
        assertEquals(blocks.bytes(), requested("block_cache"));
        assertEquals(0, requested("network"));
        assertEquals(logBytes, logShrinker.reclaimable());
        assertEquals(blocks.bytes(), blockShrinker.reclaimable());
        assertTrue(partitions.get(0).shrinkEvictions() + partitions.get(1).shrinkEvictions() + blocks.shrinkEvictions() > 0,
                "the network threads made the caches shrink");
        assertTrue(allocator.stats().committedBytes() <= CEILING);
        partitions.forEach(LogCache::close);
        blocks.close();
        assertEquals(0, allocator.stats().requestedBytes());
        assertEquals(0, allocator.stats().liveAllocations());
    }
}
