package io.slabwise;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Admission at the ceiling and the quotas. Under {@link LimitPolicy#WAIT} a
 * caller waits only behind callers that compete for the same resource (the
 * ceiling, or its category's quota), is served in the order it lined up, and
 * a request no release could ever satisfy fails at once. The pools run on
 * {@link ManualTime}: a clock that stands still, so no wait here ends by a
 * timeout however slow the machine, or one on which every wait runs out at
 * once, so a request that waited instead of failing at once shows at once.
 *
 * <p>The nested classes: a policy changed while a caller lines up, a waiter
 * at close, and waits of {@link MemoryPool#tryAllocate} on the pool's ticker.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AdmissionTest {

    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    /** The wait timeout; on the pools' manual clocks it runs out only when a test says so. */
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final ManualTime time = new ManualTime();

    private static MemoryPool pool(ManualTime time) {
        return new MemoryPool(PoolConfig.builder().chunkSize(MIB).arenas(1).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(WAIT).maxMemory(16L * MIB).quota("small", MIB).ticker(time).scheduler(time)
                .chunkSource(ChunkSource.direct()).build());
    }

    @Test
    void aRequestLargerThanItsQuotaOrTheCeilingFailsAtOnce() {
        MemoryPool pool = pool(ManualTime.waitsRunOut()); // a request that waited would time out: it says so
        MemoryLimitException quota = assertThrows(MemoryLimitException.class,
                () -> pool.allocate(pool.category("small"), 2 * MIB, new Allocation()));
        assertEquals(MemoryLimitException.Kind.QUOTA, quota.kind());
        assertTrue(quota.getMessage().contains("can never be satisfied"), quota.getMessage());
        assertTrue(quota.getMessage().contains("small") && quota.getMessage().contains(String.valueOf(2 * MIB)));
        MemoryLimitException ceiling = assertThrows(MemoryLimitException.class,
                () -> pool.allocate(32 * MIB, new Allocation()));
        assertEquals(MemoryLimitException.Kind.CEILING, ceiling.kind());
        assertTrue(ceiling.getMessage().contains("can never be satisfied"), ceiling.getMessage());
        assertEquals(0, pool.limitStats().waits(), "neither waited");
        assertEquals(2, pool.limitStats().refusals());
        assertEquals(0, pool.committedBytes());
    }

    /**
     * One category waits for its quota; a request in another category, with
     * memory free under the ceiling, is served at once and does not line up;
     * a second request of the waiting category does line up, and both are
     * served in order once the quota has room.
     */
    @Test
    void aQuotaWaiterHoldsBackOnlyItsOwnCategory() throws Exception {
        MemoryPool pool = pool(time);
        Category small = pool.category("small");
        Allocation held = new Allocation();
        pool.allocate(small, 900 * KIB, held); // reserves 896 KiB + rounding, leaving ~100 KiB of the quota
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation first = new Allocation();
        Thread large = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(small, 200 * KIB, first), failure);
        ConcurrentTasks.awaitWaiting(pool, 1);

        Allocation other = new Allocation();
        assertTrue(pool.allocate(1 * KIB, other), "another category is served at once");
        assertEquals(1, pool.waitingAllocations(), "and did not line up");
        pool.free(other);

        Allocation second = new Allocation();
        Thread tiny = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(small, 1 * KIB, second), failure);
        ConcurrentTasks.awaitWaiting(pool, 2); // fits the quota now, but waits behind the 200 KiB request of its category
        assertTrue(!second.isLive());

        pool.free(held);
        large.join();
        tiny.join();
        assertNull(failure.get());
        assertTrue(first.isLive() && second.isLive());
        pool.free(first);
        pool.free(second);
        assertEquals(0, pool.requestedBytes());
    }

    /**
     * A caller of a category whose quota had room lines up for the ceiling;
     * by its turn another allocation has filled the quota. It then waits for
     * its quota, and the caller behind it in the ceiling's line, which needs
     * only room under the ceiling, is served without waiting for it.
     */
    @Test
    void aCallerRefusedByItsQuotaAtTheHeadOfTheCeilingLineLetsTheNextOneThrough() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).dedicatedAbove(MIB)
                .arenas(1).limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT).maxMemory(4L * MIB).quota("q", MIB)
                .ticker(time).scheduler(time).chunkSource(ChunkSource.direct()).build());
        Category q = pool.category("q");
        Allocation[] held = new Allocation[3];
        for (int i = 0; i < held.length; i++) {
            held[i] = new Allocation();
            pool.allocate(MIB, held[i]); // a whole chunk each
        }
        Allocation q1 = new Allocation();
        pool.allocate(q, MIB / 2, q1); // half of the fourth chunk: the ceiling is reached, with 512 KiB free in it
        assertEquals(4L * MIB, pool.committedBytes());

        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation n1 = new Allocation();
        Thread first = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(600 * KIB, n1), failure);
        ConcurrentTasks.awaitWaiting(pool, 1); // needs a new chunk: waits for the ceiling
        Allocation q2 = new Allocation();
        Thread quotaBound = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(q, MIB / 4, q2), failure);
        ConcurrentTasks.awaitWaiting(pool, 2); // its quota has room: lines up for the ceiling
        Allocation n2 = new Allocation();
        Thread second = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(MIB / 4, n2), failure);
        ConcurrentTasks.awaitWaiting(pool, 3);
        Allocation q3 = new Allocation();
        assertTrue(pool.tryAllocate(q, MIB / 2, q3, true), "the free half of the fourth chunk: a try-allocate never lines up");

        pool.free(held[0]); // a chunk's worth: n1, then n2 fit in it; q2's quota is full
        first.join();
        second.join();
        assertNull(failure.get());
        assertTrue(n1.isLive() && n2.isLive(), "both served");
        assertTrue(quotaBound.isAlive() && !q2.isLive(), "q2 still waits, for its quota");
        assertEquals(1, pool.waitingAllocations());

        pool.free(q3);
        quotaBound.join();
        assertNull(failure.get());
        for (Allocation a : new Allocation[] {n1, n2, q1, q2, held[1], held[2]}) {
            pool.free(a);
        }
        assertEquals(0, pool.requestedBytes());
        assertEquals(0, pool.waitingAllocations());
    }

    /**
     * Callers waiting at the ceiling are served first come, first served:
     * each chunk given back serves the caller at the head of the line, never
     * one that lined up after it, and the others keep waiting in order.
     */
    @Test
    void callersWaitingAtTheCeilingAreServedInTheOrderTheyLinedUp() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).dedicatedAbove(MIB)
                .arenas(1).limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT).maxMemory(4L * MIB)
                .ticker(time).scheduler(time).chunkSource(ChunkSource.direct()).build());
        Allocation[] held = new Allocation[4];
        for (int i = 0; i < held.length; i++) {
            held[i] = new Allocation();
            pool.allocate(MIB, held[i]); // a whole chunk each: the ceiling is reached
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation[] served = new Allocation[3];
        Thread[] waiters = new Thread[served.length];
        for (int i = 0; i < served.length; i++) {
            Allocation out = served[i] = new Allocation();
            // each needs a chunk of its own: 600 KiB leave too little in one for the next
            waiters[i] = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(600 * KIB, out), failure);
            ConcurrentTasks.awaitWaiting(pool, i + 1); // in line before the next one starts
        }
        for (int i = 0; i < served.length; i++) {
            pool.free(held[i]);
            waiters[i].join(TimeUnit.SECONDS.toMillis(10)); // a bound for a head that is not served, not a pause
            assertFalse(waiters[i].isAlive(), "caller " + i + ", at the head of the line, was not served");
            assertTrue(served[i].isLive());
            for (int later = i + 1; later < served.length; later++) {
                assertFalse(served[later].isLive(), "caller " + later + " was served before caller " + i);
            }
            assertEquals(served.length - 1 - i, pool.waitingAllocations());
        }
        assertNull(failure.get());
        assertEquals(0, time.read(), "no wait ran out: the clock never moved");
        for (Allocation a : served) {
            pool.free(a);
        }
        pool.free(held[3]);
        assertEquals(0, pool.requestedBytes());
    }

    /**
     * While a category has a relocator, the last chunk under the ceiling is
     * kept for compactions: a request that only that chunk could hold fails
     * at once, saying so, instead of waiting on an empty pool.
     */
    @Test
    void aRequestOnlyTheCompactionReserveCouldHoldFailsAtOnce() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).arenas(1).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(WAIT).maxMemory(4L * MIB).chunkSource(ChunkSource.direct()).build());
        pool.setRelocator("cache", evacuation -> { });
        MemoryLimitException e = assertThrows(MemoryLimitException.class,
                () -> pool.allocate(3 * MIB + 512 * KIB, new Allocation()));
        assertEquals(MemoryLimitException.Kind.CEILING, e.kind());
        assertTrue(e.getMessage().contains("can never be satisfied") && e.getMessage().contains("kept for compactions"),
                e.getMessage());
        Allocation fits = new Allocation();
        pool.allocate(3 * MIB, fits); // what the reserve leaves is still served
        pool.free(fits);
        assertEquals(0, pool.waitingAllocations());
    }

    /**
     * The sequential allocator and the block pool round requests up too (a
     * slice to 8 bytes, a large request to whole pages, a payload to whole
     * mini-blocks, and sub-blocks are cut from whole blocks): a request that
     * reserves more than its quota, or needs more committed than the
     * ceiling, fails at once.
     */
    @Test
    void cacheAllocatorRequestsThatCanNeverFitFailAtOnce() {
        MemoryPool quotas = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).arenas(1)
                .limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT).maxMemory(16L * MIB).quota("slices", 1004)
                .quota("large", 300 * KIB + 8).quota("block_cache", KIB).chunkSource(ChunkSource.direct()).build());
        assertNeverSatisfiable(MemoryLimitException.Kind.QUOTA, "reserves 1008",
                () -> quotas.sequential("slices", 1, MIB).allocate(1001, new Allocation()));
        assertNeverSatisfiable(MemoryLimitException.Kind.QUOTA, "reserves " + 304 * KIB,
                () -> quotas.sequential("large", 1, MIB).allocate(300 * KIB + 1, new Allocation()));
        assertNeverSatisfiable(MemoryLimitException.Kind.QUOTA, "reserves " + 2 * KIB,
                () -> quotas.blocks("block_cache").allocate(1));
        assertEquals(0, quotas.committedBytes());

        MemoryPool ceiling = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).arenas(1)
                .limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT).maxMemory(MIB + MIB / 2)
                .chunkSource(ChunkSource.direct()).build());
        BlockPool blocks = ceiling.blocks("block_cache");
        // a block and a second block cut into sub-blocks: 2 MiB committed
        assertNeverSatisfiable(MemoryLimitException.Kind.CEILING, "needs " + 2 * MIB + " bytes committed",
                () -> blocks.allocate(MIB + MIB / 4));
        List<Allocation> fits = blocks.allocate(MIB); // one block is still served
        fits.forEach(ceiling::free);
        assertEquals(0, ceiling.waitingAllocations());
    }

    private static void assertNeverSatisfiable(MemoryLimitException.Kind kind, String why, Executable allocation) {
        MemoryLimitException e = assertThrows(MemoryLimitException.class, allocation);
        assertEquals(kind, e.kind(), e.getMessage());
        assertTrue(e.getMessage().contains("can never be satisfied") && e.getMessage().contains(why), e.getMessage());
    }

    /** A zero wait timeout refuses at once and says so, not that the thread may not wait. */
    @Test
    void aZeroWaitTimeoutIsNamedInTheRefusal() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).arenas(1).maxMemory(MIB)
                .limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ZERO).chunkSource(ChunkSource.direct()).build());
        Allocation held = new Allocation();
        pool.allocate(MIB, held);
        MemoryLimitException e = assertThrows(MemoryLimitException.class, () -> pool.allocate(4 * KIB, new Allocation()));
        assertTrue(e.getMessage().contains("the wait timeout is zero"), e.getMessage());
        assertEquals(0, pool.waitingAllocations());
        pool.free(held);
    }

    /**
     * The heads of the ceiling's line and of a quota's line retry at once:
     * what either gives back of its own try (a payload's parts, idle memory
     * it reclaimed) wakes nobody, which would only make it retry at once,
     * again and again, while anyone else's release counts, for as long as
     * each of them is retrying.
     */
    @Test
    void theOwnReleasesOfEveryRetryingHeadWakeNobody() throws Exception {
        MemoryLimit limit = new MemoryLimit(MIB);
        long ticket = limit.enqueue(limit.ceilingQueue); // someone waits: releases count
        ExecutorService a = Executors.newSingleThreadExecutor();
        ExecutorService b = Executors.newSingleThreadExecutor();
        try {
            a.submit(() -> limit.retrying(true)).get();
            b.submit(() -> limit.retrying(true)).get();
            long before = limit.releaseCount();
            a.submit(limit::released).get();
            b.submit(limit::released).get();
            assertEquals(before, limit.releaseCount(), "the retrying heads' own releases");
            limit.released();
            assertEquals(before + 1, limit.releaseCount(), "anyone else's");
            b.submit(() -> limit.retrying(false)).get();
            a.submit(limit::released).get();
            assertEquals(before + 1, limit.releaseCount(), "a head still retrying, after the other stopped");
            b.submit(limit::released).get();
            assertEquals(before + 2, limit.releaseCount(), "a head that stopped retrying");
        } finally {
            a.shutdownNow();
            b.shutdownNow();
            limit.dequeue(limit.ceilingQueue, ticket);
        }
    }

    /**
     * The cache allocators' try-allocate, for caches that evict and retry,
     * returns at once at a limit under WAIT (a wait there could only end by
     * the caller's own eviction); allocate waits.
     */
    @Test
    void cacheAllocatorsTryAllocateWithoutWaiting() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).arenas(1).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(WAIT).quota("log", MIB / 2).quota("blocks", MIB).chunkSource(ChunkSource.direct()).build());
        SequentialAllocator log = pool.sequential("log", 1, MIB);
        List<Allocation> slices = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Allocation slice = new Allocation();
            assertTrue(log.tryAllocate(MIB / 4, slice));
            slices.add(slice);
        }
        assertFalse(log.tryAllocate(8, new Allocation()), "the quota is full");
        BlockPool blocks = pool.blocks("blocks");
        List<Allocation> block = blocks.tryAllocate(MIB);
        assertNull(blocks.tryAllocate(1), "the quota is full");
        assertEquals(0, pool.waitingAllocations());
        assertEquals(1, pool.limitStats().refusals("log", MemoryLimitException.Kind.QUOTA));
        assertEquals(1, pool.limitStats().refusals("blocks", MemoryLimitException.Kind.QUOTA));
        slices.forEach(pool::free);
        block.forEach(pool::free);
        assertEquals(0, pool.requestedBytes());
    }

    /**
     * An allocation applies one policy from start to end, whatever
     * {@link MemoryPool#setPolicy} does meanwhile: a caller that lines up under
     * {@link LimitPolicy#WAIT} waits its turn; none is refused without a try.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class PolicyChangeWhileQueuing {

        /**
         * A caller waits at the ceiling for a new chunk; a small request of
         * {@code cache}, whose policy is WAIT, lines up behind it, and the policy
         * turns to FAIL just after that decision (forced through the pool's
         * wait-allowed check, the decision's last step). The caller was refused
         * at once, untried, although 512 KiB were free in a chunk: under WAIT it
         * waits its turn, under FAIL it is not held back and is served.
         */
        @Test
        void aPolicyChangedAsACallerLinesUpNeverRefusesItUntried() throws Exception {
            Thread[] switching = new Thread[1];
            AtomicReference<MemoryPool> pool = new AtomicReference<>();
            MemoryPool built = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).dedicatedAbove(MIB)
                    .arenas(1).limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(50)).maxMemory(4L * MIB)
                    .chunkSource(ChunkSource.direct())
                    .waitAllowed(() -> {
                        if (Thread.currentThread() == switching[0]) {
                            pool.get().setPolicy("cache", LimitPolicy.FAIL); // after the line-up decision read WAIT
                        }
                        return true;
                    }).build());
            pool.set(built);
            Category cache = built.category("cache");
            Allocation[] held = new Allocation[3];
            for (int i = 0; i < held.length; i++) {
                held[i] = new Allocation();
                built.allocate(MIB, held[i]); // a whole chunk each
            }
            Allocation half = new Allocation();
            built.allocate(MIB / 2, half); // the fourth chunk, half free
            assertEquals(4L * MIB, built.committedBytes());

            AtomicReference<Throwable> failure = new AtomicReference<>();
            Allocation large = new Allocation();
            Thread first = ConcurrentTasks.startCapturingFailure(() -> built.allocate(600 * KIB, large), failure);
            ConcurrentTasks.awaitWaiting(built, 1); // needs a new chunk: waits at the ceiling

            Allocation small = new Allocation();
            Thread second = new Thread(() -> {
                try {
                    built.allocate(cache, KIB, small);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            });
            switching[0] = second;
            second.start();
            while (second.isAlive() && built.waitingAllocations() < 2) {
                Thread.onSpinWait(); // until it waits in line, or is done
            }
            assertNull(failure.get(), "refused without a try");
            built.free(held[0]); // a chunk for the first; the second, behind it, is served next
            first.join();
            second.join();
            assertNull(failure.get());
            assertTrue(large.isLive() && small.isLive());
            for (Allocation a : new Allocation[] {large, small, half, held[1], held[2]}) {
                built.free(a);
            }
            assertEquals(0, built.waitingAllocations());
        }
    }

    /**
     * A caller waiting at a limit when the pool closes fails with
     * {@link IllegalStateException}, even when memory it could take is released
     * between the close and its next try.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class WaiterAtClose {

        /**
         * The head of a quota's line sleeps until a release; the pool closes and
         * a buffer of its category is released before it wakes (the limit's lock
         * held meanwhile, so both signals are in when it runs). Its retry finds
         * the quota with room and free space in a chunk a live buffer keeps: it
         * must still fail, as a caller waiting when the pool closed.
         */
        @Test
        void aWaiterWokenByCloseAndAReleaseFailsInsteadOfBeingServed() throws Exception {
            MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).arenas(1)
                    .limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(50)).quota("q", 64 * KIB)
                    .chunkSource(ChunkSource.direct()).build());
            Category q = pool.category("q");
            Allocation pin = new Allocation();
            pool.allocate(16 * KIB, pin); // keeps the chunk after close
            Allocation held = new Allocation();
            pool.allocate(q, 64 * KIB, held); // the whole quota
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Allocation waited = new Allocation();
            Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(q, 64 * KIB, waited), failure);
            ConcurrentTasks.awaitWaiting(pool, 1);

            ReentrantLock lock = limitLock(pool);
            lock.lock();
            try {
                pool.close();
                pool.free(held); // room in the quota and in the chunk the pin keeps
            } finally {
                lock.unlock();
            }
            waiter.join();
            assertFalse(waited.isLive(), "no allocation after close()");
            assertInstanceOf(IllegalStateException.class, failure.get());
            pool.free(pin);
            assertEquals(0, pool.committedBytes());
        }

        private static ReentrantLock limitLock(MemoryPool pool) throws ReflectiveOperationException {
            Field admissionField = MemoryPool.class.getDeclaredField("admission");
            admissionField.setAccessible(true);
            Field limitField = Admission.class.getDeclaredField("limit");
            limitField.setAccessible(true);
            Field lockField = MemoryLimit.class.getDeclaredField("lock");
            lockField.setAccessible(true);
            return (ReentrantLock) lockField.get(limitField.get(admissionField.get(pool)));
        }
    }

    /**
     * {@link MemoryPool#tryAllocate} at the ceiling under {@link LimitPolicy#WAIT}:
     * a try-allocate ({@code returnFalseAtLimit}) returns false at once; without
     * the flag the policy applies and the caller waits, as its javadoc now says
     * (it said "never waits" for both). The waits run on {@link ManualTime}: a
     * wait ends when the test moves the pool's ticker past its deadline, and not
     * a nanosecond before.
     */
    @Nested
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    class TryAllocateWait {

        private static final Duration WAIT = Duration.ofMillis(200);

        private final ManualTime time = new ManualTime();

        private MemoryPool fullPool(Allocation full) {
            PoolConfig config = MemoryPoolTest.config(1 << 16).arenas(1).maxMemory(1 << 16)
                    .limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT).ticker(time).scheduler(time).build();
            MemoryPool pool = new MemoryPool(config);
            pool.allocate(1 << 16, full);
            return pool;
        }

        @Test
        void onlyATryAllocateNeverWaits() throws Exception {
            Allocation full = new Allocation();
            try (MemoryPool pool = fullPool(full)) {
                assertFalse(pool.tryAllocate(pool.defaultCategory(), 1000, new Allocation(), true));
                assertEquals(0, pool.limitStats().waits(), "a try-allocate waited");
                assertEquals(0, time.parked());

                AtomicReference<Throwable> failure = new AtomicReference<>();
                Thread waiter = ConcurrentTasks.startCapturingFailure(
                        () -> pool.tryAllocate(pool.defaultCategory(), 1000, new Allocation(), false), failure);
                time.awaitParked(1, waiter); // without the flag, the WAIT policy applies
                assertEquals(1, pool.waitingAllocations());
                time.advance(WAIT);
                waiter.join();
                assertInstanceOf(MemoryLimitException.class, failure.get());
                assertEquals(1, pool.limitStats().waits());
                assertEquals(WAIT.toNanos(), pool.limitStats().waitNanos(), "waited its timeout on the pool's ticker");
                pool.free(full);
            }
        }

        /**
         * A waiter is still waiting a nanosecond before its deadline, however
         * often the clock moves before it (each move past its 50 ms safety net
         * wakes it to retry), and times out exactly at it.
         */
        @Test
        void aWaitEndsExactlyAtItsDeadlineOnThePoolsTicker() throws Exception {
            Allocation full = new Allocation();
            try (MemoryPool pool = fullPool(full)) {
                AtomicReference<Throwable> failure = new AtomicReference<>();
                Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(1000, new Allocation()), failure);
                for (int step = 0; step < 4; step++) {
                    time.awaitParked(1, waiter);
                    time.advance(WAIT.dividedBy(4).minusNanos(step == 3 ? 1 : 0));
                }
                time.awaitParked(1, waiter); // parked again: the deadline has not come
                assertNull(failure.get());
                assertEquals(1, pool.waitingAllocations());
                time.advance(Duration.ofNanos(1));
                waiter.join();
                MemoryLimitException e = assertInstanceOf(MemoryLimitException.class, failure.get());
                assertTrue(e.getMessage().contains("after waiting 200 ms"), e.getMessage());
                assertEquals(WAIT.toNanos(), pool.limitStats().waitNanos());
                assertEquals(0, pool.waitingAllocations());
                pool.free(full);
            }
        }

        /**
         * Two callers lined up at different times each time out at their own
         * deadline: the first, at the head of the line, when the clock passes
         * its deadline; the one behind it, parked for its turn, only when the
         * clock passes its own.
         */
        @Test
        void callersLinedUpAtDifferentTimesTimeOutInTurn() throws Exception {
            Allocation full = new Allocation();
            try (MemoryPool pool = fullPool(full)) {
                AtomicReference<Throwable> firstFailure = new AtomicReference<>();
                AtomicReference<Throwable> secondFailure = new AtomicReference<>();
                Thread first = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(1000, new Allocation()), firstFailure);
                time.awaitParked(1, first);
                time.advance(WAIT.dividedBy(2));
                Thread second = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(1000, new Allocation()),
                        secondFailure);
                time.awaitParked(2, first, second);

                time.advance(WAIT.dividedBy(2));
                first.join();
                assertInstanceOf(MemoryLimitException.class, firstFailure.get());
                time.awaitParked(1, second); // now the head, with half of its wait left
                assertNull(secondFailure.get());
                assertEquals(1, pool.waitingAllocations());

                time.advance(WAIT.dividedBy(2));
                second.join();
                assertInstanceOf(MemoryLimitException.class, secondFailure.get());
                assertEquals(2 * WAIT.toNanos(), pool.limitStats().waitNanos(), "each waited its whole timeout");
                pool.free(full);
            }
        }
    }
}
