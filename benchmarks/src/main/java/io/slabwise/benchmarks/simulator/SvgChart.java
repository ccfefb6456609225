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
 *  2.0 |        /\___________   -- pooled    steady 1.32, final 1.30
 *  1.5 |   ____/               -- adaptive  ...
 *  1.0 +--/- - - - - - - - -   -- slabwise  ...
 *      0      10k     20k
 *        operations (allocations and releases)
 * </pre>
 *
 * The y axis starts at 1.0 (committed equal to requested, drawn dashed) or
 * lower if a sample is; its top leaves room above every run's steady and
 * final figures but clips the spikes of the first samples, when a chunk or two
 * is committed for a few requested bytes.
 */
final class SvgChart {

    private static final String[] COLOURS = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"};
    private static final int WIDTH = 900;
    private static final int HEIGHT = 460;
    private static final int LEFT = 70;
    private static final int RIGHT = 250;
    private static final int TOP = 50;
    private static final int BOTTOM = 60;
    private static final double[] STEPS = {0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 20, 50};

    private final StringBuilder svg = new StringBuilder();
    private final int plotWidth = WIDTH - LEFT - RIGHT;
    private final int plotHeight = HEIGHT - TOP - BOTTOM;
    private double maxOps = 1;
    private double yMin = 1.0;
    private double yMax = 1.5;
    private boolean clipped;

    private SvgChart() {
    }

    /** Writes the chart of the runs of one workload to {@code file}. */
    static void write(Path file, String workload, List<Samples> runs) throws IOException {
        SvgChart chart = new SvgChart();
        chart.scale(runs);
        chart.draw(workload, runs);
        Files.writeString(file, chart.svg, StandardCharsets.UTF_8);
    }

    private void scale(List<Samples> runs) {
        double minRatio = 1.0;
        double maxRatio = 1.0;
        double headline = 1.0;
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
        double step = step(top - Math.min(1.0, minRatio));
        yMin = minRatio >= 1.0 ? 1.0 : Math.floor(minRatio / step) * step;
        yMax = Math.max(yMin + step, Math.ceil(top / step) * step);
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

    private static double step(double range) {
        for (double step : STEPS) {
            if (range / step <= 8) {
                return step;
            }
        }
        return STEPS[STEPS.length - 1];
    }

    private double x(double operations) {
        return LEFT + operations / maxOps * plotWidth;
    }

    private double y(double ratio) {
        double clamped = Math.max(yMin, Math.min(yMax, ratio));
        return TOP + plotHeight - (clamped - yMin) / (yMax - yMin) * plotHeight;
    }

    private void draw(String workload, List<Samples> runs) {
        append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                + "font-size=\"12\">%n", WIDTH, HEIGHT);
        append("<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>%n");
        append("<text x=\"%d\" y=\"24\" font-size=\"15\">%s: committed / requested over operations</text>%n",
                LEFT, escape(workload));
        if (clipped) {
            append("<text x=\"%d\" y=\"40\" fill=\"#666\">values above %.2f are drawn at the top edge</text>%n",
                    LEFT, yMax);
        }
        double step = step(yMax - yMin);
        for (double r = yMin; r <= yMax + step / 2; r += step) {
            append("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>%n",
                    LEFT, y(r), LEFT + plotWidth, y(r));
            append("<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT - 6, y(r) + 4,
                    String.format(Locale.ROOT, step < 0.1 ? "%.2f" : "%.1f", r));
        }
        if (yMin <= 1.0 && 1.0 <= yMax) {
            append("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"6 4\"/>%n",
                    LEFT, y(1.0), LEFT + plotWidth, y(1.0));
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
        for (int r = 0; r < runs.size(); r++) {
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
            int ly = TOP + 10 + r * 36;
            int lx = LEFT + plotWidth + 20;
            append("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>%n",
                    lx, ly - 4, lx + 25, ly - 4, colour);
            append("<text x=\"%d\" y=\"%d\">%s</text>%n", lx + 32, ly, escape(run.allocator()));
            append("<text x=\"%d\" y=\"%d\" fill=\"#444\">steady %.3f, final %.3f</text>%n", lx + 32, ly + 15,
                    run.steadyOverhead(), run.finalOverhead());
        }
        append("</svg>%n");
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
