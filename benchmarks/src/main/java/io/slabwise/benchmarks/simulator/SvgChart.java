package io.slabwise.benchmarks.simulator;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Draws committed/requested over the operations of a workload, one polyline
 * per allocator, as a self-contained SVG file built from strings:
 *
 * <pre>
 *  workload: committed / requested over operations
 *  2026-11-24, JDK 17.0.15, Netty 4.1.140.Final, cache 256 MiB, traffic 64 GiB, seed 1   (the run's context)
 *  2.0 |        /\___________      -- pooled    steady 1.32, final 1.30
 *  1.5 |   ____/                   -- adaptive  ...
 *      |.......................target 1.05     -- slabwise  ...
 *  1.0 +--/- - - - - - - - - -     .. target (at most 1.05)
 *      0      10k     20k
 *        operations (allocations and releases)
 * </pre>
 *
 * <h2>The y axis</h2>
 * It starts at 1.0 (committed equal to requested, drawn dashed) or lower if a
 * sample is; its top leaves room above every run's steady and final figures
 * and the workload's target, but clips the spikes of the first samples, when
 * a chunk or two is committed for a few requested bytes. The tick step is one
 * of {@link #STEPS}, chosen once, and the top is a whole number of steps.
 * Ticks sit at whole multiples of the step, each worked out from its own index
 * (never by adding the step up, which drifts), so every label names the value
 * at its own height; 1.0 is labelled too when the step skips it (steps of 2
 * and more). A label has as many decimals as the step needs (0.25 gives
 * {@code 1.25}, never a rounded {@code 1.3}).
 */
final class SvgChart {

    private static final String[] COLOURS = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"};
    private static final int WIDTH = 900;
    private static final int HEIGHT = 460;
    private static final int LEFT = 70;
    private static final int RIGHT = 250;
    private static final int TOP = 54;
    private static final int BOTTOM = 60;
    private static final double[] STEPS = {0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 20, 50};
    /** Most tick intervals on the y axis. */
    private static final int MAX_TICKS = 8;
    /** Slack for comparing axis values that went through floating-point division. */
    private static final double EPSILON = 1e-9;
    /** Targets are given in hundredths (1.05, 1.10). */
    private static final int TARGET_DECIMALS = 2;

    private final StringBuilder svg = new StringBuilder();
    private final int plotWidth = WIDTH - LEFT - RIGHT;
    private final int plotHeight = HEIGHT - TOP - BOTTOM;
    private double maxOps = 1;
    private double yMin = 1.0;
    private double yMax = 1.5;
    private double yStep = 0.1;
    private boolean clipped;

    private SvgChart() {
    }

    /**
     * Writes the chart of the runs of one workload to {@code file}.
     *
     * @param workload the workload's name, for the title
     * @param context  one line on the run: date, JDK, Netty, sizes (drawn under the title)
     * @param target   the committed/requested the workload should stay at or under, drawn as a dashed
     *                 line; {@link Double#NaN} when it has none
     * @param runs     one run per allocator, drawn in this order
     */
    static void write(Path file, String workload, String context, double target, List<Samples> runs)
            throws IOException {
        Files.writeString(file, draw(workload, context, target, runs), StandardCharsets.UTF_8);
    }

    /** The chart as SVG text. */
    private static String draw(String workload, String context, double target, List<Samples> runs) {
        SvgChart chart = new SvgChart();
        chart.scale(runs, target);
        chart.drawChart(workload, context, target, runs);
        return chart.svg.toString();
    }

    private void scale(List<Samples> runs, double target) {
        double minRatio = 1.0;
        double maxRatio = 1.0;
        double headline = Double.isNaN(target) ? 1.0 : target;
        for (Samples run : runs) {
            maxOps = Math.max(maxOps, run.lastOperation());
            for (Samples.Sample s : run.all()) {
                if (!Double.isNaN(s.overhead())) {
                    minRatio = Math.min(minRatio, s.overhead());
                    maxRatio = Math.max(maxRatio, s.overhead());
                }
            }
            headline = Math.max(headline, finite(run.steadyOverhead()));
            headline = Math.max(headline, finite(run.finalOverhead()));
        }
        double top = Math.min(maxRatio, 1 + 1.5 * (headline - 1) + 0.2);
        if (!Double.isNaN(target)) {
            top = Math.max(top, target + 0.05); // the target line stays inside the plot, its label too
        }
        yStep = step(top - Math.min(1.0, minRatio));
        yMin = minRatio >= 1.0 ? 1.0 : Math.floor(minRatio / yStep) * yStep;
        yMax = Math.ceil(Math.max(top, yMin + yStep) / yStep - EPSILON) * yStep;
        clipped = maxRatio > yMax;
    }

    private static double finite(double value) {
        return Double.isNaN(value) ? 1.0 : value;
    }

    /** The smallest of 1, 2 or 5 times a power of ten that is at least {@code rough}. */
    private static double roundStep(double rough) {
        double power = Math.pow(10, Math.floor(Math.log10(Math.max(1, rough))));
        for (int m : new int[] {1, 2, 5}) {
            if (m * power >= rough) {
                return m * power;
            }
        }
        return 10 * power;
    }

    /** The smallest of {@link #STEPS} that spans {@code range} in at most {@link #MAX_TICKS} intervals. */
    private static double step(double range) {
        for (double step : STEPS) {
            if (range / step <= MAX_TICKS + EPSILON) {
                return step;
            }
        }
        return STEPS[STEPS.length - 1];
    }

    /** The decimals a label needs to show a multiple of {@code step} exactly, at least one. */
    private static int decimals(double step) {
        for (int d = 1; d < 4; d++) {
            double scaled = step * Math.pow(10, d);
            if (Math.abs(scaled - Math.rint(scaled)) < EPSILON * Math.max(1, scaled)) {
                return d;
            }
        }
        return 4;
    }

    private double x(double operations) {
        return LEFT + operations / maxOps * plotWidth;
    }

    private double y(double ratio) {
        double clamped = Math.max(yMin, Math.min(yMax, ratio));
        return TOP + plotHeight - (clamped - yMin) / (yMax - yMin) * plotHeight;
    }

    private void drawChart(String workload, String context, double target, List<Samples> runs) {
        append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                + "font-size=\"12\">%n", WIDTH, HEIGHT);
        append("<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>%n");
        append("<text x=\"%d\" y=\"22\" font-size=\"15\">%s: committed / requested over operations</text>%n",
                LEFT, escape(workload));
        append("<text x=\"%d\" y=\"40\" font-size=\"11\" fill=\"#444\">%s</text>%n", LEFT, escape(context));
        drawYAxis();
        if (!Double.isNaN(target) && target >= yMin && target <= yMax) {
            append("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\" stroke-width=\"1.2\" "
                    + "stroke-dasharray=\"2 3\"/>%n", LEFT, y(target), LEFT + plotWidth, y(target));
            append("<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\" "
                    + "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">target %s</text>%n",
                    LEFT + plotWidth - 4, y(target) - 4, label(target, TARGET_DECIMALS));
        }
        double opsStep = roundStep(maxOps / 5);
        for (double ops = 0; ops <= maxOps; ops += opsStep) {
            append("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\"/>%n",
                    x(ops), TOP + plotHeight, x(ops), TOP + plotHeight + 5);
            append("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", x(ops), TOP + plotHeight + 19,
                    count(ops));
        }
        append("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>%n",
                LEFT, TOP + plotHeight, LEFT + plotWidth, TOP + plotHeight);
        append("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>%n", LEFT, TOP, LEFT, TOP + plotHeight);
        append("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">operations (allocations and releases)</text>%n",
                LEFT + plotWidth / 2, HEIGHT - 20);
        append("<text x=\"18\" y=\"%d\" transform=\"rotate(-90 18 %d)\" text-anchor=\"middle\">"
                + "committed / requested</text>%n", TOP + plotHeight / 2, TOP + plotHeight / 2);
        int lx = LEFT + plotWidth + 20;
        int ly = TOP + 10;
        for (int r = 0; r < runs.size(); r++, ly += 36) {
            Samples run = runs.get(r);
            String colour = COLOURS[r % COLOURS.length];
            StringBuilder points = new StringBuilder();
            for (Samples.Sample s : run.all()) {
                if (!Double.isNaN(s.overhead())) {
                    points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x(s.operations()), y(s.overhead())));
                }
            }
            append("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>%n",
                    colour, points.toString().trim());
            append("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>%n",
                    lx, ly - 4, lx + 25, ly - 4, colour);
            append("<text x=\"%d\" y=\"%d\">%s</text>%n", lx + 32, ly, escape(run.allocator()));
            append("<text x=\"%d\" y=\"%d\" fill=\"#444\">steady %.3f, final %.3f</text>%n", lx + 32, ly + 15,
                    run.steadyOverhead(), run.finalOverhead());
        }
        if (!Double.isNaN(target)) {
            append("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\" stroke-width=\"1.2\" "
                    + "stroke-dasharray=\"2 3\"/>%n", lx, ly - 4, lx + 25, ly - 4);
            append("<text x=\"%d\" y=\"%d\">target: at most %s</text>%n", lx + 32, ly, label(target, TARGET_DECIMALS));
        }
        if (clipped) {
            int cy = TOP + plotHeight - 18;
            append("<text x=\"%d\" y=\"%d\" fill=\"#666\">values above %s are drawn</text>%n",
                    lx, cy, label(yMax, decimals(yStep)));
            append("<text x=\"%d\" y=\"%d\" fill=\"#666\">at the top edge</text>%n", lx, cy + 15);
        }
        append("</svg>%n");
    }

    /**
     * Grid lines and labels at the whole multiples of the step between the
     * bottom and the top, and at the bottom itself when that is not one.
     */
    private void drawYAxis() {
        int decimals = decimals(yStep);
        long first = (long) Math.ceil(yMin / yStep - EPSILON);
        long last = (long) Math.floor(yMax / yStep + EPSILON);
        if (first * yStep > yMin + EPSILON) {
            yTick(yMin, decimals);
        }
        for (long k = first; k <= last; k++) {
            yTick(k * yStep, decimals);
        }
        if (yMin <= 1.0 && 1.0 <= yMax) {
            append("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"6 4\"/>%n",
                    LEFT, y(1.0), LEFT + plotWidth, y(1.0));
        }
    }

    private void yTick(double value, int decimals) {
        append("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>%n",
                LEFT, y(value), LEFT + plotWidth, y(value));
        append("<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT - 6, y(value) + 4,
                label(value, decimals));
    }

    private static String label(double value, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", value);
    }

    private void append(String format, Object... args) {
        svg.append(String.format(Locale.ROOT, format, args));
    }

    /** An operation count for an axis label: 0, 500, 1.5k, 20k, 2M. */
    private static String count(double n) {
        if (n >= 1e6) {
            return trim(n / 1e6) + "M";
        }
        if (n >= 1e3) {
            return trim(n / 1e3) + "k";
        }
        return trim(n);
    }

    private static String trim(double value) {
        String text = String.format(Locale.ROOT, "%.2f", value);
        return text.replaceAll("\\.?0+$", "");
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
