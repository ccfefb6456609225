package io.slabwise.benchmarks.simulator;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Draws committed/requested over the run, one line per allocator, as a
 * self-contained SVG file. The x axis is the fraction of the run (runs of
 * different allocators take different times), the y axis the ratio.
 */
final class SvgChart {

    private static final String[] COLOURS = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
    private static final int WIDTH = 800;
    private static final int HEIGHT = 420;
    private static final int LEFT = 60;
    private static final int RIGHT = 160;
    private static final int TOP = 40;
    private static final int BOTTOM = 50;

    private SvgChart() {
    }

    static void write(Path file, String title, List<Samples> runs) throws IOException {
        double maxRatio = 1.5;
        for (Samples run : runs) {
            for (Samples.Sample s : run.all()) {
                if (!Double.isNaN(s.overhead()) && s.requested() > 0) {
                    maxRatio = Math.max(maxRatio, Math.min(s.overhead(), 6));
                }
            }
        }
        maxRatio = Math.ceil(maxRatio * 2) / 2;
        int plotW = WIDTH - LEFT - RIGHT;
        int plotH = HEIGHT - TOP - BOTTOM;
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "font-family=\"sans-serif\" font-size=\"12\">%n", WIDTH, HEIGHT));
        svg.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>%n", LEFT, escape(title)));
        for (double y = 1.0; y <= maxRatio + 1e-9; y += 0.5) {
            int py = TOP + plotH - (int) Math.round((y - 1.0) / (maxRatio - 1.0) * plotH);
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>%n",
                    LEFT, py, LEFT + plotW, py));
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.1f</text>%n",
                    LEFT - 6, py + 4, y));
        }
        svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>%n",
                LEFT, TOP + plotH, LEFT + plotW, TOP + plotH));
        svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>%n",
                LEFT, TOP, LEFT, TOP + plotH));
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">progress of the run</text>%n",
                LEFT + plotW / 2, HEIGHT - 15));
        svg.append(String.format(Locale.ROOT, "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" "
                + "text-anchor=\"middle\">committed / requested</text>%n", TOP + plotH / 2, TOP + plotH / 2));
        for (int r = 0; r < runs.size(); r++) {
            List<Samples.Sample> samples = runs.get(r).all();
            String colour = COLOURS[r % COLOURS.length];
            StringBuilder points = new StringBuilder();
            for (int i = 0; i < samples.size(); i++) {
                double ratio = samples.get(i).overhead();
                if (Double.isNaN(ratio) || samples.get(i).requested() == 0) {
                    continue;
                }
                double x = LEFT + (samples.size() == 1 ? 0 : (double) i / (samples.size() - 1) * plotW);
                double y = TOP + plotH - (Math.min(ratio, maxRatio) - 1.0) / (maxRatio - 1.0) * plotH;
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, Math.min(TOP + plotH, y)));
            }
            svg.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>%n",
                    colour, points.toString().trim()));
            int ly = TOP + 20 + r * 20;
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>%n",
                    LEFT + plotW + 15, ly - 4, LEFT + plotW + 40, ly - 4, colour));
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s %.2f</text>%n", LEFT + plotW + 45, ly,
                    escape(runs.get(r).allocator()), runs.get(r).steadyOverhead()));
        }
        svg.append("</svg>\n");
        Files.writeString(file, svg, StandardCharsets.UTF_8);
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
