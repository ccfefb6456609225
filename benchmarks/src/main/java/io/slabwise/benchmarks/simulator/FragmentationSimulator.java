package io.slabwise.benchmarks.simulator;

import io.netty.util.concurrent.FastThreadLocalThread;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The fragmentation simulator: long, seeded, trace-like workloads run on
 * Slabwise and on Netty's allocators one after another in the same JVM,
 * sampling requested, reserved, committed and resident bytes. It writes a CSV
 * per run and an SVG chart per workload, and prints a table of
 * committed/requested at steady state (the mean over the second half of the
 * run), at the end, and the peaks.
 *
 * <pre>
 * java -Xmx2g -XX:MaxDirectMemorySize=16g -cp benchmarks/target/benchmarks.jar \
 *     io.slabwise.benchmarks.simulator.FragmentationSimulator [--workloads fifo,lru,phase,mix]
 *     [--allocators slabwise,pooled,adaptive] [--traffic-gib 4] [--cache-mib 256] [--seed 1]
 *     [--out benchmarks/results] [--ceiling-fraction 0.6] [--quick]
 * </pre>
 *
 * With {@code --ceiling-fraction F}, each workload is run once more on Slabwise
 * with a ceiling of F times the peak committed bytes of Netty's pooled
 * allocator in the same run (caches evict when refused, network buffers wait).
 */
public final class FragmentationSimulator {

    private FragmentationSimulator() {
    }

    /** Entry point; see the class comment for the options. */
    public static void main(String[] args) throws Exception {
        Map<String, String> options = parse(args);
        boolean quick = options.containsKey("quick");
        double trafficGib = Double.parseDouble(options.getOrDefault("traffic-gib", quick ? "0.25" : "4"));
        long cacheMib = Long.parseLong(options.getOrDefault("cache-mib", quick ? "64" : "256"));
        long seed = Long.parseLong(options.getOrDefault("seed", "1"));
        double ceilingFraction = Double.parseDouble(options.getOrDefault("ceiling-fraction", "0"));
        Path out = Path.of(options.getOrDefault("out", "benchmarks/results"));
        Files.createDirectories(out);
        Settings settings = new Settings((long) (trafficGib * (1L << 30)), cacheMib << 20, seed, quick ? 50 : 200);
        List<String> workloads = List.of(options.getOrDefault("workloads", "fifo,lru,phase,mix").split(","));
        List<AllocatorUnderTest> allocators = new ArrayList<>();
        for (String a : options.getOrDefault("allocators", "slabwise,pooled,adaptive").split(",")) {
            allocators.add(AllocatorUnderTest.valueOf(a.trim()));
        }

        System.out.printf(Locale.ROOT, "traffic %.2f GiB per cache workload, caches bounded at %d MiB, seed %d, JVM %s%n%n",
                trafficGib, cacheMib, seed, System.getProperty("java.version"));
        List<String> table = new ArrayList<>();
        table.add(String.format(Locale.ROOT, "%-7s %-14s %8s %8s %12s %12s %12s %12s", "workload", "allocator",
                "steady", "final", "peak commit", "rss before", "rss peak", "rss trimmed"));
        for (String workloadName : workloads) {
            List<Samples> runs = new ArrayList<>();
            long pooledPeak = 0;
            for (AllocatorUnderTest allocator : allocators) {
                Samples samples = runOnce(workloadName, settings, allocator, Long.MAX_VALUE, allocator.name(), table, out);
                runs.add(samples);
                if (allocator == AllocatorUnderTest.pooled) {
                    pooledPeak = samples.peakCommitted();
                }
            }
            if (ceilingFraction > 0 && pooledPeak > 0) {
                long ceiling = (long) (pooledPeak * ceilingFraction);
                String label = String.format(Locale.ROOT, "slabwise@%.0f%%", ceilingFraction * 100);
                Samples capped = runOnce(workloadName, settings, AllocatorUnderTest.slabwise, ceiling, label, table, out);
                runs.add(capped);
                System.out.printf(Locale.ROOT, "  ceiling %d MiB (%.0f%% of pooled's peak %d MiB): slabwise peak committed %d MiB%n",
                        ceiling >> 20, ceilingFraction * 100, pooledPeak >> 20, capped.peakCommitted() >> 20);
            }
            SvgChart.write(out.resolve(workloadName + ".svg"), "committed / requested: " + workloadName, runs);
        }
        System.out.println();
        table.forEach(System.out::println);
        System.out.println("\nCSV files and charts in " + out.toAbsolutePath());
    }

    private static Samples runOnce(String workloadName, Settings settings, AllocatorUnderTest allocator, long ceiling,
                                   String label, List<String> table, Path out) throws Exception {
        settleMemory();
        long residentBefore = Resident.bytes();
        BufferSource source = allocator.create(ceiling);
        Samples samples = new Samples(workloadName, label);
        Workload workload = workload(workloadName, settings);
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
        if (failure.get() != null) {
            throw new IllegalStateException(workloadName + " on " + label + " failed", failure.get());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        String endReport = samples.steadyReport();
        source.trim();
        settleMemory();
        long residentAfter = Resident.bytes();
        samples.writeCsv(out.resolve(workloadName + "-" + label.replace('%', 'p').replace('@', '-') + ".csv"));
        table.add(String.format(Locale.ROOT, "%-7s %-14s %8.3f %8.3f %10d M %10d M %10d M %10d M", workloadName, label,
                samples.steadyOverhead(), samples.finalOverhead(), samples.peakCommitted() >> 20, residentBefore >> 20,
                samples.peakResident() >> 20, residentAfter >> 20));
        System.out.printf(Locale.ROOT, "%-6s %-14s %6.1f s  steady committed/requested %.3f, final %.3f, peak committed %d MiB%n",
                workloadName, label, seconds, samples.steadyOverhead(), samples.finalOverhead(), samples.peakCommitted() >> 20);
        if (!endReport.isEmpty() && Boolean.getBoolean("simulator.verbose")) {
            System.out.print(endReport);
        }
        return samples;
    }

    private static Workload workload(String name, Settings settings) {
        AtomicLong live = new AtomicLong();
        switch (name) {
            case "fifo":
                return new FifoLogCacheWorkload(settings, settings.trafficBytes(), live);
            case "lru":
                return new LruBlockCacheWorkload(settings, settings.trafficBytes(), live);
            case "phase":
                return new PhaseShiftWorkload(settings, 3, live);
            case "mix":
                return new MixedWorkload(settings);
            default:
                throw new IllegalArgumentException("unknown workload '" + name + "': use fifo, lru, phase or mix");
        }
    }

    /** Lets the garbage collector and cleaners free what earlier runs dropped. */
    private static void settleMemory() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument: " + args[i]);
            }
            String key = args[i].substring(2);
            if (key.equals("quick")) {
                options.put(key, "true");
            } else if (i + 1 < args.length) {
                options.put(key, args[++i]);
            } else {
                throw new IllegalArgumentException("--" + key + " needs a value");
            }
        }
        return options;
    }
}
