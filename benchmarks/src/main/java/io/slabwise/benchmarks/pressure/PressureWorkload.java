package io.slabwise.benchmarks.pressure;

import io.netty.buffer.ByteBuf;
import io.netty.util.Version;
import io.netty.util.internal.PlatformDependent;
import io.slabwise.MemoryLimitException;
import io.slabwise.PressureConfig;
import io.slabwise.PressureStats;
import io.slabwise.benchmarks.CommandLine;
import io.slabwise.benchmarks.simulator.Distributions.Zipf;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Memory pressure, measured: a log cache (FIFO) and a block cache (LRU, 1 MiB
 * blocks) fill an allocator while readers hit them on seeded key
 * distributions; then network buffers burst to 25% and to 50% of the ceiling,
 * each held a while, and drop. One run per configuration
 * ({@link PressureSetup}): Slabwise with shrinkers, Slabwise with fixed
 * per-category quotas, Netty's pooled and adaptive allocators bounded only by
 * the caches' own budgets.
 *
 * <h2>Time</h2>
 * Everything runs on one thread and in <b>steps</b>, the logical clock of
 * every figure: a step appends {@code --appends} log records (1 KiB to
 * 256 KiB, log-uniform), makes {@code --log-reads} reads of the log (the lag
 * behind its newest record log-uniform from 1 to twice the records a full log
 * cache holds) and {@code --block-reads} of the block cache (Zipf 0.9 keys
 * over twice the blocks a full block cache holds; a miss loads the block),
 * and moves the network buffers towards the phase's target. Slabwise's pool
 * runs its background work (the pressure check, decay) on a scheduler that
 * counts one millisecond per step ({@link StepScheduler}), between steps, so
 * a run does the same work on a busy machine and on a quiet one; only the
 * latencies are wall time.
 *
 * <h2>Phases</h2>
 * <ol>
 *   <li>{@code fill}: the caches fill (enough steps to append 1.5 times the
 *       log budget);</li>
 *   <li>{@code before}: {@code --phase-steps} steps; the hit rate to come back to;</li>
 *   <li>{@code burst25}: network buffers (4 KiB to 128 KiB, log-uniform) grow to
 *       25% of the ceiling over {@code --ramp-steps}, then every step releases
 *       the oldest {@code --churn} buffers and allocates new ones up to the target;</li>
 *   <li>{@code burst50}: the same at 50%;</li>
 *   <li>{@code after}: every network buffer released at once; the run goes on
 *       until the hit rate of the last {@code --window} steps is within 5 points
 *       of {@code before}'s, at most {@code --recovery-steps}.</li>
 * </ol>
 * Network allocations on Slabwise count as made on an event loop (the pool's
 * {@code waitAllowed} says no while one is made): they shrink inline, within
 * {@code PressureConfig.inline}, and a refusal throws.
 */
public final class PressureWorkload {

    private static final int MiB = 1 << 20;
    private static final int BLOCK = MiB;
    private static final int MIN_RECORD = 1024;
    private static final int MAX_RECORD = 256 * 1024;
    private static final int MIN_NETWORK = 4 * 1024;
    private static final int MAX_NETWORK = 128 * 1024;

    /** A phase of the run: its name, steps and the network bytes it holds, as a fraction of the ceiling. */
    private record Phase(String name, long steps, double network) {
    }

    private final Settings settings;
    private final PressureSetup setup;
    private final PressureConfig pressure;

    private PressureWorkload(Settings settings, PressureSetup setup, PressureConfig pressure) {
        this.settings = settings;
        this.setup = setup;
        this.pressure = pressure;
    }

    /** The options of a run. */
    record Settings(long ceiling, long seed, int appends, int logReads, int blockReads, long phaseSteps,
                    long rampSteps, int churn, int window, long recoverySteps) {

        /** Steps to append 1.5 times the log budget at the mean record size. */
        long fillSteps(long logBudget) {
            double mean = (MAX_RECORD - MIN_RECORD) / Math.log((double) MAX_RECORD / MIN_RECORD);
            return (long) Math.ceil(1.5 * logBudget / (mean * appends));
        }
    }

