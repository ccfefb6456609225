package io.slabwise.benchmarks.simulator;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The memory samples of one (workload, allocator) run: operations so far,
 * requested, reserved (-1 when the allocator does not say), committed and
 * resident bytes. Thread-safe: the mixed workload samples from its own thread.
 */
final class Samples {

    /** One sample. */
    record Sample(long operations, long requested, long reserved, long committed, long resident) {
        double overhead() {
            return requested == 0 ? Double.NaN : (double) committed / requested;
        }
    }

    private final String workload;
    private final String allocator;
    private final List<Sample> samples = new ArrayList<>();
    private String steadyReport = "";
    /** Committed bytes seen outside the samples (the mix's tail), for the peak. */
    private long peakOutsideSamples;

    Samples(String workload, String allocator) {
        this.workload = workload;
        this.allocator = allocator;
    }

    String workload() {
        return workload;
    }

    String allocator() {
        return allocator;
    }

    synchronized void add(long operations, long requested, BufferSource source) {
        samples.add(new Sample(operations, requested, source.reservedBytes(), source.committedBytes(), Resident.bytes()));
    }

    /** Keeps the allocator's own report taken while the workload is at its steady state. */
    synchronized void noteReport(String report) {
        steadyReport = report;
    }

    synchronized String steadyReport() {
        return steadyReport;
    }

    synchronized List<Sample> all() {
        return List.copyOf(samples);
    }

    /** The mean committed/requested over the second half of the samples: the steady state. */
    synchronized double steadyOverhead() {
        double sum = 0;
        int n = 0;
        for (int i = samples.size() / 2; i < samples.size(); i++) {
            double o = samples.get(i).overhead();
            if (!Double.isNaN(o)) {
                sum += o;
                n++;
            }
        }
        return n == 0 ? Double.NaN : sum / n;
    }

    /** committed/requested at the last sample. */
    synchronized double finalOverhead() {
        return samples.isEmpty() ? Double.NaN : samples.get(samples.size() - 1).overhead();
    }

    /** Records committed bytes seen between or after the samples, so the peak covers the whole run. */
    synchronized void notePeak(long committed) {
        peakOutsideSamples = Math.max(peakOutsideSamples, committed);
    }

    synchronized long peakCommitted() {
        long peak = peakOutsideSamples;
        for (Sample s : samples) {
            peak = Math.max(peak, s.committed());
        }
        return peak;
    }

    synchronized long peakResident() {
        long peak = 0;
        for (Sample s : samples) {
            peak = Math.max(peak, s.resident());
        }
        return peak;
    }

    /** Writes the samples as CSV. */
    synchronized void writeCsv(Path file) throws IOException {
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
            out.println("operations,requested,reserved,committed,resident,committed_over_requested");
            for (Sample s : samples) {
                out.printf(java.util.Locale.ROOT, "%d,%d,%d,%d,%d,%.4f%n", s.operations(), s.requested(), s.reserved(),
                        s.committed(), s.resident(), s.overhead());
            }
        }
    }
}
