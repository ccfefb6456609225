package io.slabwise.benchmarks.simulator;

import io.slabwise.CompactionStats;
import io.slabwise.benchmarks.CommandLine;
import io.netty.util.Version;
import io.netty.util.concurrent.FastThreadLocalThread;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The fragmentation simulator: long, seeded, trace-like workloads run on
 * Slabwise and on Netty's pooled and adaptive allocators one after another in
 * the same JVM, a fresh allocator per (workload, allocator) run, sampling
 * requested, reserved, committed and resident bytes every {@code K}
 * operations. It writes a CSV per run, an SVG chart per workload and the
 * allocator's own end-of-run report, and prints a table of committed/requested
 * at steady state (the mean over the second half of the samples) and at the
 * end, and the peak committed bytes.
 *
 * <pre>
 * java -Xmx2g -XX:MaxDirectMemorySize=8g -cp benchmarks/target/benchmarks.jar \
 *     io.slabwise.benchmarks.simulator.FragmentationSimulator
 *     [--workloads fifo,lru,phase,mix,broker,phase-moving,mix-moving,proxy]
 *     [--allocators slabwise,slabwise-dropin,pooled,adaptive] [--traffic-gib 4] [--cache-mib 256] [--seed 1]
 *     [--out benchmarks/results] [--sample-every K] [--ceiling-fraction F] [--proxy-steps N]
 *     [--compaction owners|background|both|none] [--compaction-mib-per-second M] [--compact-occupancy F]
 *     [--compact-above R] [--quick]
 * </pre>
 *
 * {@code slabwise-dropin} is Slabwise with every buffer from the general
 * pool's {@code directBuffer} (the drop-in case), beside {@code slabwise} on
 * its dedicated strategies. {@code proxy} stands for the small-footprint
 * workloads {@code proxy-128} to {@code proxy-1024} (see {@link ProxyWorkload}),
 * which get a table of their own: live and committed bytes, and what each
 * allocator still holds once the threads have ended.
 *
 * {@code phase-moving} and {@code mix-moving} are {@code phase} and {@code mix}
 * whose owners of long-lived buffers move them when a compaction asks (see
 * {@link Owner}); only {@code slabwise} moves anything, so on the other
 * allocators they repeat the non-moving workload beside it. How compaction is
 * triggered is {@code --compaction}: by the owners themselves (the default),
 * by the pool's background budget, both, or not at all; each run reports what
 * its compactions moved and freed ({@code CompactionStats}).
 *
 * The workloads are described in {@code benchmarks/SIMULATOR.md}. With
 * {@code --ceiling-fraction F}, each workload runs once more on Slabwise with
 * a ceiling on committed memory of F times the peak of Netty's pooled
 * allocator in the same run (caches evict when refused, network buffers wait).
 */
public final class FragmentationSimulator {

    private static final Set<String> OPTIONS = Set.of("workloads", "allocators", "traffic-gib", "cache-mib", "seed",
            "out", "sample-every", "ceiling-fraction", "proxy-steps", "compaction", "compaction-mib-per-second",
            "compact-occupancy", "compact-above", "quick", "help");
    private static final Set<String> FLAGS = Set.of("quick", "help");
    private static final int SAMPLES_PER_RUN = 1000;
    /** What {@code proxy} in the workload list stands for: the proxy at these numbers of live buffers per thread. */
    private static final int[] PROXY_LIVE_BUFFERS = {128, 256, 512, 1024};
    private static final String PROXY = "proxy";
    /** The suffix of the workloads whose owners move their buffers. */
    private static final String MOVING = "-moving";
    private static final String DEFAULT_WORKLOADS = "fifo,lru,phase,mix,broker,phase-moving,mix-moving,proxy";
    /**
     * The committed/requested each workload that has a target should stay at
     * or under, at steady state with the default sizes (see docs/RESULTS.md);
     * drawn as a dashed line on its chart. {@code phase} and {@code mix} have
     * none of their own ({@code phase}: no worse than Netty's allocators); with
     * relocation, {@code phase-moving} is to stay at or under 1.5 (and end at
     * or under 1.2) and {@code mix-moving} at or under 1.10.
     */
    private static final Map<String, Double> TARGETS = Map.of("fifo", 1.05, "lru", 1.04, "broker", 1.10,
            "phase-moving", 1.5, "mix-moving", 1.10);