    /**
     * Runs the workload with the configurations named by {@code --configs}
     * (default all four) one after the other in this JVM; prints a line per
     * phase and the result table, appends one CSV row per configuration to
     * {@code --csv} and writes the table to {@code --out}.
     */
    public static void main(String[] args) throws IOException {
        Map<String, String> o = CommandLine.parse(args, Set.of("ceiling-mib", "seed", "configs", "appends", "log-reads",
                "block-reads", "phase-steps", "ramp-steps", "churn", "window", "recovery-steps", "csv", "out",
                "inline-kib", "inline-micros"),
                Set.of("quick", "help"));
        if (o.containsKey("help")) {
            System.out.println("PressureWorkload [--quick] [--ceiling-mib 1536] [--configs shrinkers,limitonly,budgets,pooled,adaptive]"
                    + " [--seed 1] [--appends 4] [--log-reads 8] [--block-reads 4] [--phase-steps 2000 (quick 500)]"
                    + " [--ramp-steps 100] [--churn 8] [--window 200] [--recovery-steps 20000] [--csv FILE] [--out FILE]"
                    + " [--inline-kib 16384] [--inline-micros 1000]");
            return;
        }
        boolean quick = o.containsKey("quick");
        Settings settings = new Settings(
                Long.parseLong(o.getOrDefault("ceiling-mib", quick ? "256" : "1536")) * MiB,
                Long.parseLong(o.getOrDefault("seed", "1")),
                Integer.parseInt(o.getOrDefault("appends", "4")),
                Integer.parseInt(o.getOrDefault("log-reads", "8")),
                Integer.parseInt(o.getOrDefault("block-reads", "4")),
                Long.parseLong(o.getOrDefault("phase-steps", quick ? "500" : "2000")),
                Long.parseLong(o.getOrDefault("ramp-steps", "100")),
                Integer.parseInt(o.getOrDefault("churn", "8")),
                Integer.parseInt(o.getOrDefault("window", "200")),
                Long.parseLong(o.getOrDefault("recovery-steps", quick ? "3000" : "20000")));
        // the default PressureConfig unless the bounds of inline shrinking (network allocations) are changed
        PressureConfig defaults = PressureConfig.defaults();
        PressureConfig pressure = o.containsKey("inline-kib") || o.containsKey("inline-micros")
                ? PressureConfig.builder().inline(
                        Long.parseLong(o.getOrDefault("inline-kib", Long.toString(defaults.inlineBytes() / 1024))) * 1024,
                        Duration.ofNanos(1000 * Long.parseLong(o.getOrDefault("inline-micros",
                                Long.toString(defaults.inlineTime().toNanos() / 1000))))).build()
                : defaults;
        List<PressureSetup> setups = new ArrayList<>();
        for (String name : o.getOrDefault("configs", "shrinkers,limitonly,budgets,pooled,adaptive").split(",")) {
            setups.add(PressureSetup.of(name.trim()));
        }
        System.out.printf("java %s, netty %s, ceiling %d MiB, seed %d; a step: %d appends, %d log reads, %d block reads;"
                        + " shrinkers: %s%n", Runtime.version(), nettyVersion(), settings.ceiling() / MiB, settings.seed(),
                settings.appends(), settings.logReads(), settings.blockReads(), pressure);
        List<Result> results = new ArrayList<>();
        for (PressureSetup setup : setups) {
            results.add(new PressureWorkload(settings, setup, pressure).run());
        }
        String table = Result.table(results, settings);
        System.out.println();
        System.out.print(table);
        if (o.containsKey("out")) {
            Files.writeString(Path.of(o.get("out")), table, StandardCharsets.UTF_8);
        }
        if (o.containsKey("csv")) {
            Path csv = Path.of(o.get("csv"));
            StringBuilder rows = new StringBuilder();
            if (!Files.exists(csv)) {
                rows.append(Result.CSV_HEADER).append('\n');
            }
            for (Result r : results) {
                rows.append(r.csv()).append('\n');
            }
            Files.writeString(csv, rows, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
        for (Result r : results) {
            if ((r.setup == PressureSetup.shrinkers || r.setup == PressureSetup.limitonly) && r.refused > 0) {
                System.out.println("FAILED: " + r.setup.label() + " refused " + r.refused + " network allocations");
                System.exit(1);
            }
        }
    }

    private static String nettyVersion() {
        Version v = Version.identify().get("netty-buffer");
        return v == null ? "?" : v.artifactVersion();
    }

    /** The run: the phases one after the other, then what they measured. */
    private Result run() {
        long ceiling = settings.ceiling();
        PressureSetup.Allocators allocators = setup.create(ceiling, pressure);
        long logBudget = setup.logBudget(ceiling);
        long blockBudget = setup.blockBudget(ceiling);
        LogCache log = new LogCache(allocators::log, logBudget);
        BlockCache blocks = new BlockCache(allocators::block, BLOCK, blockBudget);
        allocators.register(log, blocks);

        Random sizes = new Random(settings.seed());
        Random reads = new Random(settings.seed() * 31 + 7);
        Random network = new Random(settings.seed() * 131 + 17);
        // the key spaces are those of the caches' budgets in configuration (a), the same in every configuration
        long fullRecords = (long) (PressureSetup.shrinkers.logBudget(ceiling)
                / ((MAX_RECORD - MIN_RECORD) / Math.log((double) MAX_RECORD / MIN_RECORD)));
        int blockKeys = (int) (2 * PressureSetup.shrinkers.blockBudget(ceiling) / BLOCK);
        Zipf zipf = new Zipf(blockKeys, 0.9);

        List<Phase> phases = List.of(
                new Phase("fill", settings.fillSteps(PressureSetup.shrinkers.logBudget(ceiling)), 0),
                new Phase("before", settings.phaseSteps(), 0),
                new Phase("burst25", settings.rampSteps() + settings.phaseSteps(), 0.25),
                new Phase("burst50", settings.rampSteps() + settings.phaseSteps(), 0.50),
                new Phase("after", settings.recoverySteps(), 0));
        Result result = new Result(setup, ceiling);
        long startNanos = System.nanoTime();
        try {
            runPhases(phases, allocators, log, blocks, result, sizes, reads, network, fullRecords, zipf);
        } catch (OutOfMemoryError e) {
            // an allocator without a ceiling ran into the JVM's direct memory limit: the run ends there
            result.failure = e.toString();
        }
        result.seconds = (System.nanoTime() - startNanos) / 1e9;
        result.peakResident = peakResidentBytes();
        result.pressure = allocators.pressureStats();
        result.logShed = log.shedBytes();
        result.blockShed = blocks.shedBytes();
        result.cacheRefused = log.refused() + blocks.refused();
        log.clear();
        blocks.clear();
        allocators.close();
        return result;
    }

    /** The phases one after the other: the steps of each, and its line once done. */
    private void runPhases(List<Phase> phases, PressureSetup.Allocators allocators, LogCache log, BlockCache blocks,
                           Result result, Random sizes, Random reads, Random network, long fullRecords, Zipf zipf) {
        ArrayDeque<ByteBuf> live = new ArrayDeque<>();
        long[] networkBytes = {0};
        int[] windowHits = new int[settings.window()];
        int[] windowReads = new int[settings.window()];
        long windowHitSum = 0;
        long windowReadSum = 0;
        for (Phase phase : phases) {
            PhaseTally tally = new PhaseTally();
            long target = (long) (phase.network() * settings.ceiling());
            long rampBytes = Math.max(1, target / Math.max(1, settings.rampSteps()));
            for (long s = 0; s < phase.steps(); s++) {
                allocators.advance();
                for (int i = 0; i < settings.appends(); i++) {
                    log.append(logUniform(sizes, MIN_RECORD, MAX_RECORD));
                }
                int hits = 0;
                int readsThisStep = 0;
                for (int i = 0; i < settings.logReads(); i++) {
                    long lag = Math.min(log.appended(), logUniformLong(reads, 1, 2 * fullRecords));
                    hits += log.read(lag) ? 1 : 0;
                    readsThisStep++;
                }
                for (int i = 0; i < settings.blockReads(); i++) {
                    boolean hit = blocks.read(zipf.next(reads));
                    hits += hit ? 1 : 0;
                    tally.blockHits += hit ? 1 : 0;
                    readsThisStep++;
                }
                tally.hits += hits;
                tally.reads += readsThisStep;
                int w = (int) (s % windowHits.length);
                windowHitSum += hits - windowHits[w];
                windowReadSum += readsThisStep - windowReads[w];
                windowHits[w] = hits;
                windowReads[w] = readsThisStep;

                if (target == 0) {
                    while (!live.isEmpty()) {
                        ByteBuf b = live.pollFirst();
                        networkBytes[0] -= b.capacity();
                        b.release();
                    }
                } else {
                    if (networkBytes[0] >= target) {
                        for (int i = 0; i < settings.churn() && !live.isEmpty(); i++) {
                            ByteBuf b = live.pollFirst();
                            networkBytes[0] -= b.capacity();
                            b.release();
                        }
                    }
                    long goal = Math.min(target, networkBytes[0] + rampBytes);
                    while (networkBytes[0] < goal) {
                        int size = logUniform(network, MIN_NETWORK, MAX_NETWORK);
                        ByteBuf b = networkAllocation(allocators, size, result, phase, log, blocks, networkBytes[0]);
                        if (b == null) {
                            break; // refused: this step's traffic waits for the next step
                        }
                        live.addLast(b);
                        networkBytes[0] += size;
                    }
                }
                long committed = allocators.committed();
                result.peakCommitted = Math.max(result.peakCommitted, committed);
                result.peakJvmDirect = Math.max(result.peakJvmDirect, jvmDirectBytes());
                tally.sample(committed, log.bytes() + blocks.bytes(), networkBytes[0]);
                if (phase.name().equals("after") && result.recoverySteps < 0) {
                    double rate = 100.0 * windowHitSum / Math.max(1, windowReadSum);
                    if (rate >= result.hitBefore - 5) {
                        result.recoverySteps = s + 1;
                        tally.steps = s + 1;
                        break;
                    }
                }
                tally.steps = s + 1;
            }
            result.phases.put(phase.name(), tally);
            if (phase.name().equals("before")) {
                result.hitBefore = tally.hitRate();
            }
            System.out.printf("%-9s %-7s %6d steps  hit %5.1f%% (blocks %5.1f%%)  committed mean %6.0f MiB  caches %6.0f MiB"
                            + "  network peak %5.0f MiB  refused %d%n", setup.label(), phase.name(), tally.steps,
                    tally.hitRate(), tally.blockHitRate(settings.blockReads(), settings.logReads()),
                    tally.meanCommitted() / MiB, tally.meanCaches() / MiB, tally.peakNetwork / (double) MiB,
                    result.refusedByPhase.getOrDefault(phase.name(), 0L));
        }
        while (!live.isEmpty()) {
            live.pollFirst().release();
        }
    }

    /**
     * One network allocation, timed; counts it, and when it asked shrinkers
     * (the pool's count of allocations that shrank at a limit went up) keeps
     * its time. A refusal is counted, and the first few are described.
     */
    private ByteBuf networkAllocation(PressureSetup.Allocators allocators, int size, Result result, Phase phase,
                                      LogCache log, BlockCache blocks, long networkBytes) {
        PressureStats statsBefore = allocators.pressureStats();
        long shrinksBefore = statsBefore.limitShrinks();
        long committedBefore = allocators.committed();
        long start = System.nanoTime();
        ByteBuf b;
        try {
            b = allocators.network(size);
        } catch (MemoryLimitException e) {
            long took = System.nanoTime() - start;
            result.refused++;
            result.refusedByPhase.merge(phase.name(), 1L, Long::sum);
            if (result.refusals.size() < 3) {
                result.refusals.add(String.format("%s: network %d B refused after %.0f us; committed %d B before,"
                                + " %d after; log cache %d B, block cache %d B, network %d B; shrinks at a limit %d -> %d;"
                                + " shrinkers during it: %s; %s", phase.name(), size, took / 1e3, committedBefore,
                        allocators.committed(), log.bytes(), blocks.bytes(), networkBytes, shrinksBefore,
                        allocators.limitShrinks(), shrinkerDeltas(statsBefore, allocators.pressureStats()),
                        e.getMessage()));
            }
            return null;
        }
        long took = System.nanoTime() - start;
        b.writeByte(1);
        result.networkAllocations++;
        if (allocators.limitShrinks() != shrinksBefore) {
            result.shrinkNanos.add(took);
        }
        return b;
    }

    /** Per category, what its shrinker was asked, answered freed, and how often busy between two snapshots. */
    private static String shrinkerDeltas(PressureStats before, PressureStats after) {
        StringBuilder b = new StringBuilder();
        for (PressureStats.CategoryPressure c : after.categories()) {
            PressureStats.CategoryPressure was = before.category(c.name());
            long calls = c.calls() - (was == null ? 0 : was.calls());
            long asked = c.asked() - (was == null ? 0 : was.asked());
            long freed = c.freed() - (was == null ? 0 : was.freed());
            long busy = c.busy() - (was == null ? 0 : was.busy());
            b.append(b.length() == 0 ? "" : ", ").append(c.name()).append(' ').append(calls).append(" call(s) asked ")
                    .append(asked).append(" B freed ").append(freed).append(" B busy ").append(busy);
        }
        b.append("; longest shrinking at a limit so far ").append(after.maxLimitShrinkNanos() / 1000).append(" us");
        return b.toString();
    }

    private static final BufferPoolMXBean DIRECT = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
            .filter(b -> b.getName().equals("direct")).findFirst().orElse(null);

    /**
     * The JVM's direct memory: the larger of its direct buffers
     * ({@code BufferPoolMXBean} "direct") and Netty's own count
     * ({@code PlatformDependent.usedDirectMemory()}, -1 when it does not
     * count). Netty 4.2 counts buffers the JVM counts too, so the two are not
     * added.
     */
    static long jvmDirectBytes() {
        long buffers = DIRECT == null ? 0 : DIRECT.getMemoryUsed();
        return Math.max(buffers, PlatformDependent.usedDirectMemory());
    }

    /** The process's peak resident bytes ({@code VmHWM}), -1 where it cannot be read: a JVM's, so one run per JVM. */
    static long peakResidentBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    static int logUniform(Random random, int min, int max) {
        return (int) logUniformLong(random, min, max);
    }

    static long logUniformLong(Random random, long min, long max) {
        double lo = Math.log(min);
        double hi = Math.log(max);
        return Math.max(min, Math.min(max, Math.round(Math.exp(lo + random.nextDouble() * (hi - lo)))));
    }

    /** The hits, reads and memory of one phase. */
    static final class PhaseTally {
        long steps;
        long hits;
        long blockHits;
        long reads;
        long samples;
        double committedSum;
        double cachesSum;
        long peakNetwork;

        void sample(long committed, long caches, long network) {
            samples++;
            committedSum += committed;
            cachesSum += caches;
            peakNetwork = Math.max(peakNetwork, network);
        }

        double hitRate() {
            return reads == 0 ? Double.NaN : 100.0 * hits / reads;
        }

        double blockHitRate(int blockReads, int logReads) {
            long blockReadCount = reads * blockReads / Math.max(1, blockReads + logReads);
            return blockReadCount == 0 ? Double.NaN : 100.0 * blockHits / blockReadCount;
        }

        double meanCommitted() {
            return samples == 0 ? 0 : committedSum / samples;
        }

        double meanCaches() {
            return samples == 0 ? 0 : cachesSum / samples;
        }
    }
}
