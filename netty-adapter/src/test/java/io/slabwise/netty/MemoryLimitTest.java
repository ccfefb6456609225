package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoop;
import io.netty.channel.EventLoop;
import io.slabwise.ConcurrentTasks;
import io.slabwise.LimitPolicy;
import io.slabwise.ManualTime;
import io.slabwise.MemoryLimitException;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ceiling on committed bytes, the policies at the limit, and category quotas. */
@Timeout(60)
class MemoryLimitTest {

    private static final int CHUNK = 256 * 1024;

    private static SlabwiseAllocator.Builder small() {
        return SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(2).maxCachedSize(0);
    }

    @Test
    void failPolicyThrowsAnExceptionThatNamesEverything() {
        SlabwiseAllocator allocator = small().maxMemory(2L * CHUNK).build();
        ByteBuf a = allocator.directBuffer(CHUNK);
        ByteBuf b = allocator.directBuffer(CHUNK);
        MemoryLimitException e = assertThrows(MemoryLimitException.class, () -> allocator.directBuffer(100_000));
        assertEquals(MemoryLimitException.Kind.CEILING, e.kind());
        assertEquals("network", e.category());
        assertEquals(100_000, e.requestedSize());
        assertEquals(2L * CHUNK, e.limit());
        String message = e.getMessage();
        for (String part : new String[] {"network", "100000", String.valueOf(2L * CHUNK), "pool committed "}) {
            assertTrue(message.contains(part), message + " lacks " + part);
        }
        assertTrue(allocator.stats().committedBytes() <= 2L * CHUNK);
        a.release();
        b.release();
        ByteBuf c = allocator.directBuffer(100_000); // room again
        c.release();
    }

    @Test
    void hugeRequestsAreBoundedToo() {
        SlabwiseAllocator allocator = small().maxMemory(3L * CHUNK).build();
        assertThrows(MemoryLimitException.class, () -> allocator.directBuffer(4 * CHUNK));
        ByteBuf huge = allocator.directBuffer(2 * CHUNK + 1);
        assertTrue(allocator.stats().committedBytes() <= 3L * CHUNK);
        huge.release();
        assertEquals(0, allocator.stats().committedBytes());
    }

    @Test
    void idleChunksAreReclaimedBeforeRefusing() {
        SlabwiseAllocator allocator = small().maxMemory(2L * CHUNK).maxIdleChunksPerArena(4)
                .dedicatedAbove(CHUNK).build(); // whole-chunk runs, not regions of their own
        ByteBuf a = allocator.directBuffer(CHUNK);
        ByteBuf b = allocator.directBuffer(CHUNK);
        a.release();
        b.release(); // both chunks idle, still committed
        assertEquals(2L * CHUNK, allocator.stats().committedBytes());
        ByteBuf huge = allocator.directBuffer(CHUNK + 1); // needs the idle chunks given back first
        assertTrue(allocator.stats().committedBytes() <= 2L * CHUNK);
        huge.release();
    }

    @Test
    void returnNullPolicyAndTryDirectBuffer() {
        SlabwiseAllocator allocator = small().maxMemory(CHUNK).limitPolicy(LimitPolicy.RETURN_NULL).build();
        ByteBuf a = allocator.directBuffer(CHUNK);
        assertNull(allocator.tryDirectBuffer(1000));
        // Netty's own API cannot return null: it throws under RETURN_NULL
        assertThrows(MemoryLimitException.class, () -> allocator.directBuffer(1000));
        SequentialByteBufAllocator log = allocator.sequential("log_cache");
        assertNull(log.allocate(100));
        BlockByteBufAllocator blocks = allocator.blocks("block_cache", 64 * 1024, 1);
        assertNull(blocks.allocate(100_000));
        a.release();
        ByteBuf b = allocator.tryDirectBuffer(1000);
        assertNotNull(b);
        b.release();
    }