    private final Settings settings;
    /** Whether the owners of a -moving run compact by themselves, and at what occupancy. */
    private final boolean ownersCompact;
    private final double compactOccupancy;
    private final double compactAbove;
    /** The pool's background compaction budget in a -moving run on Slabwise; 0: none. */
    private final long backgroundBytesPerSecond;
    private final long sampleEvery;
    private final Path out;
    /** The run's context for the charts: date, JDK, Netty, sizes. */
    private final String context;
    private final List<String> table = new ArrayList<>();
    /** Every run's figures, for the table with one column per allocator. */
    private final List<Samples> finished = new ArrayList<>();
    /** The proxy workloads' rows: live and committed bytes, and what is still committed once the threads have ended. */
    private final List<String> proxyTable = new ArrayList<>();

    private FragmentationSimulator(Settings settings, boolean ownersCompact, double compactOccupancy, double compactAbove,
                                   long backgroundBytesPerSecond, long sampleEvery, Path out, String context) {
        this.settings = settings;
        this.ownersCompact = ownersCompact;
        this.compactOccupancy = compactOccupancy;
        this.compactAbove = compactAbove;
        this.backgroundBytesPerSecond = backgroundBytesPerSecond;
        this.sampleEvery = sampleEvery;
        this.out = out;
        this.context = context;
    }

