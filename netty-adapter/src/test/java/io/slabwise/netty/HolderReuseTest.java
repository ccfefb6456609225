package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.slabwise.Allocation;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reuse on the allocate/release path: the safe default reuses the
 * {@link Allocation} holders behind its buffers (a per-thread stash) and the
 * memory (the thread cache), the recycling mode reuses buffer objects. None of
 * it may let one buffer reach another's bytes.
 */
@Timeout(120)
class HolderReuseTest {

    private final List<SlabwiseAllocator> made = new ArrayList<>();

    private SlabwiseAllocator allocator(boolean recycle) {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().recycleBuffers(recycle).build();
        made.add(allocator);
        return allocator;
    }

    @AfterEach
    void nothingLeftLive() {
        for (SlabwiseAllocator allocator : made) {
            PoolStats stats = allocator.stats();
            assertEquals(0, stats.liveAllocations(), stats::report);
            allocator.close();
        }
    }

    /** The Slabwise buffer behind any leak-detection wrapper. */
    private static SlabwiseDirectByteBuf unwrapped(ByteBuf buf) {
        ByteBuf b = buf;
        while (!(b instanceof SlabwiseDirectByteBuf)) {
            b = b.unwrap();
        }
        return (SlabwiseDirectByteBuf) b;
    }

    /**
     * A buffer Netty's leak detector does not track, for the cases that
     * assert a recycled object is reused: a tracked buffer is never recycled
     * (see {@code SlabwiseAllocator.tracked}), and the detector picks the
     * buffers it tracks at random. A tracked one is released and another
     * taken, at most 64 times; a detector that tracks them all (the paranoid
     * level) leaves nothing recycled to check, and the case is skipped.
     */
    private static ByteBuf untracked(Callable<ByteBuf> allocate) throws Exception {
        for (int i = 0; i < 64; i++) {
            ByteBuf buf = allocate.call();
            if (unwrapped(buf) == buf) {
                return buf;
            }
            buf.release();
        }
        Assumptions.abort("the leak detector tracked 64 buffers in a row: none is recycled");
        return null;
    }

    private static void fill(ByteBuf buf, long seed) {
        Random random = new Random(seed);
        buf.clear();
        while (buf.writableBytes() >= 8) {
            buf.writeLong(random.nextLong());
        }
        while (buf.isWritable()) {
            buf.writeByte(random.nextInt());
        }
    }

    private static boolean holds(ByteBuf buf, long seed) {
        Random random = new Random(seed);
        int i = 0;
        for (; i + 8 <= buf.capacity(); i += 8) {
            if (buf.getLong(i) != random.nextLong()) {
                return false;
            }
        }
        for (; i < buf.capacity(); i++) {
            if (buf.getByte(i) != (byte) random.nextInt()) {
                return false;
            }
        }
        return true;
    }

    /** Every access through a released buffer throws; nothing reads or writes the bytes of whoever holds them now. */
    private static void assertStale(ByteBuf stale) {
        assertThrows(IllegalReferenceCountException.class, stale::release);
        assertThrows(IllegalReferenceCountException.class, () -> stale.getLong(0));
        assertThrows(IllegalReferenceCountException.class, () -> stale.getByte(7));
        assertThrows(IllegalReferenceCountException.class, () -> stale.setLong(0, -1L));
        assertThrows(IllegalReferenceCountException.class, () -> stale.getBytes(0, new byte[8]));
        assertThrows(IllegalReferenceCountException.class, () -> stale.setBytes(0, new byte[8]));
        assertThrows(IllegalReferenceCountException.class, () -> stale.nioBuffer(0, 8));
        assertThrows(IllegalReferenceCountException.class, () -> stale.capacity(16));
        assertThrows(IllegalReferenceCountException.class, () -> stale.capacity(4096));
        assertThrows(IllegalReferenceCountException.class, stale::retain);
        assertThrows(IllegalReferenceCountException.class, () -> stale.slice(0, 8));
        assertThrows(IllegalReferenceCountException.class, stale::duplicate);
    }

