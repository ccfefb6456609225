package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.slabwise.CategoryStats;
import io.slabwise.PoolStats;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A small Kafka-like broker cache on one {@link SlabwiseAllocator}:
 *
 * <ul>
 *   <li>producers, one per partition, append record batches (100 B to 1 MiB,
 *       log-uniform, seeded) to the partition's {@link LogCache}; all
 *       partitions share one sequential allocator (category {@code log_cache});</li>
 *   <li>tail readers follow the partitions like consumers at the tail of the
 *       log, reading each new batch from the log caches (one that fell behind
 *       the cache skips to its oldest batch);</li>
 *   <li>cold readers fetch older segment blocks (64 KiB to 8 MiB, keys skewed
 *       towards a few hot ones) through a {@link BlockCache} on the block pool
 *       (category {@code block_cache}), loading them on a miss.</li>
 * </ul>
 *
 * Every thread runs a bounded number of operations (tail readers stop early
 * once the producers are done and they have caught up). The demo then checks that
 * each category's requested bytes equal what its caches hold, prints the hit
 * rates and the allocator's report, closes the caches and checks that nothing
 * is left live; it exits with status 1 when something is (or a reader saw a
 * wrong batch).
 *
 * <p>Run with {@code mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.broker.BrokerCacheDemo}.
 */
public final class BrokerCacheDemo {

    private static final int PARTITIONS = 2;
    private static final int TAIL_READERS = 2;
    private static final int COLD_READERS = 2;
    private static final int SEGMENT_KEYS = 400;

    private BrokerCacheDemo() {
    }

    /** Runs the demo with 20,000 operations per thread; exits with status 1 if anything was left live. */
    public static void main(String[] args) throws Exception {
        System.exit(run(20_000) ? 0 : 1);
    }