    /** Entry point; see the class comment and {@code benchmarks/SIMULATOR.md} for the options. */
    public static void main(String[] args) throws Exception {
        Map<String, String> options = parse(args);
        if (options.containsKey("help")) {
            System.out.println("options: --workloads " + DEFAULT_WORKLOADS + " (proxy: proxy-128,proxy-256,proxy-512,"
                    + "proxy-1024; proxy-N: N live buffers per thread) --allocators slabwise,slabwise-dropin,pooled,adaptive"
                    + " (also adaptive-shared; by default the proxy runs add it)"
                    + " --traffic-gib G --cache-mib M --seed S --out DIR --sample-every K --ceiling-fraction F"
                    + " --proxy-steps N --compaction owners|background|both|none (who compacts in the -moving runs)"
                    + " --compaction-mib-per-second M (the background budget) --compact-occupancy F (the owners')"
                    + " --compact-above R (the pool's committed/reserved over which owners compact)"
                    + " --quick");
            return;
        }
        boolean quick = options.containsKey("quick");
        double trafficGib = Double.parseDouble(options.getOrDefault("traffic-gib", quick ? "0.25" : "4"));
        long cacheMib = Long.parseLong(options.getOrDefault("cache-mib", quick ? "64" : "256"));
        long seed = Long.parseLong(options.getOrDefault("seed", "1"));
        long sampleEvery = Long.parseLong(options.getOrDefault("sample-every", "0"));
        double ceilingFraction = Double.parseDouble(options.getOrDefault("ceiling-fraction", "0"));
        Path out = Path.of(options.getOrDefault("out", "benchmarks/results"));
        long proxySteps = Long.parseLong(options.getOrDefault("proxy-steps", quick ? "20000" : "1000000"));
        String compaction = options.getOrDefault("compaction", "owners");
        if (!List.of("owners", "background", "both", "none").contains(compaction)) {
            throw new IllegalArgumentException("unknown --compaction '" + compaction + "': use owners, background, both or none");
        }
        boolean ownersCompact = compaction.equals("owners") || compaction.equals("both");
        boolean background = compaction.equals("background") || compaction.equals("both");
        long backgroundBytesPerSecond = !background ? 0
                : Long.parseLong(options.getOrDefault("compaction-mib-per-second", "1024")) << 20;
        double compactOccupancy = Double.parseDouble(options.getOrDefault("compact-occupancy", "0.5"));
        double compactAbove = Double.parseDouble(options.getOrDefault("compact-above", "1.10"));
        new Compacting(ownersCompact, compactOccupancy, compactAbove); // fail on a bad figure before any run
        List<String> workloads = new ArrayList<>();
        for (String w : options.getOrDefault("workloads", DEFAULT_WORKLOADS).split(",")) {
            if (w.trim().equals(PROXY)) {
                for (int n : PROXY_LIVE_BUFFERS) {
                    workloads.add(PROXY + "-" + n);
                }
            } else {
                workloads.add(w.trim());
            }
        }
        List<AllocatorUnderTest> allocators = new ArrayList<>();
        for (String a : options.getOrDefault("allocators", "slabwise,slabwise-dropin,pooled,adaptive").split(",")) {
            allocators.add(allocator(a.trim()));
        }
        boolean defaultAllocators = !options.containsKey("allocators");
        for (String w : workloads) {
            workload(w, new Settings(1, 1, 1, 1), new AtomicLong(), null); // fail on a typo before any run
        }
        Files.createDirectories(out);

        Settings settings = new Settings((long) (trafficGib * (1L << 30)), cacheMib << 20, seed, proxySteps);
        System.out.printf(Locale.ROOT, "traffic %.2f GiB per cache workload, caches bounded at %d MiB, seed %d, "
                + "%d steps per proxy thread%n", trafficGib, cacheMib, seed, proxySteps);
        System.out.printf(Locale.ROOT, "-moving runs on slabwise: %s%s%s%n", ownersCompact
                        ? String.format(Locale.ROOT, "owners compact (chunks used at most %.2f) after releasing 1/%d of their"
                                + " bound and after each phase, when the pool's committed/reserved is over %.2f",
                                compactOccupancy, Math.round(1 / Compacting.STEP_FRACTION), compactAbove)
                        : "owners do not compact", ownersCompact && background ? ", " : background ? "; " : "",
                background ? "background compaction " + (backgroundBytesPerSecond >> 20) + " MiB/s" : "");
        System.out.printf(Locale.ROOT, "Java %s, Netty %s%s, -Xmx %d MiB, direct memory limit %d MiB, "
                        + "MALLOC_MMAP_THRESHOLD_=%s%n%n", System.getProperty("java.version"), nettyVersion(),
                nettyBufferJar(), Runtime.getRuntime().maxMemory() >> 20, maxDirectMemory() >> 20,
                System.getenv().getOrDefault("MALLOC_MMAP_THRESHOLD_", "(unset)"));
        String context = String.format(Locale.ROOT, "%s, JDK %s, Netty %s, cache %d MiB, traffic %s GiB, seed %d%s",
                LocalDate.now(), System.getProperty("java.version"), nettyVersion(), cacheMib, trim(trafficGib), seed,
                ceilingFraction > 0
                        ? String.format(Locale.ROOT, ", ceiling %.0f%% of pooled's peak", ceilingFraction * 100)
                        : "");
        FragmentationSimulator simulator = new FragmentationSimulator(settings, ownersCompact, compactOccupancy, compactAbove,
                backgroundBytesPerSecond, sampleEvery, out, context);
        for (String workload : workloads) {
            List<AllocatorUnderTest> these = allocators;
            if (workload.startsWith(PROXY) && defaultAllocators) {
                // small footprints depend on whether threads share the adaptive allocator's magazines: show both
                these = new ArrayList<>(allocators);
                these.add(AllocatorUnderTest.adaptiveShared);
            }
            simulator.compare(workload, these, ceilingFraction);
        }
        simulator.printTable();
    }

    /** Runs one workload on every allocator, then (optionally) on Slabwise under a ceiling, and draws the chart. */
    private void compare(String workload, List<AllocatorUnderTest> allocators, double ceilingFraction)
            throws Exception {
        List<Samples> runs = new ArrayList<>();
        long pooledPeak = 0;
        for (AllocatorUnderTest allocator : allocators) {
            if (workload.startsWith(PROXY) && allocator == AllocatorUnderTest.slabwise
                    && allocators.contains(AllocatorUnderTest.dropin)) {
                continue; // every proxy buffer is a general one: slabwise would repeat slabwise-dropin's run
            }
            Samples samples = run(workload, allocator, Long.MAX_VALUE, allocator.label());
            runs.add(samples);
            if (allocator == AllocatorUnderTest.pooled) {
                pooledPeak = samples.peakCommitted();
            }
        }
        if (ceilingFraction > 0 && pooledPeak > 0) {
            long ceiling = (long) (pooledPeak * ceilingFraction);
            String label = String.format(Locale.ROOT, "slabwise@%.0f%%", ceilingFraction * 100);
            Samples capped = run(workload, AllocatorUnderTest.slabwise, ceiling, label);
            runs.add(capped);
            System.out.printf(Locale.ROOT, "  ceiling %d MiB (%.0f%% of pooled's peak %d MiB): peak committed %d MiB%n",
                    ceiling >> 20, ceilingFraction * 100, pooledPeak >> 20, capped.peakCommitted() >> 20);
        }
        String chartContext = !workload.startsWith(PROXY) ? context
                : String.format(Locale.ROOT, "%s, %d threads, %d steps per thread, seed %d",
                        context.substring(0, context.indexOf(", cache ")), ProxyWorkload.THREADS, settings.proxySteps(),
                        settings.seed());
        SvgChart.write(out.resolve(workload + ".svg"), workload, chartContext, TARGETS.getOrDefault(workload, Double.NaN),
                runs);
    }

