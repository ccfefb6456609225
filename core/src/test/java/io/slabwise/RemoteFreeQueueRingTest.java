package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The remote-free ring on its own, with plain numbers for entries and no
 * arena: a bounded FIFO against a model, bounded drains, a slot claimed but not
 * yet written, the cached producer limit, the padded layout, and many producers
 * against one consumer that drains in small batches.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RemoteFreeQueueRingTest {

    /** Drains up to {@code limit} entries into a list. */
    private static long[] drain(RemoteFreeQueue queue, int limit) {
        List<Long> taken = new ArrayList<>();
        int n = queue.drain(taken::add, limit);
        assertEquals(taken.size(), n, "a drain reports what it handed to its sink");
        return taken.stream().mapToLong(Long::longValue).toArray();
    }

    private static long[] range(long from, long to) {
        long[] values = new long[(int) (to - from)];
        for (int i = 0; i < values.length; i++) {
            values[i] = from + i;
        }
        return values;
    }

    @Test
    void aBoundedDrainLeavesTheRestInOrder() {
        RemoteFreeQueue queue = new RemoteFreeQueue(16);
        for (long e = 1; e <= 10; e++) {
            assertTrue(queue.offer(e));
        }
        assertArrayEquals(range(1, 5), drain(queue, 4));
        assertEquals(6, queue.size());
        assertArrayEquals(new long[0], drain(queue, 0), "a limit of 0 takes nothing");
        assertArrayEquals(range(5, 11), drain(queue, 100), "the rest, in order, and no more than there is");
        assertArrayEquals(new long[0], drain(queue, 100));
        assertEquals(0, queue.size());
    }

    /** Full, a partial drain, refilled across the end of the array: the ring keeps its order over the wrap. */
    @Test
    void aFullRingRefusesUntilADrainAndWrapsAroundInOrder() {
        RemoteFreeQueue queue = new RemoteFreeQueue(8);
        assertEquals(8, queue.capacity());
        for (long e = 1; e <= 8; e++) {
            assertTrue(queue.offer(e));
        }
        assertFalse(queue.offer(9), "full");
        assertEquals(8, queue.size(), "a refused offer takes no slot");
        assertArrayEquals(range(1, 4), drain(queue, 3));
        for (long e = 9; e <= 11; e++) {
            assertTrue(queue.offer(e), "a drain of 3 makes room for 3");
        }
        assertFalse(queue.offer(12));
        assertArrayEquals(range(4, 12), drain(queue, 8), "the old entries first, then those written over the wrap");
        assertEquals(0, queue.size());
    }

    /**
     * Seeded random offers and bounded drains against a model (an
     * {@link ArrayDeque} with the same capacity), in phases that fill the
     * ring, empty it and hover in between, over many laps of the array. The
     * padding slots at both ends of the array are never written.
     */
    @Test
    void behavesAsABoundedFifo() {
        for (int capacity : new int[] {4, 8, 64}) {
            Random random = new Random(17 + capacity);
            RemoteFreeQueue queue = new RemoteFreeQueue(capacity);
            ArrayDeque<Long> model = new ArrayDeque<>();
            long next = 1;
            long offered = 0;
            for (int phase = 0; phase < 200; phase++) {
                double offerChance = random.nextInt(3) * 0.25 + 0.25; // draining, balanced, or filling
                for (int step = 0; step < 500; step++) {
                    if (random.nextDouble() < offerChance) {
                        boolean accepted = queue.offer(next);
                        assertEquals(model.size() < capacity, accepted, "an offer fails exactly when the ring is full");
                        if (accepted) {
                            model.add(next++);
                            offered++;
                        }
                    } else {
                        int limit = random.nextInt(capacity + 3);
                        long[] taken = drain(queue, limit);
                        assertEquals(Math.min(limit, model.size()), taken.length);
                        for (long e : taken) {
                            assertEquals(model.poll(), e, "entries come out in the order they went in");
                        }
                    }
                    assertEquals(model.size(), queue.size());
                }
            }
            assertTrue(offered > 100L * capacity, "many laps of the ring: " + offered + " entries");
            for (int i = 0; i < RemoteFreeQueue.PAD; i++) {
                assertEquals(0, queue.slots[i], "padding before the ring");
                assertEquals(0, queue.slots[queue.slots.length - 1 - i], "padding after the ring");
            }
        }
    }

    /**
     * A producer that won its slot but has not written it yet (descheduled
     * between the CAS and the store) ends a drain there: the entries behind it
     * wait, in order, until it is written.
     */
    @Test
    void aSlotClaimedButNotWrittenEndsADrain() {
        RemoteFreeQueue queue = new RemoteFreeQueue(8);
        assertTrue(queue.offer(1));
        long claimed = queue.claim();
        assertTrue(claimed >= 0);
        assertTrue(queue.offer(3));
        assertArrayEquals(new long[] {1}, drain(queue, 10));
        assertEquals(2, queue.size(), "the claimed slot and the entry behind it");
        queue.publish(claimed, 2);
        assertArrayEquals(new long[] {2, 3}, drain(queue, 10));
    }

    /**
     * The cached limit: filling a ring from empty never looks at the consumer
     * index until the ring is full, and a producer that the consumer keeps up
     * with looks at it about once per capacity of offers (reading it on every
     * offer, as this queue once did, would count one read per offer).
     */
    @Test
    void producersReadTheConsumerIndexOnlyAtTheirCachedLimit() {
        int capacity = 64;
        RemoteFreeQueue queue = new RemoteFreeQueue(capacity);
        for (long e = 1; e <= capacity; e++) {
            assertTrue(queue.offer(e));
        }
        assertEquals(0, queue.consumerIndexReads, "filled from empty within the first limit");
        assertFalse(queue.offer(capacity + 1));
        assertEquals(1, queue.consumerIndexReads, "full: one look to be sure");
        drain(queue, capacity);

        long reads = queue.consumerIndexReads;
        int offers = 100 * capacity;
        for (long e = 1; e <= offers; e++) {
            assertTrue(queue.offer(e));
            assertArrayEquals(new long[] {e}, drain(queue, 1));
        }
        long steadyReads = queue.consumerIndexReads - reads;
        assertTrue(steadyReads >= 1 && steadyReads <= offers / capacity + 1,
                steadyReads + " reads of the consumer index for " + offers + " offers");
    }

    /**
     * The layout the class comment draws: producerIndex, producerLimit (with
     * its read counter) and consumerIndex are each at least 128 bytes from one
     * another, from the read-only fields and object header before them, and
     * from the end of the object. Field offsets come from
     * {@code sun.misc.Unsafe}; where it cannot give them the test is skipped.
     */
    @Test
    void theHotIndicesHaveCacheLinesOfTheirOwn() {
        Map<String, Long> offsets = fieldOffsets(RemoteFreeQueue.class);
        long end = offsets.values().stream().mapToLong(Long::longValue).max().orElseThrow() + Long.BYTES;
        assertEquals(4 * 16, offsets.keySet().stream().filter(RemoteFreeQueueRingTest::isPadding).count(),
                "four blocks of 16 padding longs");
        List<List<String>> groups = List.of(List.of("mask", "slots"), List.of("producerIndex"),
                List.of("producerLimit", "consumerIndexReads"), List.of("consumerIndex"));
        for (int g = 1; g < groups.size(); g++) {
            for (String hot : groups.get(g)) {
                long at = offsets.get(hot);
                assertTrue(at >= 128, hot + " at " + at + " is too close to the object header");
                assertTrue(end - (at + Long.BYTES) >= 128, hot + " at " + at + " is too close to the end, " + end);
                for (int other = 0; other < groups.size(); other++) {
                    if (other == g) {
                        continue;
                    }
                    for (String field : groups.get(other)) {
                        long distance = Math.abs(offsets.get(field) - at);
                        assertTrue(distance >= 128, hot + " is " + distance + " bytes from " + field + ": " + offsets);
                    }
                }
            }
        }
    }

    private static boolean isPadding(String field) {
        return field.matches("[a-d]\\d\\d");
    }

    /** Offsets of the instance fields by name, through {@code sun.misc.Unsafe} by reflection. */
    private static Map<String, Long> fieldOffsets(Class<?> type) {
        Object unsafe;
        Method objectFieldOffset;
        try {
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
            theUnsafe.setAccessible(true);
            unsafe = theUnsafe.get(null);
            objectFieldOffset = unsafeClass.getMethod("objectFieldOffset", Field.class);
        } catch (ReflectiveOperationException | RuntimeException e) {
            assumeTrue(false, "no field offsets on this JVM: " + e);
            throw new AssertionError(e);
        }
        Map<String, Long> offsets = new HashMap<>();
        for (Class<?> c = type; c != Object.class; c = c.getSuperclass()) {
            for (Field field : c.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers())) {
                    continue;
                }
                long offset;
                try {
                    offset = (long) objectFieldOffset.invoke(unsafe, field);
                } catch (ReflectiveOperationException | RuntimeException e) {
                    assumeTrue(false, "no field offsets on this JVM: " + e);
                    throw new AssertionError(e);
                }
                assertEquals(null, offsets.put(field.getName(), offset), "one field per name");
            }
        }
        return offsets;
    }

    /**
     * The race checked: four producers offer into a 64-slot ring (so it is
     * often full and they must look at the consumer index to find room) while
     * one consumer drains it in seeded random batches of 1 to 8, sometimes
     * pausing so the ring fills. Each producer's entries must come out exactly
     * once and in the order it offered them, which catches a slot written twice
     * (an entry lost), a slot read twice (an entry duplicated) and a limit that
     * let a producer overwrite an entry not yet drained. A drain never takes
     * more than its limit.
     */
    @Test
    void manyProducersOneConsumerInSmallBatchesSeeEveryEntryOnceInOrder() throws Exception {
        int producers = 4;
        int perProducer = 50_000;
        long stuckNanos = TimeUnit.SECONDS.toNanos(10); // a bound for a broken queue on every wait loop, not a pause
        RemoteFreeQueue queue = new RemoteFreeQueue(64);
        CyclicBarrier start = new CyclicBarrier(producers + 1);
        AtomicLong refusals = new AtomicLong();
        AtomicInteger producersDone = new AtomicInteger();
        AtomicBoolean consumerFailed = new AtomicBoolean(); // so that producers stop waiting for room
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < producers; t++) {
            long producer = t + 1;
            Random random = new Random(41 + t);
            tasks.add(() -> {
                ConcurrentTasks.await(start, "a thread did not reach the barrier");
                try {
                    for (long seq = 1; seq <= perProducer; seq++) {
                        long entry = producer << 32 | seq;
                        long waitingSince = 0;
                        while (!queue.offer(entry)) {
                            refusals.incrementAndGet();
                            if (consumerFailed.get()) {
                                return; // the consumer's failure is the one reported
                            }
                            long now = System.nanoTime();
                            if (waitingSince == 0) {
                                waitingSince = now;
                            } else if (now - waitingSince > stuckNanos) {
                                fail("producer " + producer + " found the ring full for 10 s");
                            }
                            Thread.yield();
                        }
                        if (random.nextInt(256) == 0) {
                            Thread.yield(); // vary the interleaving
                        }
                    }
                } finally {
                    producersDone.incrementAndGet();
                }
            });
        }
        long[] lastSeen = new long[producers + 1];
        AtomicLong drained = new AtomicLong();
        tasks.add(() -> {
            ConcurrentTasks.await(start, "a thread did not reach the barrier");
            try {
                consume(queue, lastSeen, drained, (long) producers * perProducer, () -> producersDone.get() == producers,
                        stuckNanos);
            } catch (Throwable e) {
                consumerFailed.set(true);
                throw e;
            }
        });
        ConcurrentTasks.runConcurrently(tasks);
        assertEquals((long) producers * perProducer, drained.get());
        for (int p = 1; p <= producers; p++) {
            assertEquals(perProducer, lastSeen[p], "every entry of producer " + p + " arrived");
        }
        assertEquals(0, queue.size(), "drained, after " + refusals + " refused offers");
        assertArrayEquals(new long[0], drain(queue, 64));
    }

    /**
     * The consumer of the stress test: drains in seeded batches of 1 to 8,
     * checking each producer's order, until {@code total} entries came out.
     * An empty drain after every producer finished means an entry was lost;
     * 10 s without an entry means one is stuck (a lost entry blocks the ring
     * behind it, and the producers with it).
     */
    private static void consume(RemoteFreeQueue queue, long[] lastSeen, AtomicLong drained, long total,
            BooleanSupplier producersDone, long stuckNanos) {
        Random random = new Random(97);
        long lastProgress = System.nanoTime();
        while (drained.get() < total) {
            boolean finished = producersDone.getAsBoolean(); // before the drain: all they offered is written
            int limit = 1 + random.nextInt(8);
            int taken = queue.drain(entry -> {
                int producer = (int) (entry >>> 32);
                long seq = entry & 0xFFFF_FFFFL;
                assertEquals(lastSeen[producer] + 1, seq, "producer " + producer + "'s entries out of order");
                lastSeen[producer] = seq;
            }, limit);
            assertTrue(taken <= limit, taken + " taken with a limit of " + limit);
            drained.addAndGet(taken);
            if (taken == 0) {
                assertFalse(finished, "every producer finished, yet " + drained + " of " + total + " came out");
                if (System.nanoTime() - lastProgress > stuckNanos) {
                    fail("nothing to drain for 10 s with " + drained + " of " + total + " drained");
                }
                Thread.yield();
            } else {
                lastProgress = System.nanoTime();
            }
            if (random.nextInt(64) == 0) {
                for (int i = random.nextInt(4); i >= 0; i--) {
                    Thread.yield(); // let the ring fill
                }
            }
        }
    }

}
