package io.slabwise.benchmarks.pressure;

import io.slabwise.PressureStats;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What one configuration's run measured, and the table and CSV rows made of
 * it. Definitions (all memory in MiB, all time in steps but the latencies):
 *
 * <ul>
 *   <li><b>refused</b>: network allocations the allocator refused (Slabwise's
 *       {@code MemoryLimitException}), of all the network allocations made;</li>
 *   <li><b>shed</b> at 25% / 50%: the caches' mean bytes over {@code before}
 *       less their mean bytes over the burst phase; <b>needed</b>: the burst's
 *       peak network bytes less the room the ceiling had left over
 *       {@code before} (ceiling less mean committed bytes), what the caches had
 *       to give for it; their ratio, target at most 1.2;</li>
 *   <li><b>hit rate</b> of every read of both caches over {@code before}, each
 *       burst phase, and the steps after the drop until the hit rate of the
 *       last {@code --window} steps is within 5 points of {@code before}'s;</li>
 *   <li><b>shrinking allocations</b>: the network allocations during which the
 *       pool's count of allocations that shrank at a limit went up: how many,
 *       and their wall-clock p50, p99 and max;</li>
 *   <li><b>peak</b> committed bytes (Slabwise) or direct memory held (Netty's
 *       {@code metric().usedDirectMemory()}), read after every step, over the
 *       ceiling.</li>
 * </ul>
 */
final class Result {

    static final String CSV_HEADER = "config,ceiling_mib,refused,network_allocs,shed25_mib,needed25_mib,shed50_mib,"
            + "needed50_mib,hit_before,hit25,hit50,recovery_steps,shrink_count,shrink_p50_us,shrink_p99_us,"
            + "shrink_max_us,peak_mib,log_dropped_mib,block_dropped_mib,limit_shrinks,limit_served,bg_rounds,"
            + "crossings,cache_refused,jvm_direct_peak_mib,resident_peak_mib,seconds,failure";
    private static final double MiB = 1 << 20;

    final PressureSetup setup;
    final long ceiling;
    final Map<String, PressureWorkload.PhaseTally> phases = new LinkedHashMap<>();
    final Map<String, Long> refusedByPhase = new LinkedHashMap<>();
    final List<String> refusals = new ArrayList<>();
    final List<Long> shrinkNanos = new ArrayList<>();
    long peakCommitted;
    long peakJvmDirect;
    long peakResident = -1;
    double hitBefore;
    long recoverySteps = -1;
    long refused;
    long networkAllocations;
    double seconds;
    PressureStats pressure = PressureStats.NONE;
    long logShed;
    long blockShed;
    long cacheRefused;
    /** What ended the run early (an OutOfMemoryError of an allocator without a ceiling), or null. */
    String failure;

    Result(PressureSetup setup, long ceiling) {
        this.setup = setup;
        this.ceiling = ceiling;
    }

    /** Mean cache bytes over {@code before} less over {@code phase}. */
    double shed(String phase) {
        if (!phases.containsKey(phase) || !phases.containsKey("before")) {
            return Double.NaN;
        }
        return phases.get("before").meanCaches() - phases.get(phase).meanCaches();
    }

    /** The phase's peak network bytes less the room left under the ceiling over {@code before}; NaN without a ceiling. */
    double needed(String phase) {
        if (!setup.bounded() || !phases.containsKey(phase) || !phases.containsKey("before")) {
            return Double.NaN;
        }
        double room = ceiling - phases.get("before").meanCommitted();
        return Math.max(0, phases.get(phase).peakNetwork - room);
    }