    /** One (workload, allocator) run on a fresh allocator, on a {@code FastThreadLocalThread}. */
    private Samples run(String workloadName, AllocatorUnderTest allocator, long ceiling, String label)
            throws Exception {
        settleMemory();
        NativeMemoryTracking.baseline();
        long residentBefore = Resident.bytes();
        boolean moving = workloadName.endsWith(MOVING);
        BufferSource source = allocator.create(ceiling, moving ? backgroundBytesPerSecond : 0);
        AtomicLong live = new AtomicLong();
        Compacting compacting = moving ? new Compacting(ownersCompact, compactOccupancy, compactAbove) : null;
        Workload workload = workload(workloadName, settings, live, compacting);
        long every = sampleEvery > 0 ? sampleEvery : Math.max(1, workload.expectedOperations() / SAMPLES_PER_RUN);
        Samples samples = new Samples(workloadName, label, every, live);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long start = System.nanoTime();
        Thread thread = new FastThreadLocalThread(() -> {
            try {
                workload.run(source, samples);
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "simulator-" + workloadName);
        thread.start();
        thread.join();
        double seconds = (System.nanoTime() - start) / 1e9;
        CompactionStats compactions = source.relocation().map(Relocation::totals).orElse(null);
        if (failure.get() != null) {
            throw new IllegalStateException(workloadName + " on " + label + " failed", failure.get());
        }
        if (live.get() != 0) {
            throw new IllegalStateException(workloadName + " on " + label + " ended holding " + live.get() + " bytes");
        }
        long committedEnded = source.committedBytes(); // before anything else asks the allocator
        String reportEnded = source.report(); // Slabwise: stats(), which reclaims dead threads' caches
        long committedReported = source.committedBytes();
        source.trim();
        long committedTrimmed = source.committedBytes();
        settleMemory();
        long residentAfter = Resident.bytes();
        String nativeChange = NativeMemoryTracking.changeSinceBaseline();

        String file = workloadName + "-" + label.replace('%', 'p').replace('@', '-');
        samples.writeCsv(out.resolve(file + ".csv"));
        Files.writeString(out.resolve(file + "-report.txt"), "At the last sample:\n" + samples.endReport()
                + "\nAt the peak of committed bytes, " + samples.peakReport()
                + "\nAfter the workload released everything and its threads ended, before trim():\n" + reportEnded
                + (nativeChange.isEmpty() ? "" : "\nThe JVM's native memory after trim(), against its baseline before"
                        + " the run (-XX:NativeMemoryTracking):\n" + nativeChange),
                StandardCharsets.UTF_8);
        System.out.printf(Locale.ROOT, "%-12s %-15s %6.1f s  %5d samples every %d ops  steady %.3f  final %.3f"
                        + "  drift %+.3f  peak committed %d MiB%n", workloadName, label, seconds, samples.all().size(),
                every, samples.steadyOverhead(), samples.finalOverhead(), samples.drift(), samples.peakCommitted() >> 20);
        System.out.print(indent(samples.endReport()));
        if (compacting != null && compactions != null) {
            System.out.printf(Locale.ROOT, "    %s; %d compactions asked by the owners, %d relocator calls found the owner"
                    + " busy; by owner %s%n", compactions, compacting.ownerCompactions(), compacting.ownerBusy(),
                    compacting.byOwner());
        }
        table.add(String.format(Locale.ROOT, "| %-12s | %-15s | %8.3f | %8.3f | %+7.3f | %8d | %7.1f | %6d | %6d | %7d |%s",
                workloadName, label, samples.steadyOverhead(), samples.finalOverhead(), samples.drift(),
                samples.peakCommitted() >> 20, seconds, residentBefore >> 20, samples.peakResident() >> 20,
                residentAfter >> 20, movingCells(moving ? compactions : null)));
        finished.add(samples);
        if (workloadName.startsWith(PROXY)) {
            proxyTable.add(String.format(Locale.ROOT, "| %-12s | %-15s | %8.2f | %9.2f | %6.2f | %8.2f | %8.2f | %8.2f | %8.2f |",
                    workloadName, label, mib(samples.meanRequested()), mib(samples.meanCommitted()),
                    samples.meanCommitted() / samples.meanRequested(), mib(samples.peakCommitted()), mib(committedEnded),
                    mib(committedReported), mib(committedTrimmed)));
        }
        return samples;
    }

    private void printTable() {
        System.out.println();
        System.out.println("committed/requested: steady = mean over the second half of the samples, final = last sample"
                + " (caches full, survivors live), drift = mean over the last quarter minus mean over the second quarter"
                + " (> 0: still growing); MiB; rss = VmRSS of the whole JVM before / at peak / after release, trim and GC");
        System.out.println("-moving runs, what their compactions did in all (empty: the allocator never moves): moved ="
                + " MiB copied, /freed = bytes moved per byte of chunks given back, entries = entries moved, chunks ="
                + " chunks (and blocks) given back, ms = time compacting (choosing and moving), MiB/s = moved per"
                + " second of compacting");
        System.out.println("| workload     | allocator       |   steady |    final |   drift | peak MiB |    secs | rss0   | rss^   "
                + "| rss end | moved | /freed | entries | chunks |    ms |  MiB/s |");
        System.out.println("|--------------|-----------------|---------:|---------:|--------:|---------:|--------:|-------:|-------:"
                + "|--------:|------:|-------:|--------:|-------:|------:|-------:|");
        table.forEach(System.out::println);
        printColumns();
        if (!proxyTable.isEmpty()) {
            System.out.println();
            System.out.println("proxy-N: " + ProxyWorkload.THREADS + " threads, each holding about N direct buffers of the"
                    + " web-socket proxy's sizes; MiB; live and committed = means over the second half of the samples;"
                    + " ended = committed once the threads have released everything and ended, before anything else"
                    + " asked the allocator (Slabwise: no stats() yet); reported = after the end-of-run report (Slabwise:"
                    + " stats(), which reclaims dead threads' caches); trimmed = after trim()");
            System.out.println("| workload     | allocator       |     live | committed |  ratio | peak     | ended    | reported | trimmed  |");
            System.out.println("|--------------|-----------------|---------:|----------:|-------:|---------:|---------:|---------:|---------:|");
            proxyTable.forEach(System.out::println);
        }
        System.out.println("\nCSV files, reports and charts in " + out.toAbsolutePath());
    }

    /**
     * The same runs with one column per allocator, as {@code steady / final (peak MiB)}:
     * every allocator of a workload side by side, slabwise-dropin beside the others.
     */
    private void printColumns() {
        List<String> labels = new ArrayList<>();
        List<String> workloads = new ArrayList<>();
        for (Samples s : finished) {
            if (!labels.contains(s.allocator())) {
                labels.add(s.allocator());
            }
            if (!workloads.contains(s.workload())) {
                workloads.add(s.workload());
            }
        }
        System.out.println();
        System.out.println("committed/requested, steady / final (peak committed MiB), one column per allocator:");
        StringBuilder header = new StringBuilder("| workload     |");
        StringBuilder rule = new StringBuilder("|--------------|");
        for (String label : labels) {
            header.append(String.format(Locale.ROOT, " %-24s |", label));
            rule.append("--------------------------|");
        }
        System.out.println(header);
        System.out.println(rule);
        for (String workload : workloads) {
            StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "| %-12s |", workload));
            for (String label : labels) {
                String cell = "";
                for (Samples s : finished) {
                    if (s.workload().equals(workload) && s.allocator().equals(label)) {
                        cell = String.format(Locale.ROOT, "%.3f / %.3f (%d)", s.steadyOverhead(), s.finalOverhead(),
                                s.peakCommitted() >> 20);
                    }
                }
                row.append(String.format(Locale.ROOT, " %-24s |", cell));
            }
            System.out.println(row);
        }
    }

