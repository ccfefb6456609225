package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.slabwise.LimitPolicy;
import io.slabwise.MemoryLimitException;
import io.slabwise.PressureStats;
import io.slabwise.Scheduler;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The pressure phase of the broker demo: a burst of network buffers arrives
 * while a log cache and a block cache fill the pool, under two setups.
 *
 * <ul>
 *   <li><b>Shrinkers</b>: the caches may use the whole ceiling (the log cache
 *       up to 4/6 of it, the block cache up to 2/6) and each joins a
 *       {@link CacheShrinker}. At the ceiling, a network buffer makes them
 *       drop their oldest batches and least recently used blocks, about what
 *       it lacks, and is served.</li>
 *   <li><b>Fixed budgets</b>: quotas split a 6-part ceiling 2 : 1 : 1 (log
 *       cache 2/6, block cache 1/6, network 1/6, as AutoMQ configures its
 *       caches), with no shrinkers: the caches hold less while the network is
 *       quiet, and a burst beyond the network's sixth is refused.</li>
 * </ul>
 *
 * Each run fills the caches (appends past the log cache's bound, loads of
 * skewed block keys), reads them once to measure hit rates, takes a burst of
 * 64 KiB network buffers of the asked share of the ceiling and holds it,
 * reads the caches again, then releases everything. The pool's background
 * work runs on a scheduler that the demo never runs, so what the caches shed
 * is what the burst's allocations asked for, not what the high watermark's
 * background check would have taken too.
 */
final class NetworkBurst {

    private static final int MIB = 1 << 20;
    /** The ceiling: six parts of 8 MiB. */
    static final long CEILING = 48L * MIB;
    /** The chunk size: what one allocation at the ceiling asks the shrinkers for at least. */
    static final int CHUNK = MIB;
    /** The block pool's block: blocks of segments are 64 KiB to 2 MiB, so most of their bytes are whole blocks. */
    private static final int BLOCK = 64 * 1024;
    private static final int NETWORK_BUFFER = 64 * 1024;
    private static final int BLOCK_KEYS = 120;
    private static final int TAIL_LAG = 200;
    private static final int COLD_LOOKUPS = 1000;

    private NetworkBurst() {
    }

    /**
     * What one run saw.
     *
     * @param shrinkers       whether the caches had shrinkers (else fixed budgets)
     * @param burstBytes      the burst asked for
     * @param served          network bytes served
     * @param refused         network bytes refused
     * @param needed          what the burst lacked beyond the free room under the ceiling before it
     * @param logBefore       the log cache's bytes before the burst
     * @param logAfter        and after
     * @param blocksBefore    the block cache's bytes before the burst
     * @param blocksAfter     and after
     * @param logHits         the tail reads' hit rate before and after the burst
     * @param blockHits       the block lookups' hit rate before and after the burst
     * @param shrinkEvictions entries the two caches dropped when asked by the pool
     * @param pressure        the pool's pressure statistics after the burst
     * @param pressureReport  the pressure lines of the pool's report after the burst
     * @param accountingExact whether each cache category's requested bytes equalled the cache's bytes after the burst
     * @param released        whether nothing was left live once everything was released
     */
    record Outcome(boolean shrinkers, long burstBytes, long served, long refused, long needed, long logBefore,
                   long logAfter, long blocksBefore, long blocksAfter, double[] logHits, double[] blockHits,
                   long shrinkEvictions, PressureStats pressure, String pressureReport, boolean accountingExact,
                   boolean released) {

        /** The bytes the caches held before the burst. */
        long cachedBefore() {
            return logBefore + blocksBefore;
        }

        /** The bytes the caches dropped during the burst. */
        long shed() {
            return cachedBefore() - logAfter - blocksAfter;
        }

        /** What the caches shed per byte the burst lacked; 0 when it lacked nothing. */
        double shedRatio() {
            return needed == 0 ? 0 : (double) shed() / needed;
        }

        /** Two short lines for the demo's output. */
        String describe() {
            String shedLine = shrinkers
                    ? String.format(Locale.ROOT, "shed %s for %s needed (%.2fx)", mib(shed()), mib(needed), shedRatio())
                    : "shed nothing: the network's quota is " + mib(CEILING / 6);
            return String.format(Locale.ROOT, "  %-13s served %s, refused %s; caches %s -> %s (log %s -> %s, block %s -> %s)%n"
                            + "  %-13s %s; hits: log %.0f%% -> %.0f%%, block %.0f%% -> %.0f%%%n",
                    shrinkers ? "shrinkers:" : "fixed 2:1:1:", mib(served), mib(refused), mib(cachedBefore()),
                    mib(logAfter + blocksAfter), mib(logBefore), mib(logAfter), mib(blocksBefore), mib(blocksAfter), "",
                    shedLine, logHits[0], logHits[1], blockHits[0], blockHits[1]);
        }
    }