    private double percentileMicros(double p) {
        if (shrinkNanos.isEmpty()) {
            return Double.NaN;
        }
        long[] sorted = shrinkNanos.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(p / 100 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank))] / 1e3;
    }

    private double hit(String phase) {
        return phases.containsKey(phase) ? phases.get(phase).hitRate() : Double.NaN;
    }

    /** One CSV row, columns as {@link #CSV_HEADER}. */
    String csv() {
        return String.join(",", setup.label(), f0(ceiling / MiB), Long.toString(refused),
                Long.toString(networkAllocations + refused), f1(shed("burst25") / MiB), f1(needed("burst25") / MiB),
                f1(shed("burst50") / MiB), f1(needed("burst50") / MiB), f1(hitBefore), f1(hit("burst25")),
                f1(hit("burst50")), Long.toString(recoverySteps), Integer.toString(shrinkNanos.size()),
                f1(percentileMicros(50)), f1(percentileMicros(99)), f1(percentileMicros(100)), f0(peakCommitted / MiB),
                f1(logShed / MiB), f1(blockShed / MiB), Long.toString(pressure.limitShrinks()),
                Long.toString(pressure.limitShrinksServed()), Long.toString(pressure.backgroundRounds()),
                Long.toString(pressure.highWatermarkCrossings()), Long.toString(cacheRefused), f0(peakJvmDirect / MiB),
                f0(peakResident < 0 ? Double.NaN : peakResident / MiB), f1(seconds), failure == null ? "" : "failed");
    }

    /** The markdown table of {@code results}, with what it depends on above it and any refusal below it. */
    static String table(List<Result> results, PressureWorkload.Settings settings) {
        StringBuilder t = new StringBuilder();
        t.append(String.format(Locale.ROOT, "Ceiling %.0f MiB, seed %d, %d steps per phase (+%d ramp), recovery window %d steps."
                        + " Memory in MiB; shed/needed at the 25%% and 50%% bursts; hit rate %% of every cache read.%n%n",
                results.isEmpty() ? 0 : results.get(0).ceiling / MiB, settings.seed(), settings.phaseSteps(),
                settings.rampSteps(), settings.window()));
        t.append("| configuration | network refused (of allocations) | shed / needed 25% | shed / needed 50% |"
                + " hit before / 25% / 50% | steps to within 5 points | allocations that shrank: count, p50 / p99 / max us |"
                + " peak committed (/ ceiling) | peak JVM direct, RSS | dropped by shrinkers log / block | seconds |\n");
        t.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Result r : results) {
            t.append("| ").append(r.setup.label())
                    .append(" | ").append(r.refused).append(" (of ").append(r.networkAllocations + r.refused).append(')')
                    .append(" | ").append(shedCell(r, "burst25"))
                    .append(" | ").append(shedCell(r, "burst50"))
                    .append(" | ").append(f1(r.hitBefore)).append(" / ").append(f1(r.hit("burst25"))).append(" / ")
                    .append(f1(r.hit("burst50")))
                    .append(" | ").append(r.recoverySteps < 0 ? "> " + settings.recoverySteps() : r.recoverySteps)
                    .append(" | ").append(r.shrinkNanos.isEmpty() ? "0" : r.shrinkNanos.size() + ", "
                            + f1(r.percentileMicros(50)) + " / " + f1(r.percentileMicros(99)) + " / "
                            + f1(r.percentileMicros(100)))
                    .append(" | ").append(f0(r.peakCommitted / MiB)).append(" (")
                    .append(String.format(Locale.ROOT, "%.2f", r.peakCommitted / (double) r.ceiling)).append(')')
                    .append(" | ").append(f0(r.peakJvmDirect / MiB)).append(", ")
                    .append(r.peakResident < 0 ? "-" : f0(r.peakResident / MiB))
                    .append(" | ").append(r.setup == PressureSetup.shrinkers || r.setup == PressureSetup.limitonly ? f0(r.logShed / MiB) + " / "
                            + f0(r.blockShed / MiB) : "-")
                    .append(" | ").append(f1(r.seconds)).append(" |\n");
        }
        for (Result r : results) {
            if (r.setup.bounded()) {
                t.append('\n').append(r.setup.label()).append(": ").append(r.pressure).append('\n');
            }
            for (String refusal : r.refusals) {
                t.append(r.setup.label()).append(" refused ").append(refusal).append('\n');
            }
            if (r.failure != null) {
                t.append(r.setup.label()).append(" ended early, after phases ").append(r.phases.keySet())
                        .append(": ").append(r.failure).append('\n');
            }
            if (r.cacheRefused > 0) {
                t.append(r.setup.label()).append(": ").append(r.cacheRefused)
                        .append(" cache insertions found no room even with their cache empty\n");
            }
        }
        return t.toString();
    }

    private static String shedCell(Result r, String phase) {
        double shed = r.shed(phase) / MiB;
        double needed = r.needed(phase) / MiB;
        if (needed != needed) {
            return f0(shed) + " / -";
        }
        return f0(shed) + " / " + f0(needed) + (needed > 0 ? String.format(Locale.ROOT, " (%.2f)", shed / needed) : "");
    }

    private static String f0(double v) {
        return format("%.0f", v);
    }

    private static String f1(double v) {
        return format("%.1f", v);
    }

    /** {@code v} formatted, "-" for NaN, never "-0". */
    private static String format(String pattern, double v) {
        if (v != v) {
            return "-";
        }
        String text = String.format(Locale.ROOT, pattern, v);
        return text.startsWith("-") && Double.parseDouble(text) == 0 ? text.substring(1) : text;
    }
}