    /**
     * The workload of this name.
     *
     * @param compacting how the owners of a {@code -moving} workload compact; null for the others (and to check a name)
     */
    private static Workload workload(String name, Settings settings, AtomicLong live, Compacting compacting) {
        switch (name) {
            case "fifo":
                return new FifoLogCacheWorkload(settings, live, new FinishLine(1), null);
            case "lru":
                return new LruBlockCacheWorkload(settings, live, new FinishLine(1), null);
            case "phase":
                return new PhaseShiftWorkload(settings, 1, () -> false, live, new FinishLine(1), null);
            case "mix":
                return new MixedWorkload(settings, live, true, null);
            case "broker":
                return new MixedWorkload(settings, live, false, null);
            case "phase-moving":
                return new PhaseShiftWorkload(settings, 1, () -> false, live, new FinishLine(1), moving(compacting));
            case "mix-moving":
                return new MixedWorkload(settings, live, true, moving(compacting));
            default:
                if (name.matches(PROXY + "-[1-9][0-9]{0,6}")) {
                    int liveBuffers = Integer.parseInt(name.substring(PROXY.length() + 1));
                    return new ProxyWorkload(liveBuffers, settings.proxySteps(), settings.seed(), live);
                }
                throw new IllegalArgumentException("unknown workload '" + name + "': use fifo, lru, phase, mix, broker,"
                        + " phase-moving, mix-moving, proxy or proxy-N (N live buffers per thread)");
        }
    }

