package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.slabwise.CategoryStats;
import io.slabwise.PoolStats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Per-category accounting stays exact whatever happens to the buffers: slices,
 * duplicates and retained derived buffers, composites, capacity changes,
 * sequential and block buffers, and releases on other threads.
 */
@Timeout(60)
class CategoryAccountingTest {

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(2).build();

    /** One live buffer, the category it was allocated in, and for a composite what its components asked for. */
    private record Tracked(ByteBuf buf, String category, long componentBytes) {
        long requested() {
            return componentBytes >= 0 ? componentBytes : buf.capacity();
        }
    }

    /**
     * A seeded workload over four categories mixing every kind of buffer and
     * derived buffer; after every step the sum over categories equals the
     * pool's totals, each category's requested bytes equal the capacities of
     * its live buffers, and the counters never go backwards. At the end
     * everything is 0.
     */
    @Test
    void categorySumsMatchThePoolExactly() {
        Map<String, ByteBufAllocator> views = new HashMap<>();
        for (String name : new String[] {"network", "replication", "fetch"}) {
            views.put(name, allocator.forCategory(name));
        }
        SequentialByteBufAllocator log = allocator.sequential("log_cache");
        BlockByteBufAllocator blocks = allocator.blocks("block_cache", 64 * 1024, 2);
        Random random = new Random(77);
        List<Tracked> live = new ArrayList<>();
        long lastAllocations = 0;
        for (int step = 0; step < 3000; step++) {
            int action = random.nextInt(10);
            if (live.isEmpty() || action < 4) {
                String category = List.of("network", "replication", "fetch", "log_cache", "block_cache").get(random.nextInt(5));
                ByteBuf buf;
                long componentBytes = -1;
                if (category.equals("log_cache")) {
                    buf = log.allocate(1 + random.nextInt(30_000));
                } else if (category.equals("block_cache")) {
                    buf = blocks.allocate(1 + random.nextInt(300_000));
                } else if (random.nextInt(5) == 0) {
                    CompositeByteBuf composite = views.get(category).compositeDirectBuffer();
                    componentBytes = 0;
                    for (int i = 0; i < 3; i++) {
                        int size = 10 + random.nextInt(5000);
                        componentBytes += size;
                        composite.addComponent(true, views.get(category).directBuffer(size).writeZero(10));
                    }
                    buf = composite;
                } else {
                    buf = views.get(category).directBuffer(1 + random.nextInt(70_000), 200_000);
                }
                live.add(new Tracked(buf, category, componentBytes));
            } else if (action < 6) {
                // derived buffers share the count and change nothing until the last release
                Tracked t = live.get(random.nextInt(live.size()));
                ByteBuf derived = random.nextBoolean() ? t.buf().retainedSlice(0, Math.min(8, t.buf().capacity()))
                        : t.buf().retainedDuplicate();
                derived.duplicate().slice().capacity();
                derived.release();
            } else if (action < 7) {
                Tracked t = live.get(random.nextInt(live.size()));
                if (t.componentBytes() < 0 && !t.category().equals("block_cache") && t.buf().maxCapacity() == 200_000) {
                    t.buf().capacity(1 + random.nextInt(150_000)); // in place or moved through the pool
                }
            } else {
                live.remove(random.nextInt(live.size())).buf().release();
            }
            if (step % 50 == 0) {
                lastAllocations = check(live, lastAllocations);
            }
        }
        // release the rest on another thread
        Thread other = new Thread(() -> live.forEach(t -> t.buf().release()));
        other.start();
        try {
            other.join();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        PoolStats end = allocator.stats();
        assertEquals(0, end.requestedBytes(), end::report);
        assertEquals(0, end.reservedBytes(), end::report);
        for (CategoryStats c : end.categories()) {
            assertEquals(0, c.requested(), c.name());
            assertEquals(0, c.liveBuffers(), c.name());
            assertTrue(c.peakReserved() > 0 || c.allocations() == 0, c.name());
        }
    }

    private long check(List<Tracked> live, long lastAllocations) {
        PoolStats stats = allocator.stats();
        long requested = 0;
        long reserved = 0;
        for (CategoryStats c : stats.categories()) {
            requested += c.requested();
            reserved += c.reserved();
            assertTrue(c.requested() <= c.reserved(), c.name());
        }
        assertEquals(stats.requestedBytes(), requested);
        assertEquals(stats.reservedBytes(), reserved);
        Map<String, Long> expected = new HashMap<>();
        for (Tracked t : live) {
            expected.merge(t.category(), t.requested(), Long::sum);
        }
        for (CategoryStats c : stats.categories()) {
            assertEquals(expected.getOrDefault(c.name(), 0L), c.requested(), c.name());
        }
        assertTrue(stats.allocations() >= lastAllocations, "counters are monotonic");
        return stats.allocations();
    }

    /** The race checked: buffers of two categories released on other threads leave both categories at exactly 0. */
    @Test
    void crossThreadReleaseKeepsCategoriesExact() throws Exception {
        ByteBufAllocator a = allocator.forCategory("a");
        ByteBufAllocator b = allocator.forCategory("b");
        BlockingQueue<ByteBuf> handoff = new ArrayBlockingQueue<>(64);
        Thread consumer = new Thread(() -> {
            try {
                for (int i = 0; i < 20_000; i++) {
                    handoff.take().release();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        consumer.start();
        Random random = new Random(5);
        for (int i = 0; i < 20_000; i++) {
            handoff.put((i % 2 == 0 ? a : b).directBuffer(1 + random.nextInt(4096)));
        }
        consumer.join();
        PoolStats stats = allocator.stats();
        assertEquals(0, stats.category("a").requested());
        assertEquals(0, stats.category("b").reserved());
        assertEquals(10_000, stats.category("a").allocations());
        assertEquals(10_000, stats.category("b").releases());
    }
}
