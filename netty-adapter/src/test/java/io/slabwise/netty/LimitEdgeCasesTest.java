package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.slabwise.ConcurrentTasks;
import io.slabwise.LimitPolicy;
import io.slabwise.ManualTime;
import io.slabwise.MemoryLimitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Limits at their edges: requests whose reserved size can never fit, from the
 * start or once a quota is lowered under waiting callers, and a failed setQuota.
 */
@Timeout(60)
class LimitEdgeCasesTest {

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
