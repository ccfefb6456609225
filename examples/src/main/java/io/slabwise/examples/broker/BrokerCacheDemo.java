package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.PoolStats;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A small Kafka-like broker cache on one {@link SlabwiseAllocator}: producer
 * threads append record batches (100 B to 1 MiB) to a {@link LogCache} on the
 * sequential allocator; tail readers read the newest offsets from it; cold
 * readers fetch older data through a {@link BlockCache} on the block pool,
 * loading 64 KiB to 8 MiB blocks on a miss. It runs a fixed number of
 * operations, prints hit rates and the allocator's report, and checks that
 * everything was released at the end.
 *
 * <p>Run with {@code mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.broker.BrokerCacheDemo}.
 */
public final class BrokerCacheDemo {

    private BrokerCacheDemo() {
    }

    /** Runs the demo; exits with status 1 if anything was left live. */
    public static void main(String[] args) throws Exception {
        System.exit(run(20_000) ? 0 : 1);
    }

    /** Runs {@code operations} operations per thread; returns whether everything was released at the end. */
    public static boolean run(int operations) throws Exception {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().quota("block_cache", 256L << 20).build();
        LogCache log = new LogCache(allocator.sequential("log_cache"), 64L << 20);
        BlockCache blocks = new BlockCache(allocator.blocks("block_cache"), 128L << 20);
        AtomicLong nextOffset = new AtomicLong();
        AtomicLong tailHits = new AtomicLong();
        AtomicLong tailReads = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        threads.add(new Thread(() -> produce(log, nextOffset, operations), "producer"));
        threads.add(new Thread(() -> tailRead(log, nextOffset, operations, tailReads, tailHits), "tail-reader"));
        threads.add(new Thread(() -> coldRead(blocks, operations / 10), "cold-reader"));
        long start = System.nanoTime();
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("%d batches appended (%d cached, %.1f MiB), tail reads %.1f%% hits; block cache %d hits, %d misses, "
                        + "%d evictions (%d cached, %.1f MiB) in %.1f s%n", nextOffset.get(), log.size(), log.bytes() / 1048576.0,
                100.0 * tailHits.get() / Math.max(1, tailReads.get()), blocks.hits(), blocks.misses(), blocks.evictions(),
                blocks.size(), blocks.bytes() / 1048576.0, seconds);
        System.out.print(allocator.stats().report());
        log.close();
        blocks.close();
        PoolStats end = allocator.stats();
        System.out.println("after closing the caches: " + end.summary());
        return end.requestedBytes() == 0 && end.liveAllocations() == 0;
    }

    private static void produce(LogCache log, AtomicLong nextOffset, int operations) {
        Random random = new Random(1);
        ByteBuf batch = io.netty.buffer.Unpooled.directBuffer(1 << 20);
        try {
            for (int i = 0; i < operations; i++) {
                int size = (int) Math.exp(Math.log(100) + random.nextDouble() * (Math.log(1 << 20) - Math.log(100)));
                batch.clear().writerIndex(size).setLong(0, i);
                log.append(nextOffset.get(), batch);
                nextOffset.incrementAndGet();
            }
        } finally {
            batch.release();
        }
    }

    private static void tailRead(LogCache log, AtomicLong nextOffset, int operations, AtomicLong reads, AtomicLong hits) {
        Random random = new Random(2);
        for (int i = 0; i < operations; i++) {
            long newest = nextOffset.get() - 1;
            while (newest < 0) { // nothing appended yet
                Thread.onSpinWait();
                newest = nextOffset.get() - 1;
            }
            long offset = Math.max(0, newest - random.nextInt(64));
            ByteBuf batch = log.read(offset);
            reads.incrementAndGet();
            if (batch != null) {
                if (batch.readableBytes() >= 8 && batch.getLong(0) != offset) {
                    throw new IllegalStateException("batch " + offset + " holds " + batch.getLong(0));
                }
                hits.incrementAndGet();
                batch.release();
            }
        }
    }

    private static void coldRead(BlockCache blocks, int operations) {
        Random random = new Random(3);
        for (int i = 0; i < operations; i++) {
            int key = (int) Math.floor(Math.pow(random.nextDouble(), 3) * 400); // skewed towards low keys
            int size = 64 * 1024 + new Random(key).nextInt(8 * 1024 * 1024 - 64 * 1024);
            ByteBuf block = blocks.getOrLoad("segment-" + key, size, (k, buf) -> buf.writerIndex(size).setInt(0, key));
            if (block != null) {
                if (block.getInt(0) != key) {
                    throw new IllegalStateException("block " + key + " holds " + block.getInt(0));
                }
                block.release();
            }
        }
    }
}