    /** The compaction of a -moving workload; when only its name is checked, owners that never compact. */
    private static Compacting moving(Compacting compacting) {
        return compacting != null ? compacting : new Compacting(false, 0.5, 1);
    }

    /** The compaction columns of a -moving run: what its compactions did; empty cells where nothing can move. */
    private static String movingCells(CompactionStats c) {
        if (c == null) {
            return "       |        |         |        |       |        |";
        }
        double mib = c.movedBytes() / (double) (1 << 20);
        return String.format(Locale.ROOT, " %5.0f | %6.3f | %7d | %6d | %5d | %6.0f |", mib, c.movedPerFreedByte(),
                c.movedEntries(), c.chunksFreed(), c.nanos() / 1_000_000, c.nanos() == 0 ? 0 : mib / (c.nanos() / 1e9));
    }

    private static AllocatorUnderTest allocator(String name) {
        return AllocatorUnderTest.of(name);
    }

    /** Lets the garbage collector and cleaners free what earlier runs dropped (Netty's adaptive frees via GC). */
    private static void settleMemory() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
    }

    /** The version of the Netty buffers measured, e.g. {@code 4.1.140.Final}. */
    private static String nettyVersion() {
        Map<String, Version> versions = Version.identify();
        Version buffer = versions.get("netty-buffer");
        if (buffer == null) {
            buffer = versions.get("netty-common");
        }
        return buffer == null ? "(unknown)" : buffer.artifactVersion();
    }

    /** Where Netty's buffer classes were loaded from, as {@code " (buffers from x.jar)"}, or nothing. */
    private static String nettyBufferJar() {
        java.security.CodeSource from = io.netty.buffer.PooledByteBufAllocator.class.getProtectionDomain().getCodeSource();
        return from == null ? "" : " (buffers from " + Path.of(from.getLocation().getPath()).getFileName() + ")";
    }

    private static double mib(double bytes) {
        return bytes / (1 << 20);
    }

    /** A number without trailing zeros: 64, 0.25. */
    private static String trim(double value) {
        return java.math.BigDecimal.valueOf(value).stripTrailingZeros().toPlainString();
    }

    private static long maxDirectMemory() {
        return io.netty.util.internal.PlatformDependent.maxDirectMemory();
    }

    private static String indent(String text) {
        if (text.isEmpty()) {
            return "";
        }
        StringBuilder sb = new StringBuilder();
        for (String line : text.split("\n")) {
            sb.append("    ").append(line).append('\n');
        }
        return sb.toString();
    }

    private static Map<String, String> parse(String[] args) {
        return CommandLine.parse(args, OPTIONS, FLAGS);
    }
}