    /** Runs the burst of {@code share} of the ceiling with shrinkers or with fixed budgets. */
    static Outcome run(boolean shrinkers, double share) {
        SlabwiseAllocator.Builder builder = SlabwiseAllocator.builder().maxMemory(CEILING).chunkSize(CHUNK).arenas(1)
                .limitPolicy(LimitPolicy.FAIL).scheduler(NEVER);
        long logBudget = shrinkers ? 4 * CEILING / 6 : 2 * CEILING / 6;
        long blockBudget = shrinkers ? 2 * CEILING / 6 : CEILING / 6;
        if (!shrinkers) {
            builder.quota("log_cache", logBudget).quota("block_cache", blockBudget).quota("network", CEILING / 6);
        }
        SlabwiseAllocator allocator = builder.build();
        LogCache log = new LogCache(allocator.sequential("log_cache"), logBudget, null,
                shrinkers ? new CacheShrinker(allocator, "log_cache") : null);
        BlockCache blocks = new BlockCache(allocator.blocks("block_cache", BLOCK, 1), blockBudget, null,
                shrinkers ? new CacheShrinker(allocator, "block_cache") : null);
        long[] nextOffset = {0};
        fill(log, blocks, nextOffset);
        double[] logHits = new double[2];
        double[] blockHits = new double[2];
        logHits[0] = tailReads(log, nextOffset[0]);
        blockHits[0] = coldReads(blocks);
        long logBefore = log.bytes();
        long blocksBefore = blocks.bytes();
        long needed = Math.max(0, (long) (share * CEILING) - (CEILING - allocator.stats().committedBytes()));

        long burstBytes = (long) (share * CEILING);
        ByteBufAllocator network = allocator.forCategory("network");
        List<ByteBuf> burst = new ArrayList<>();
        long served = 0;
        long refused = 0;
        for (long asked = 0; asked < burstBytes; asked += NETWORK_BUFFER) {
            try {
                burst.add(network.directBuffer(NETWORK_BUFFER));
                served += NETWORK_BUFFER;
            } catch (MemoryLimitException e) {
                refused += NETWORK_BUFFER;
            }
        }
        long logAfter = log.bytes();
        long blocksAfter = blocks.bytes();
        logHits[1] = tailReads(log, nextOffset[0]);
        blockHits[1] = coldReads(blocks);
        boolean exact = allocator.stats().category("log_cache").requested() == log.bytes()
                && allocator.stats().category("block_cache").requested() == blocks.bytes();
        PressureStats pressure = allocator.pool().pressureStats();
        StringBuilder report = new StringBuilder();
        for (String line : allocator.pool().report().split("\n")) {
            if (line.startsWith("  pressure:") || line.startsWith("    shrinker ")) {
                report.append(line).append('\n');
            }
        }
        long shrinkEvictions = log.shrinkEvictions() + blocks.shrinkEvictions();

        burst.forEach(ByteBuf::release);
        log.close();
        blocks.close();
        boolean released = allocator.stats().requestedBytes() == 0 && allocator.stats().liveAllocations() == 0;
        allocator.close();
        return new Outcome(shrinkers, burstBytes, served, refused, needed, logBefore, logAfter, blocksBefore,
                blocksAfter, logHits, blockHits, shrinkEvictions, pressure, report.toString(), exact, released);
    }

    /** Appends batches (1 to 128 KiB, seeded) past the log cache's bound, and loads every block key once, skewed ones again. */
    private static void fill(LogCache log, BlockCache blocks, long[] nextOffset) {
        Random random = new Random(400);
        ByteBuf batch = Unpooled.directBuffer(128 * 1024);
        try {
            for (long appended = 0; appended < log.maxBytes() * 3 / 2; nextOffset[0]++) {
                int size = (int) Math.exp(Math.log(1024) + random.nextDouble() * Math.log(128));
                batch.clear().writerIndex(size).setLong(0, nextOffset[0]);
                log.append(nextOffset[0], batch);
                appended += size;
            }
        } finally {
            batch.release();
        }
        for (int key = 0; key < BLOCK_KEYS; key++) {
            load(blocks, key);
        }
        coldReads(blocks);
    }

    /** Reads the newest {@value #TAIL_LAG} offsets, as lagging tail readers do; returns the hit rate in percent. */
    private static double tailReads(LogCache log, long end) {
        long hits = log.hits();
        long misses = log.misses();
        for (long offset = end - TAIL_LAG; offset < end; offset++) {
            ByteBuf batch = log.read(offset);
            if (batch != null) {
                if (batch.getLong(0) != offset) {
                    throw new IllegalStateException("batch " + offset + " holds " + batch.getLong(0));
                }
                batch.release();
            }
        }
        return percent(log.hits() - hits, log.misses() - misses);
    }

    /** Looks up {@value #COLD_LOOKUPS} skewed block keys (seeded), loading misses; returns the hit rate in percent. */
    private static double coldReads(BlockCache blocks) {
        long hits = blocks.hits();
        long misses = blocks.misses();
        Random random = new Random(500);
        for (int i = 0; i < COLD_LOOKUPS; i++) {
            load(blocks, (int) Math.floor(Math.pow(random.nextDouble(), 2) * BLOCK_KEYS));
        }
        return percent(blocks.hits() - hits, blocks.misses() - misses);
    }

    private static void load(BlockCache blocks, int key) {
        int size = blockSize(key);
        ByteBuf block = blocks.getOrLoad("segment-" + key, size, (k, buf) -> buf.writerIndex(size).setInt(0, key));
        if (block != null) {
            if (block.getInt(0) != key) {
                throw new IllegalStateException("block " + key + " holds " + block.getInt(0));
            }
            block.release();
        }
    }

    /** 64 KiB to 2 MiB, log-uniform, fixed per key. */
    private static int blockSize(int key) {
        return (int) Math.exp(Math.log(64 * 1024) + new Random(key).nextDouble() * Math.log(32));
    }

    private static double percent(long hits, long misses) {
        return 100.0 * hits / Math.max(1, hits + misses);
    }

    static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) MIB);
    }

    /** The pool's background work never runs: the demo measures what the burst alone made the caches shed. */
    private static final Scheduler NEVER = (task, period) -> () -> { };
}