    /** The race checked: a waiting allocation is woken by a release on another thread and then succeeds. */
    @Test
    void waitingRequestSucceedsOnceAnotherThreadReleases() throws Exception {
        SlabwiseAllocator allocator = small().maxMemory(CHUNK).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(Duration.ofSeconds(20)).build();
        ByteBuf held = allocator.directBuffer(CHUNK);
        CountDownLatch waiting = new CountDownLatch(1);
        ExecutorService executor = Executors.newSingleThreadExecutor();
        try {
            Future<ByteBuf> result = executor.submit(() -> {
                waiting.countDown();
                return allocator.directBuffer(CHUNK / 2);
            });
            assertTrue(waiting.await(10, TimeUnit.SECONDS));
            ConcurrentTasks.awaitWaiting(allocator.pool(), 1); // forced: the request is queued before the release
            assertFalse(result.isDone(), "the request waits while the memory is held");
            held.release(); // wakes the waiter
            ByteBuf got = result.get(20, TimeUnit.SECONDS);
            assertEquals(CHUNK / 2, got.capacity());
            got.release();
        } finally {
            executor.shutdownNow();
        }
    }

    /**
     * The race checked: a large request waits at the ceiling; a small request
     * made after it must not overtake it, even though the small one would fit
     * in memory that is free right now. Both are served, the large one first,
     * once the holder releases its memory.
     */
    @Test
    void waitersAreServedInArrivalOrderSoALargeRequestIsNotStarved() throws Exception {
        SlabwiseAllocator allocator = small().maxMemory(3L * CHUNK).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(Duration.ofSeconds(20)).build();
        List<ByteBuf> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            held.add(allocator.directBuffer(CHUNK - 40_000)); // three runs, some room left in each chunk
        }
        CountDownLatch smallServed = new CountDownLatch(1);
        ExecutorService executor = Executors.newFixedThreadPool(2);
        try {
            Future<Boolean> large = executor.submit(() -> {
                ByteBuf buf = allocator.directBuffer(2 * CHUNK); // a huge region: needs the ceiling's room
                boolean smallDone = smallServed.await(20, TimeUnit.SECONDS); // hold it until the small one is served
                buf.release();
                return smallDone;
            });
            ConcurrentTasks.awaitWaiting(allocator.pool(), 1); // the large request is now waiting
            Future<Long> smallOne = executor.submit(() -> {
                ByteBuf buf = allocator.directBuffer(1000); // would fit in a chunk's free room at once
                long hugeLive = allocator.stats().hugeAllocations(); // 1 if the large request was served first
                smallServed.countDown();
                buf.release();
                return hugeLive;
            });
            while (allocator.pool().waitingAllocations() < 2 && !smallOne.isDone()) {
                Thread.onSpinWait();
            }
            assertFalse(smallOne.isDone(), "the small request lined up behind the large one");
            held.forEach(ByteBuf::release);
            assertEquals(1, smallOne.get(20, TimeUnit.SECONDS), "the large request was served first");
            assertTrue(large.get(20, TimeUnit.SECONDS));
        } finally {
            executor.shutdownNow();
        }
        assertEquals(0, allocator.stats().requestedBytes());
    }

    /**
     * A wait runs out when the allocator's ticker passes its deadline, and
     * then fails with the limit exception; the time it waited is the timeout,
     * read on that ticker.
     */
    @Test
    void waitTimesOutWithTheLimitException() throws Exception {
        ManualTime clock = new ManualTime();
        SlabwiseAllocator allocator = small().maxMemory(CHUNK).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(Duration.ofMillis(100)).ticker(clock).scheduler(clock).build();
        ByteBuf held = allocator.directBuffer(CHUNK);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                allocator.directBuffer(1000).release();
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        waiter.start();
        clock.awaitParked(1, waiter);
        assertEquals(1, allocator.pool().waitingAllocations());
        clock.advance(Duration.ofMillis(100));
        waiter.join(TimeUnit.SECONDS.toMillis(10)); // a bound for a wait that ignores the ticker, not a pause
        assertFalse(waiter.isAlive(), "the wait outlived its deadline on the allocator's ticker");
        MemoryLimitException e = assertInstanceOf(MemoryLimitException.class, failure.get());
        assertTrue(e.getMessage().contains("after waiting 100 ms"), e.getMessage());
        assertEquals(TimeUnit.MILLISECONDS.toNanos(100), allocator.pool().limitStats().waitNanos());
        held.release();
    }

    @Test
    void noWaitingOnAnEventLoop() throws Exception {
        SlabwiseAllocator allocator = small().maxMemory(CHUNK).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(Duration.ofSeconds(30)).build();
        ByteBuf held = allocator.directBuffer(CHUNK);
        EventLoop loop = new DefaultEventLoop();
        try {
            io.netty.util.concurrent.Future<ByteBuf> attempt = loop.submit(() -> allocator.directBuffer(1000));
            assertTrue(attempt.await(20, TimeUnit.SECONDS)); // a bound for a broken check, not a pause
            Throwable failure = attempt.cause();
            assertTrue(failure instanceof MemoryLimitException, String.valueOf(failure));
            assertTrue(failure.getMessage().contains("waiting is not allowed"), failure.getMessage());
            assertEquals(0, allocator.pool().limitStats().waits(), "failed fast, without waiting");
        } finally {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
        }
        held.release();
    }

    @Test
    void quotaIsEnforcedAndCanChangeAtRunTime() {
        SlabwiseAllocator allocator = small().quota("block_cache", 64 * 1024).build();
        io.netty.buffer.ByteBufAllocator blocks = allocator.forCategory("block_cache");
        ByteBuf a = blocks.directBuffer(60_000); // reserves 61440 (size class)
        MemoryLimitException e = assertThrows(MemoryLimitException.class, () -> blocks.directBuffer(8_000));
        assertEquals(MemoryLimitException.Kind.QUOTA, e.kind());
        assertEquals("block_cache", e.category());
        assertTrue(e.getMessage().contains("quota 65536"), e.getMessage());
        ByteBuf other = allocator.directBuffer(100_000); // other categories are not affected
        allocator.setQuota("block_cache", 128 * 1024);
        ByteBuf b = blocks.directBuffer(8_000);
        allocator.setQuota("block_cache", 1024);
        assertThrows(MemoryLimitException.class, () -> blocks.directBuffer(16));
        a.release();
        b.release();
        other.release();
        assertThrows(IllegalStateException.class, () -> allocator.setQuota("network", 10));
    }

    /**
     * The race checked: many threads allocating and releasing in every allocator
     * and category at once must never take committed bytes past the ceiling nor
     * a category past its quota; a sampler thread checks both continuously.
     */
    @Test
    void ceilingAndQuotaHoldUnderConcurrentLoadForEveryPolicy() throws Exception {
        for (LimitPolicy policy : LimitPolicy.values()) {
            long ceiling = 24L * CHUNK;
            long quota = 6L * CHUNK;
            SlabwiseAllocator allocator = small().maxMemory(ceiling).limitPolicy(policy).maxCachedSize(32 * 1024)
                    .waitTimeout(Duration.ofMillis(50)).quota("block_cache", quota).build();
            SequentialByteBufAllocator log = allocator.sequential("log_cache");
            BlockByteBufAllocator blocks = allocator.blocks("block_cache", 64 * 1024, 2);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong samples = new AtomicLong();
            AtomicLong violations = new AtomicLong();
            Thread sampler = new Thread(() -> {
                while (!stop.get()) {
                    PoolStats stats = allocator.stats();
                    samples.incrementAndGet();
                    if (stats.committedBytes() > ceiling) {
                        violations.incrementAndGet();
                    }
                    if (stats.category("block_cache") != null && stats.category("block_cache").reserved() > quota) {
                        violations.incrementAndGet();
                    }
                }
            });
            sampler.start();
            ExecutorService workers = Executors.newFixedThreadPool(4);
            List<Future<Long>> results = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int seed = t;
                results.add(workers.submit(() -> {
                    Random random = new Random(seed);
                    List<ByteBuf> held = new ArrayList<>();
                    long refused = 0;
                    for (int i = 0; i < 1500; i++) {
                        ByteBuf buf;
                        try {
                            switch (random.nextInt(4)) {
                                case 0:
                                    buf = log.allocate(1 + random.nextInt(20_000));
                                    break;
                                case 1:
                                    buf = blocks.allocate(1 + random.nextInt(200_000));
                                    break;
                                case 2:
                                    buf = allocator.directBuffer(1 + random.nextInt(CHUNK + 10_000));
                                    break;
                                default:
                                    buf = allocator.forCategory("replication").directBuffer(1 + random.nextInt(5000));
                            }
                        } catch (MemoryLimitException e) {
                            buf = null;
                        }
                        if (buf == null) {
                            refused++;
                        } else {
                            held.add(buf);
                        }
                        if (held.size() > 12 || (buf == null && !held.isEmpty())) {
                            held.remove(random.nextInt(held.size())).release();
                        }
                    }
                    held.forEach(ByteBuf::release);
                    return refused;
                }));
            }
            long refused = 0;
            for (Future<Long> f : results) {
                refused += f.get(120, TimeUnit.SECONDS);
            }
            workers.shutdown();
            assertTrue(workers.awaitTermination(30, TimeUnit.SECONDS));
            stop.set(true);
            sampler.join();
            assertEquals(0, violations.get(), policy + ": limits passed in " + violations.get() + " of " + samples.get() + " samples");
            assertTrue(samples.get() > 0);
            PoolStats end = allocator.stats();
            assertEquals(0, end.requestedBytes(), end::report);
            assertTrue(end.committedBytes() <= ceiling);
            assertTrue(refused >= 0);
        }
    }

    /**
     * Limits at their edges: requests whose reserved size can never fit, from the
     * start or once a quota is lowered under waiting callers, and a failed setQuota.
     */
    @Nested
    @Timeout(60)
    class EdgeCases {

        private static final Duration WAIT = Duration.ofSeconds(4);

        /**
         * 99 000 bytes reserve 106 496 (13 pages): more than a 100 000-byte quota
         * can ever hold. Under WAIT it must fail at once as never satisfiable, as
         * a request of 100 001 bytes does, not after the whole wait.
         */
        @Test
        void aRequestWhoseReservationExceedsTheQuotaFailsAtOnce() {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT)
                    .quota("block_cache", 100_000).build();
            ByteBufAllocator view = allocator.forCategory("block_cache");
            assertTrue(allocator.pool().reservedSizeFor(99_000) > 100_000);
            assertFailsAtOnce(allocator, () -> view.directBuffer(99_000));
            allocator.close();
        }

        /** The same at the ceiling: 4 999 000 bytes take a region of 5 005 312, past a 5 000 000-byte ceiling. */
        @Test
        void aRequestWhoseReservationExceedsTheCeilingFailsAtOnce() {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT)
                    .maxMemory(5_000_000).build();
            assertTrue(allocator.pool().reservedSizeFor(4_999_000) > 5_000_000);
            assertFailsAtOnce(allocator, () -> allocator.directBuffer(4_999_000));
            allocator.close();
        }

        /** The request fails as never satisfiable, without waiting at all. */
        private static void assertFailsAtOnce(SlabwiseAllocator allocator, Executable request) {
            MemoryLimitException e = assertThrows(MemoryLimitException.class, request);
            assertTrue(e.getMessage().contains("never"), e.getMessage());
            assertEquals(0, allocator.pool().limitStats().waits(),
                    "waited for a request no release can make room for: " + e.getMessage());
        }

        /**
         * Two callers wait under a full 1 MiB quota, one at the head of the line
         * and one behind it. Lowering the quota to 256 KiB leaves neither request
         * any hope: both fail as never satisfiable as soon as it changes, not
         * after the 60-second wait.
         */
        @Test
        void waitersFailOnceTheQuotaIsLoweredBelowTheirRequests() throws Exception {
            SlabwiseAllocator allocator = waitingUnderAQuota();
            ByteBufAllocator view = allocator.forCategory("block_cache");
            ByteBuf held = view.directBuffer(768 << 10);
            ExecutorService waiters = Executors.newFixedThreadPool(2);
            try {
                List<CompletableFuture<ByteBuf>> line = lineUp(allocator, view, waiters, 512 << 10, 384 << 10);
                CompletableFuture<ByteBuf> head = line.get(0);
                CompletableFuture<ByteBuf> behind = line.get(1);

                allocator.setQuota("block_cache", 256 << 10);
                assertNeverSatisfiable(head); // on a clock that stands still: no timeout can end their waits
                assertNeverSatisfiable(behind);
                assertEquals(0, allocator.pool().waitingAllocations());
                assertEquals(768 << 10, allocator.pool().reservedBytes(), "the failed requests took nothing");
            } finally {
                waiters.shutdownNow();
                held.release();
                allocator.close();
            }
        }

        /**
         * A quota lowered, but not below the request at the head of the line,
         * leaves that request waiting, and the next release serves it; the
         * request behind it, which the new quota cannot hold, fails at once
         * although its turn has not come.
         */
        @Test
        void theWaiterTheLoweredQuotaHoldsIsServedWhileTheOneBehindItFails() throws Exception {
            SlabwiseAllocator allocator = waitingUnderAQuota();
            ByteBufAllocator view = allocator.forCategory("block_cache");
            ByteBuf held = view.directBuffer(960 << 10);
            ExecutorService waiters = Executors.newFixedThreadPool(2);
            try {
                List<CompletableFuture<ByteBuf>> line = lineUp(allocator, view, waiters, 128 << 10, 640 << 10);
                CompletableFuture<ByteBuf> head = line.get(0);
                CompletableFuture<ByteBuf> behind = line.get(1);

                allocator.setQuota("block_cache", 256 << 10);
                assertNeverSatisfiable(behind);
                assertFalse(head.isDone(), "a request the new quota can hold must not fail");
                assertEquals(1, allocator.pool().waitingAllocations());
                held.release();
                ByteBuf served = head.get(30, TimeUnit.SECONDS);
                assertEquals(128 << 10, served.capacity());
                served.release();
            } finally {
                waiters.shutdownNow();
                allocator.close();
            }
        }

        /**
         * An allocator whose {@code block_cache} category has a 1 MiB quota, under
         * which callers wait up to 60 s of a clock that stands still: only a
         * release or a change of the quota ends their waits.
         */
        private static SlabwiseAllocator waitingUnderAQuota() {
            ManualTime clock = new ManualTime();
            return SlabwiseAllocator.builder().limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(60))
                    .ticker(clock).scheduler(clock).quota("block_cache", 1 << 20).build();
        }

        /** Starts one caller per request, each on its own thread, and returns once each waits, in that order in line. */
        private static List<CompletableFuture<ByteBuf>> lineUp(SlabwiseAllocator allocator, ByteBufAllocator view,
                                                               ExecutorService threads, int... requests) {
            List<CompletableFuture<ByteBuf>> line = new ArrayList<>();
            for (int bytes : requests) {
                line.add(CompletableFuture.supplyAsync(() -> view.directBuffer(bytes), threads));
                ConcurrentTasks.awaitWaiting(allocator.pool(), line.size());
            }
            return line;
        }

        private static void assertNeverSatisfiable(CompletableFuture<ByteBuf> request) throws Exception {
            ExecutionException e = assertThrows(ExecutionException.class, () -> request.get(30, TimeUnit.SECONDS));
            MemoryLimitException refusal = assertInstanceOf(MemoryLimitException.class, e.getCause());
            assertTrue(refusal.getMessage().contains("never"), refusal.getMessage());
            assertTrue(refusal.getMessage().contains("262144"), "names the new quota: " + refusal.getMessage());
        }

        /** A refused setQuota (a typo, a category without a quota) must not leave a new category behind. */
        @Test
        void setQuotaOfAnUnknownCategoryAddsNoCategory() {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().quota("block_cache", 1 << 20).build();
            List<?> before = allocator.pool().categories();
            assertThrows(IllegalStateException.class, () -> allocator.setQuota("blok_cache", 1 << 20));
            assertEquals(before, allocator.pool().categories(), "a failed setQuota created a category (one of 64, forever)");
            allocator.close();
        }
    }
}