    /**
     * A released buffer's holder and memory serve the next buffer on the same
     * thread: the stale reference throws on every access and the new buffer's
     * bytes stay as written. A slice of the stale buffer, taken before the
     * release, throws too.
     */
    @Test
    void staleReferenceNeverReachesTheBufferThatReusedItsHolder() {
        SlabwiseAllocator allocator = allocator(false);
        ByteBuf first = allocator.directBuffer(64);
        fill(first, 1);
        ByteBuf slice = first.slice(0, 32);
        Allocation holder = unwrapped(first).allocation();
        long address = holder.address();
        assertTrue(first.release());
        assertNull(unwrapped(first).allocation(), "a released buffer drops its holder");

        ByteBuf second = allocator.directBuffer(64);
        assertSame(holder, unwrapped(second).allocation(), "the holder is reused: the case under test");
        assertEquals(address, unwrapped(second).allocation().address(), "and so is the memory");
        fill(second, 2);
        assertStale(first);
        assertThrows(IllegalReferenceCountException.class, () -> slice.getLong(0));
        assertThrows(IllegalReferenceCountException.class, () -> slice.setLong(0, 5));
        assertTrue(holds(second, 2), "the new owner's bytes are untouched");
        assertEquals(1, second.refCnt());
        second.release();
    }

    /**
     * The race checked: a buffer released on one thread whose holder and
     * memory are then reused by that thread while another thread still holds a
     * reference to it. The stale reference throws and never sees the new bytes.
     */
    @Test
    void staleReferenceOnAnotherThreadNeverReachesTheReusedHolder() throws Exception {
        SlabwiseAllocator allocator = allocator(false);
        ExecutorService owner = Executors.newSingleThreadExecutor();
        try {
            ByteBuf stale = owner.submit(() -> {
                ByteBuf buf = allocator.directBuffer(256);
                fill(buf, 3);
                return buf;
            }).get();
            Allocation holder = unwrapped(stale).allocation();
            owner.submit(() -> stale.release()).get();
            ByteBuf reused = owner.submit(() -> {
                ByteBuf buf = allocator.directBuffer(256);
                fill(buf, 4);
                return buf;
            }).get();
            assertSame(holder, unwrapped(reused).allocation(), "the owner thread reused the holder");
            assertStale(stale);
            assertTrue(holds(reused, 4));
            owner.submit(() -> reused.release()).get();
        } finally {
            owner.shutdown();
            assertTrue(owner.awaitTermination(30, TimeUnit.SECONDS));
        }
    }

    /**
     * A holder freed on a thread other than its allocating one goes back to
     * the allocating thread, not to the releasing one, and serves its next
     * buffer; the released buffer stays stale. With recycling the buffer
     * object comes back with it, as with Netty's recycler.
     */
    @Test
    void holderReleasedOnAnotherThreadGoesBackToItsOwner() throws Exception {
        for (boolean recycle : new boolean[] {false, true}) {
            SlabwiseAllocator allocator = allocator(recycle);
            ByteBuf buf = untracked(() -> allocator.directBuffer(64));
            fill(buf, 5);
            Allocation holder = unwrapped(buf).allocation();
            ExecutorService other = Executors.newSingleThreadExecutor();
            try {
                other.submit(() -> buf.release()).get();
                ByteBuf there = other.submit(() -> allocator.directBuffer(64)).get();
                assertNotSame(holder, unwrapped(there).allocation(), "the releasing thread took the holder");
                ByteBuf here = allocator.directBuffer(64);
                fill(here, 6);
                assertSame(holder, unwrapped(here).allocation(), "the holder did not come back to its owner");
                if (recycle) {
                    assertSame(unwrapped(buf), unwrapped(here), "the recycled object did not come back with it");
                } else {
                    assertStale(buf);
                }
                assertTrue(holds(here, 6));
                here.release();
                other.submit(() -> there.release()).get();
            } finally {
                other.shutdown();
                assertTrue(other.awaitTermination(30, TimeUnit.SECONDS));
            }
        }
    }

    /**
     * The race checked: producers allocate buffers (reusing holders and memory
     * that their own earlier releases stashed), fill them with seeded content
     * and hand most to consumers, which verify the content and release them on
     * their own threads; the rest the producers release themselves. If a reused
     * holder or memory ever backed two live buffers, a checksum would fail.
     */
    @Test
    void crossThreadReleaseWithReuseKeepsEveryBuffersBytes() throws Exception {
        runProducersAndConsumers(allocator(false), false, 20260101L);
    }

    /** The same in the recycling mode, where buffer objects are reused too. */
    @Test
    void crossThreadReleaseWithRecycledObjectsKeepsEveryBuffersBytes() throws Exception {
        runProducersAndConsumers(allocator(true), true, 20260102L);
    }