    /**
     * Runs {@code operations} operations per producer and tail reader (a tenth
     * of that per cold reader, whose blocks are large).
     *
     * @return whether every reader saw the right bytes, the accounting matched
     *         the caches, and everything was released at the end
     */
    public static boolean run(int operations) throws InterruptedException {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().quota("block_cache", 256L << 20).build();
        SequentialByteBufAllocator logAllocator = allocator.sequential("log_cache");
        List<LogCache> partitions = new ArrayList<>();
        List<AtomicLong> nextOffsets = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            partitions.add(new LogCache(logAllocator, 32L << 20));
            nextOffsets.add(new AtomicLong());
        }
        BlockCache blocks = new BlockCache(allocator.blocks("block_cache"), 128L << 20);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicInteger producing = new AtomicInteger(PARTITIONS);

        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            int partition = p;
            threads.add(worker("producer-" + p, failure, () -> {
                try {
                    produce(partitions.get(partition), nextOffsets.get(partition), partition, operations);
                } finally {
                    producing.decrementAndGet();
                }
            }));
        }
        for (int r = 0; r < TAIL_READERS; r++) {
            int reader = r;
            threads.add(worker("tail-reader-" + r, failure,
                    () -> tailRead(partitions, nextOffsets, producing, reader, operations)));
        }
        for (int r = 0; r < COLD_READERS; r++) {
            int reader = r;
            threads.add(worker("cold-reader-" + r, failure, () -> coldRead(blocks, reader, Math.max(1, operations / 10))));
        }
        long start = System.nanoTime();
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        double seconds = (System.nanoTime() - start) / 1e9;

        long logBytes = 0;
        long appended = 0;
        long tailHits = 0;
        long tailReads = 0;
        for (int p = 0; p < PARTITIONS; p++) {
            LogCache log = partitions.get(p);
            logBytes += log.bytes();
            appended += nextOffsets.get(p).get();
            tailHits += log.hits();
            tailReads += log.hits() + log.misses();
        }
        PoolStats running = allocator.stats();
        boolean accountingMatches = running.category("log_cache").requested() == logBytes
                && running.category("block_cache").requested() == blocks.bytes();
        System.out.printf(Locale.ROOT, "%d batches appended to %d partitions (%.1f MiB cached), tail reads %.1f%% hits; "
                        + "block cache %.1f%% hits (%d hits, %d misses, %d evictions, %d cached, %.1f MiB) in %.2f s%n",
                appended, PARTITIONS, logBytes / 1048576.0, 100.0 * tailHits / Math.max(1, tailReads),
                100.0 * blocks.hits() / Math.max(1, blocks.hits() + blocks.misses()), blocks.hits(), blocks.misses(),
                blocks.evictions(), blocks.size(), blocks.bytes() / 1048576.0, seconds);
        System.out.println("category requested bytes equal the caches' bytes: " + accountingMatches);
        System.out.print(running.report());

        partitions.forEach(LogCache::close);
        blocks.close();
        PoolStats end = allocator.stats();
        System.out.println("after closing the caches: " + end.summary());
        boolean released = end.requestedBytes() == 0 && end.liveAllocations() == 0;
        for (String category : new String[] {"log_cache", "block_cache"}) {
            CategoryStats stats = end.category(category);
            released &= stats.requested() == 0 && stats.liveBuffers() == 0;
        }
        if (failure.get() != null) {
            System.out.println("a worker failed: " + failure.get());
        }
        if (!released) {
            System.out.println("memory left live after closing the caches");
        }
        return failure.get() == null && accountingMatches && released;
    }

    private static Thread worker(String name, AtomicReference<Throwable> failure, Runnable body) {
        return new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }, name);
    }

    /** Appends {@code operations} batches to one partition; each batch starts with its offset. */
    private static void produce(LogCache log, AtomicLong nextOffset, int partition, int operations) {
        Random random = new Random(1 + partition);
        ByteBuf batch = Unpooled.directBuffer(1 << 20);
        try {
            for (int i = 0; i < operations; i++) {
                int size = (int) Math.exp(Math.log(100) + random.nextDouble() * (Math.log(1 << 20) - Math.log(100)));
                long offset = nextOffset.get();
                batch.clear().writerIndex(size).setLong(0, offset);
                log.append(offset, batch);
                nextOffset.set(offset + 1); // published after the append: readers only ask for appended offsets
            }
        } finally {
            batch.release();
        }
    }

    /**
     * Follows the partitions as a consumer at the tail of the log: reads the
     * next batch of a random partition once it is appended, at most
     * {@code operations} times; a batch already evicted is a miss, after which
     * the reader skips to the oldest cached batch. Stops early when the
     * producers are done and every partition is read to its end.
     */
    private static void tailRead(List<LogCache> partitions, List<AtomicLong> nextOffsets, AtomicInteger producing,
                                 int reader, int operations) {
        Random random = new Random(100 + reader);
        long[] position = new long[partitions.size()];
        int reads = 0;
        while (reads < operations) {
            boolean done = producing.get() == 0; // read before the offsets: nothing is appended after it
            int partition = random.nextInt(partitions.size());
            if (position[partition] >= nextOffsets.get(partition).get()) { // caught up on this partition
                if (done && caughtUp(position, nextOffsets)) {
                    return;
                }
                Thread.yield(); // let the producers run
                continue;
            }
            long offset = position[partition];
            LogCache log = partitions.get(partition);
            ByteBuf batch = log.read(offset);
            reads++;
            if (batch == null) {
                position[partition] = Math.max(offset + 1, log.oldestOffset());
                continue;
            }
            try {
                if (batch.getLong(0) != offset) {
                    throw new IllegalStateException("partition " + partition + " batch " + offset + " holds "
                            + batch.getLong(0));
                }
            } finally {
                batch.release();
            }
            position[partition] = offset + 1;
        }
    }

    private static boolean caughtUp(long[] position, List<AtomicLong> nextOffsets) {
        for (int p = 0; p < position.length; p++) {
            if (position[p] < nextOffsets.get(p).get()) {
                return false;
            }
        }
        return true;
    }

    /** Fetches skewed segment blocks through the block cache, {@code operations} times. */
    private static void coldRead(BlockCache blocks, int reader, int operations) {
        Random random = new Random(200 + reader);
        for (int i = 0; i < operations; i++) {
            int key = (int) Math.floor(Math.pow(random.nextDouble(), 3) * SEGMENT_KEYS); // skewed towards low keys
            int size = blockSize(key);
            ByteBuf block = blocks.getOrLoad("segment-" + key, size,
                    (k, buf) -> buf.writerIndex(size).setInt(0, key).setInt(size - 4, key));
            if (block != null) {
                try {
                    if (block.capacity() != size || block.getInt(0) != key || block.getInt(size - 4) != key) {
                        throw new IllegalStateException("block " + key + " holds " + block.getInt(0));
                    }
                } finally {
                    block.release();
                }
            }
        }
    }

    /** The size of a segment block: 64 KiB to 8 MiB, fixed per key. */
    static int blockSize(int key) {
        return 64 * 1024 + new Random(key).nextInt(8 * 1024 * 1024 - 64 * 1024 + 1);
    }
}
