package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.slabwise.BlockStats;
import io.slabwise.CategoryStats;
import io.slabwise.CompactionStats;
import io.slabwise.PoolStats;
import io.slabwise.SequentialStats;
import io.slabwise.netty.BlockByteBufAllocator;
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
 * rates and the allocator's report.
 *
 * <p>Then it compacts. Both caches join a {@link CacheRelocator} of their
 * category, so they move their entries when the allocator asks. First one
 * request thread appends to both partitions, most batches to partition 0 and
 * a small one in sixteen to partition 1, until partition 0 has turned its
 * cache over twice: the chunks behind are emptied of partition 0's batches
 * but stay pinned by partition 1's. Retention deletes the segments below
 * {@value #RETAINED_FROM}, whose blocks leave the block cache and leave the
 * blocks cut for their tails sparsely used. The demo prints the pinned
 * chunks, the blocks held, the bytes of the pool's chunks and blocks and its
 * committed bytes before and after {@code allocator.compact()}, with what the
 * compaction did, and checks every cached batch and block again. (Where the
 * pool carves its chunks and blocks out of 32 MiB region groups, the default
 * with malloc on glibc, committed bytes count whole groups and drop only when
 * a group empties; the chunks and blocks freed are room for the next ones.)
 *
 * <p>Then it closes the caches and checks that nothing is left live.
 *
 * <p>Last comes memory pressure ({@link NetworkBurst}), on a pool of its own
 * with a 48 MiB ceiling: a burst of network buffers of a quarter, then half,
 * of the ceiling arrives while a log cache and a block cache fill the pool.
 * With a {@link CacheShrinker} per cache the burst is served and the caches
 * shed about what it lacked; with fixed budgets (quotas 2 : 1 : 1 of six
 * parts: log cache, block cache, network) the same burst is refused beyond
 * the network's sixth. For each it prints the network bytes served and
 * refused, the caches' bytes before and after, what they shed against what
 * the burst needed, the hit rates before and after, and the pool's pressure
 * lines.
 *
 * <p>It exits with status 1 when something was left live (or a reader saw a
 * wrong batch, a compaction changed one, a burst was refused with shrinkers
 * or served whole on fixed budgets).
 *
 * <p>Run with {@code mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.broker.BrokerCacheDemo}.
 */
public final class BrokerCacheDemo {

    private static final int PARTITIONS = 2;
    private static final int TAIL_READERS = 2;
    private static final int COLD_READERS = 2;
    private static final int SEGMENT_KEYS = 400;
    /** Retention keeps the segments from this key on. */
    private static final int RETAINED_FROM = 200;
    /** One batch in this many goes to the quiet partition during the compaction phase. */
    private static final int QUIET_SHARE = 16;

    private BrokerCacheDemo() {
    }

    /** Runs the demo with 20,000 operations per thread; exits with status 1 if anything was left live. */
    public static void main(String[] args) throws Exception {
        System.exit(run(20_000) ? 0 : 1);
    }

    /**
     * Runs {@code operations} operations per producer and tail reader (a tenth
     * of that per cold reader, whose blocks are large), then the compaction phase.
     *
     * @return whether every reader saw the right bytes, the accounting matched
     *         the caches, every entry was intact after the compaction, and
     *         everything was released at the end
     */
    public static boolean run(int operations) throws InterruptedException {
        return measure(operations).succeeded();
    }

    /**
     * What a run found around its compaction, for a test to check.
     *
     * @param succeeded       what {@link #run} returns
     * @param logBefore       the log cache's sequential allocator before the compaction
     * @param logAfter        and after
     * @param blocksBefore    the block cache's block pool before the compaction
     * @param blocksAfter     and after
     * @param poolBefore      the pool before the compaction
     * @param poolAfter       and after
     * @param compaction      what the compaction did
     * @param bursts          the pressure phase: each burst with shrinkers, then on fixed budgets
     */
    record Outcome(boolean succeeded, SequentialStats logBefore, SequentialStats logAfter, BlockStats blocksBefore,
                   BlockStats blocksAfter, PoolStats poolBefore, PoolStats poolAfter, CompactionStats compaction,
                   List<NetworkBurst.Outcome> bursts) {
    }

    /** The bursts of the pressure phase, as shares of the ceiling. */
    static final double[] BURSTS = {0.25, 0.5};

    /** Runs as {@link #run} does and returns what it found. */
    static Outcome measure(int operations) throws InterruptedException {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().quota("block_cache", 256L << 20).build();
        SequentialByteBufAllocator logAllocator = allocator.sequential("log_cache");
        BlockByteBufAllocator blockAllocator = allocator.blocks("block_cache");
        CacheRelocator logRelocator = new CacheRelocator(allocator, "log_cache"); // the partitions share it
        List<LogCache> partitions = new ArrayList<>();
        List<AtomicLong> nextOffsets = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            partitions.add(new LogCache(logAllocator, 32L << 20, logRelocator));
            nextOffsets.add(new AtomicLong());
        }
        BlockCache blocks = new BlockCache(blockAllocator, 128L << 20, new CacheRelocator(allocator, "block_cache"));
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

        int quietBatches = turnOverOnePartition(partitions.get(0), partitions.get(1), nextOffsets);
        int deleted = 0;
        for (int key = 0; key < RETAINED_FROM; key++) {
            deleted += blocks.invalidate(segment(key)) ? 1 : 0;
        }
        System.out.printf(Locale.ROOT, "compaction phase: partition 0 turned over twice with %d small batches of partition 1 "
                + "in between; retention deleted %d cached blocks, %d left%n", quietBatches, deleted, blocks.size());
        SequentialStats logBefore = logAllocator.stats();
        BlockStats blocksBefore = blockAllocator.stats();
        PoolStats poolBefore = allocator.stats();
        System.out.println("before compaction: " + compactionFigures(logBefore, blocksBefore, poolBefore));
        CompactionStats compaction = allocator.compact();
        System.out.println(compaction);
        SequentialStats logAfter = logAllocator.stats();
        BlockStats blocksAfter = blockAllocator.stats();
        PoolStats poolAfter = allocator.stats();
        System.out.println("after compaction:  " + compactionFigures(logAfter, blocksAfter, poolAfter));
        boolean intact = partitions.stream().allMatch(BrokerCacheDemo::batchesIntact) && blocksIntact(blocks);
        long logBytesAfter = partitions.stream().mapToLong(LogCache::bytes).sum();
        intact &= poolAfter.category("log_cache").requested() == logBytesAfter
                && poolAfter.category("block_cache").requested() == blocks.bytes();
        System.out.println("every cached batch and block intact, category requested bytes equal the caches' bytes: " + intact);

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
        List<NetworkBurst.Outcome> bursts = new ArrayList<>();
        boolean pressureHolds = true;
        for (double share : BURSTS) {
            System.out.printf(Locale.ROOT, "network burst of %s (%.0f%% of a %s ceiling) in 64 KiB buffers, caches full:%n",
                    NetworkBurst.mib((long) (share * NetworkBurst.CEILING)), 100 * share, NetworkBurst.mib(NetworkBurst.CEILING));
            for (boolean shrinkers : new boolean[] {true, false}) {
                NetworkBurst.Outcome burst = NetworkBurst.run(shrinkers, share);
                bursts.add(burst);
                System.out.print(burst.describe());
                System.out.print(burst.pressureReport());
                pressureHolds &= burst.accountingExact() && burst.released()
                        && (shrinkers ? burst.refused() == 0 : burst.refused() > 0);
            }
        }
        if (!pressureHolds) {
            System.out.println("a burst was not served with shrinkers, or not refused on fixed budgets, or memory was left live");
        }
        boolean succeeded = failure.get() == null && accountingMatches && intact && released && pressureHolds;
        return new Outcome(succeeded, logBefore, logAfter, blocksBefore, blocksAfter, poolBefore, poolAfter, compaction,
                bursts);
    }

    /**
     * One request thread appends to both partitions: to {@code busy} until
     * it has turned its cache over twice, and after every
     * {@value #QUIET_SHARE}th of those a small batch (100 B to 4 KiB) to
     * {@code quiet}. Returns the batches appended to {@code quiet}.
     */
    private static int turnOverOnePartition(LogCache busy, LogCache quiet, List<AtomicLong> nextOffsets) {
        Random random = new Random(300);
        ByteBuf batch = Unpooled.directBuffer(1 << 20);
        int quietBatches = 0;
        try {
            long appended = 0;
            for (int i = 0; i < 100_000 && appended < 2 * busy.maxBytes(); i++) {
                int size = logUniform(random, 100, 1 << 20);
                appendNext(busy, nextOffsets.get(0), batch, size);
                appended += size;
                if (i % QUIET_SHARE == 0) {
                    appendNext(quiet, nextOffsets.get(1), batch, logUniform(random, 100, 4096));
                    quietBatches++;
                }
            }
        } finally {
            batch.release();
        }
        return quietBatches;
    }

    /** Appends a batch of {@code size} bytes starting with its offset at the partition's next offset. */
    private static void appendNext(LogCache log, AtomicLong nextOffset, ByteBuf batch, int size) {
        long offset = nextOffset.get();
        batch.clear().writerIndex(size).setLong(0, offset);
        log.append(offset, batch);
        nextOffset.set(offset + 1); // published after the append: readers only ask for appended offsets
    }

    /** A size from {@code min} to {@code max}, log-uniform. */
    private static int logUniform(Random random, int min, int max) {
        return (int) Math.exp(Math.log(min) + random.nextDouble() * (Math.log(max) - Math.log(min)));
    }

    /** Pinned chunks of the log cache, blocks of the block cache, the pool's chunks and blocks and committed bytes. */
    private static String compactionFigures(SequentialStats log, BlockStats blocks, PoolStats pool) {
        return String.format(Locale.ROOT, "log_cache %d pinned chunks (%.1f%% used), block_cache %d blocks "
                        + "(%.1f MiB free in them); pool chunks and blocks %.1f MiB, committed=%.1f MiB",
                log.pinnedChunks(), 100 * log.pinnedOccupancy(), blocks.blocks(), blocks.freeSlotBytes() / 1048576.0,
                chunkAndBlockBytes(pool) / 1048576.0, pool.committedBytes() / 1048576.0);
    }

    /** The bytes of the chunks and blocks the pool holds: what compaction gives back. */
    static long chunkAndBlockBytes(PoolStats pool) {
        return pool.chunkBytes() + pool.blockRegionBytes();
    }

    /** Whether every batch the partition caches starts with its offset. */
    private static boolean batchesIntact(LogCache log) {
        for (long offset = log.oldestOffset(); offset >= 0 && offset <= log.newestOffset(); offset++) {
            ByteBuf batch = log.read(offset);
            if (batch == null) {
                return false; // a gap: the cache holds a run of offsets
            }
            try {
                if (batch.getLong(0) != offset) {
                    return false;
                }
            } finally {
                batch.release();
            }
        }
        return true;
    }

    /** Whether every block the cache holds carries its key at both ends and has its size. */
    private static boolean blocksIntact(BlockCache blocks) {
        for (int key = 0; key < SEGMENT_KEYS; key++) {
            if (!blocks.contains(segment(key))) {
                continue;
            }
            ByteBuf block = blocks.get(segment(key));
            if (block == null) {
                return false;
            }
            try {
                int size = blockSize(key);
                if (block.capacity() != size || block.getInt(0) != key || block.getInt(size - 4) != key) {
                    return false;
                }
            } finally {
                block.release();
            }
        }
        return true;
    }

    private static String segment(int key) {
        return "segment-" + key;
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
                appendNext(log, nextOffset, batch, logUniform(random, 100, 1 << 20));
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
            ByteBuf block = blocks.getOrLoad(segment(key), size,
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