    private static final int PRODUCERS = 2;
    private static final int ROUNDS = 20_000;
    private static final int[] SIZES = {16, 64, 100, 1024, 4097, 16384};

    /** A buffer in flight and the seed of its content. */
    private record Sent(ByteBuf buf, long seed) {
    }

    private static void runProducersAndConsumers(SlabwiseAllocator allocator, boolean recycle, long seed) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(PRODUCERS * 2);
        CompletionService<Object> done = new ExecutorCompletionService<>(threads);
        List<BlockingQueue<Sent>> queues = new ArrayList<>();
        AtomicLong verified = new AtomicLong();
        Sent end = new Sent(null, 0);
        try {
            int tasks = 0;
            for (int p = 0; p < PRODUCERS; p++) {
                BlockingQueue<Sent> queue = new ArrayBlockingQueue<>(64);
                queues.add(queue);
                long producerSeed = seed * 31 + p;
                tasks++;
                done.submit(() -> {
                    Random random = new Random(producerSeed);
                    ArrayDeque<Sent> local = new ArrayDeque<>();
                    for (int i = 0; i < ROUNDS; i++) {
                        ByteBuf buf = allocator.directBuffer(SIZES[random.nextInt(SIZES.length)]);
                        long contentSeed = random.nextLong();
                        fill(buf, contentSeed);
                        Sent sent = new Sent(buf, contentSeed);
                        if (random.nextInt(3) == 0) {
                            local.add(sent);
                            if (local.size() > 4) {
                                Sent old = local.poll();
                                assertTrue(holds(old.buf(), old.seed()), "a buffer kept on its own thread was overwritten");
                                old.buf().release();
                            }
                        } else {
                            queue.put(sent);
                        }
                    }
                    for (Sent old : local) {
                        assertTrue(holds(old.buf(), old.seed()));
                        old.buf().release();
                    }
                    queue.put(end);
                    return null;
                });
                tasks++;
                done.submit(() -> {
                    for (Sent sent = queue.take(); sent != end; sent = queue.take()) {
                        assertTrue(holds(sent.buf(), sent.seed()), "a buffer handed over was overwritten");
                        verified.incrementAndGet();
                        sent.buf().release();
                        if (!recycle) { // a recycled object may already be live again, as a later buffer
                            assertStale(sent.buf());
                        }
                    }
                    return null;
                });
            }
            for (int i = 0; i < tasks; i++) {
                Future<Object> finished = done.poll(100, TimeUnit.SECONDS);
                assertTrue(finished != null, "a producer or consumer hung");
                finished.get(); // the first failure fails the test; the others are interrupted below
            }
        } finally {
            threads.shutdownNow();
            assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS));
        }
        assertTrue(verified.get() > PRODUCERS * ROUNDS / 2, "most buffers crossed threads: " + verified.get());
    }

    /**
     * The recycling mode hands out a released buffer object again, never one
     * that is live: on one thread with many buffers live at once and in a
     * seeded random order of allocations, growths and releases, no object and
     * no holder is ever given to two live buffers, and each keeps its bytes. A
     * buffer that moved to a new allocation to grow is not recycled at all:
     * its object is never handed out again.
     */
    @Test
    void recycledObjectsNeverAliasALiveBuffer() {
        SlabwiseAllocator allocator = allocator(true);
        Random random = new Random(77);
        Set<SlabwiseDirectByteBuf> liveObjects = Collections.newSetFromMap(new IdentityHashMap<>());
        Set<Allocation> liveHolders = Collections.newSetFromMap(new IdentityHashMap<>());
        List<Sent> live = new ArrayList<>();
        boolean reused = false;
        Set<SlabwiseDirectByteBuf> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        Set<SlabwiseDirectByteBuf> moved = Collections.newSetFromMap(new IdentityHashMap<>());
        for (int i = 0; i < 50_000; i++) {
            if (live.isEmpty() || (live.size() < 64 && random.nextBoolean())) {
                ByteBuf buf = allocator.directBuffer(SIZES[random.nextInt(SIZES.length)]);
                SlabwiseDirectByteBuf object = unwrapped(buf);
                assertTrue(liveObjects.add(object), "a live buffer object was handed out again");
                assertTrue(liveHolders.add(object.allocation()), "a live holder was handed out again");
                assertFalse(moved.contains(object), "the object of a buffer that moved was recycled");
                reused |= !seen.add(object);
                long contentSeed = random.nextLong();
                fill(buf, contentSeed);
                live.add(new Sent(buf, contentSeed));
            } else if (random.nextInt(8) == 0) { // grow one: to another size class, so it usually moves
                int at = random.nextInt(live.size());
                Sent sent = live.get(at);
                SlabwiseDirectByteBuf object = unwrapped(sent.buf());
                Allocation before = object.allocation();
                int capacity = sent.buf().capacity();
                sent.buf().capacity(Math.min(capacity * 4 + 1, 1 << 20));
                assertTrue(holds(sent.buf().slice(0, capacity), sent.seed()), "growing lost bytes");
                if (object.allocation() != before) {
                    liveHolders.remove(before);
                    assertTrue(liveHolders.add(object.allocation()), "a buffer moved into a live holder");
                    moved.add(object);
                }
                long contentSeed = random.nextLong();
                fill(sent.buf(), contentSeed);
                live.set(at, new Sent(sent.buf(), contentSeed));
            } else {
                Sent sent = live.remove(random.nextInt(live.size()));
                assertTrue(holds(sent.buf(), sent.seed()), "a live buffer was overwritten");
                SlabwiseDirectByteBuf object = unwrapped(sent.buf());
                liveObjects.remove(object);
                liveHolders.remove(object.allocation());
                sent.buf().release();
            }
        }
        assertTrue(reused, "buffer objects were recycled: the case under test");
        assertTrue(moved.size() > 100, "buffers moved to grow: " + moved.size());
        for (Sent sent : live) {
            assertTrue(holds(sent.buf(), sent.seed()));
            sent.buf().release();
        }
    }

    /**
     * A recycled buffer that moves to a new allocation when it grows frees the
     * holder it came with, which goes back to the thread's stash at once: the
     * next allocation must get a new object, never the live one that moved.
     */
    @Test
    void recycledBufferThatMovedIsNotHandedOutWhileLive() {
        SlabwiseAllocator allocator = allocator(true);
        allocator.directBuffer(64).release();
        ByteBuf grown = allocator.directBuffer(64);
        SlabwiseDirectByteBuf object = unwrapped(grown);
        grown.capacity(100_000); // another size class: moves, and frees the holder it came with
        fill(grown, 9);
        ByteBuf next = allocator.directBuffer(64);
        assertNotSame(object, unwrapped(next), "a live buffer object was handed out again");
        fill(next, 10);
        assertTrue(holds(grown, 9), "the moved buffer's bytes were overwritten");
        next.release();
        grown.release();
        // detached from its first holder, the object is no longer recycled: released, it drops what it held
        assertNull(object.allocation(), "a moved buffer kept its allocation after release");
        assertThrows(IllegalReferenceCountException.class, () -> grown.getByte(0));
        ByteBuf after = allocator.directBuffer(64);
        assertNotSame(object, unwrapped(after), "a moved buffer object was recycled");
        after.release();
    }

    /**
     * Virtual threads share their arena's cache, which keeps a released
     * buffer's holder with its memory for the next virtual thread: in the safe
     * default that thread gets a new buffer object over the same holder, and
     * the released one still refuses every access; with recycling it gets the
     * same object back, as Netty's adaptive allocator reuses its buffers
     * across virtual threads.
     */
    @Test
    void aVirtualThreadsHolderServesTheNextVirtualThread() throws Exception {
        ExecutorService virtual = newVirtualThreadPerTaskExecutor();
        try {
            for (boolean recycle : new boolean[] {false, true}) {
                SlabwiseAllocator allocator = SlabwiseAllocator.builder().arenas(1).recycleBuffers(recycle).build();
                made.add(allocator);
                ByteBuf first = virtual.submit(() -> untracked(() -> allocator.directBuffer(64))).get(30, TimeUnit.SECONDS);
                SlabwiseDirectByteBuf object = unwrapped(first);
                Allocation holder = object.allocation();
                long address = holder.address();
                virtual.submit(() -> first.release()).get(30, TimeUnit.SECONDS);
                ByteBuf second = virtual.submit(() -> allocator.directBuffer(64)).get(30, TimeUnit.SECONDS);
                SlabwiseDirectByteBuf next = unwrapped(second);
                assertSame(holder, next.allocation(), "the kept holder did not serve the next virtual thread");
                assertEquals(address, next.allocation().address());
                if (recycle) {
                    assertSame(object, next, "the recycled object did not serve the next virtual thread");
                } else {
                    assertNotSame(object, next);
                    assertNull(object.allocation(), "a released buffer kept its holder");
                    assertThrows(IllegalReferenceCountException.class, () -> first.getByte(0));
                    assertThrows(IllegalReferenceCountException.class, () -> first.setByte(0, 1));
                }
                fill(second, 11);
                assertTrue(holds(second, 11));
                virtual.submit(() -> second.release()).get(30, TimeUnit.SECONDS);
            }
        } finally {
            virtual.shutdown();
        }
        assertTrue(virtual.awaitTermination(30, TimeUnit.SECONDS));
    }

    /**
     * Many virtual threads on one arena, in both modes, each holding a few
     * buffers of every kind of size at a time, filling each with a pattern of
     * its own and checking it before releasing it, a third of the releases on
     * a platform thread: holders and (recycling) buffer objects pass between
     * them through the shared cache, and no live buffer ever sees another
     * one's bytes. The pool ends with nothing live (see {@link #nothingLeftLive}).
     */
    @Test
    void virtualThreadsPassingHoldersNeverShareBytes() throws Exception {
        int[] sizes = {64, 1000, 4097, 100_000, 600_000, 2 << 20};
        int threads = 8;
        int rounds = 150;
        for (boolean recycle : new boolean[] {false, true}) {
            SlabwiseAllocator allocator = SlabwiseAllocator.builder().arenas(1).recycleBuffers(recycle).build();
            made.add(allocator);
            BlockingQueue<ByteBuf> toPlatform = new ArrayBlockingQueue<>(threads * rounds);
            AtomicLong platformReleases = new AtomicLong();
            Thread platform = new Thread(() -> {
                try {
                    for (ByteBuf buf = toPlatform.take(); buf != STOP; buf = toPlatform.take()) {
                        buf.release();
                        platformReleases.incrementAndGet();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            platform.start();
            ExecutorService virtual = newVirtualThreadPerTaskExecutor();
            List<Future<?>> futures = new ArrayList<>();
            try {
                for (int t = 0; t < threads; t++) {
                    int seed = 1000 * t;
                    futures.add(virtual.submit(() -> {
                        Random random = new Random(seed);
                        ArrayDeque<ByteBuf> held = new ArrayDeque<>();
                        ArrayDeque<Long> stamps = new ArrayDeque<>();
                        for (int round = 0; round < rounds; round++) {
                            ByteBuf buf = allocator.directBuffer(sizes[random.nextInt(sizes.length)]);
                            long stamp = seed + round;
                            fill(buf, stamp);
                            held.add(buf);
                            stamps.add(stamp);
                            Thread.yield(); // another virtual thread of the carrier runs while this one holds buffers
                            if (held.size() > 2 || round == rounds - 1) {
                                while (!held.isEmpty()) {
                                    ByteBuf oldest = held.poll();
                                    assertTrue(holds(oldest, stamps.poll()), "a live buffer's bytes were overwritten");
                                    if (random.nextInt(3) == 0) {
                                        toPlatform.add(oldest);
                                    } else {
                                        oldest.release();
                                    }
                                }
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> future : futures) {
                    future.get(60, TimeUnit.SECONDS);
                }
            } finally {
                virtual.shutdown();
                toPlatform.add(STOP);
            }
            assertTrue(virtual.awaitTermination(30, TimeUnit.SECONDS));
            platform.join(30_000);
            assertTrue(platformReleases.get() > 0, "no release ran on the platform thread");
            assertEquals(0, allocator.stats().liveAllocations(), allocator.stats()::report);
            allocator.close(); // what the shared cache kept, filled or blank, goes back with the rest
            assertEquals(0, allocator.stats().committedBytes(), allocator.stats()::report);
        }
    }

    /** Ends the platform thread's releases. */
    private static final ByteBuf STOP = io.netty.buffer.Unpooled.EMPTY_BUFFER;

    /** {@code Executors.newVirtualThreadPerTaskExecutor()}, where the JVM has it (Java 21+); the test is skipped otherwise. */
    private static ExecutorService newVirtualThreadPerTaskExecutor() throws Exception {
        java.lang.reflect.Method factory;
        try {
            factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        } catch (NoSuchMethodException e) {
            org.junit.jupiter.api.Assumptions.abort("virtual threads need Java 21 or later");
            throw e;
        }
        return (ExecutorService) factory.invoke(null);
    }
}
