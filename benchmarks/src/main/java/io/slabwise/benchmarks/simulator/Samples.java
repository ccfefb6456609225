package io.slabwise.benchmarks.simulator;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The memory samples of one (workload, allocator) run. The workload counts
 * its allocator operations (each allocation and each release) here, and every
 * {@code K}-th operation takes a sample:
 *
 * <pre>
 *  operations  requested   reserved   committed   resident   moved
 *  (so far)    (live       (allocator (allocator  (VmRSS of  (bytes the allocator's
 *              payloads)    says, or   holds from  the whole  compactions copied so
 *                           n/a)       the OS)     JVM)       far, or n/a)
 * </pre>
 *
 * Requested bytes are counted by the workloads themselves (the sum of the
 * payload sizes they hold), never asked of the allocator, so every allocator
 * is measured against the same figure.
 *
 * <p>Thread-safe: in the mix two workload threads count operations into the
 * same samples.
 */
final class Samples {

    /** One sample; {@code reserved} and {@code moved} are -1 when the allocator does not say (cannot move). */
    record Sample(long operations, long requested, long reserved, long committed, long resident, long moved) {
        /** committed/requested, NaN while nothing is requested. */
        double overhead() {
            return requested <= 0 ? Double.NaN : (double) committed / requested;
        }
    }

    private final String workload;
    private final String allocator;
    private final long every;
    private final AtomicLong requested;
    private final AtomicLong operations = new AtomicLong();
    private final List<Sample> samples = new ArrayList<>();
    private String endReport = "";
    private String peakReport = "";
    private long peakReported;

    /**
     * @param every     operations between two samples ({@code Long.MAX_VALUE}: count but never sample)
     * @param requested the workload's live payload bytes
     */
    Samples(String workload, String allocator, long every, AtomicLong requested) {
        if (every < 1) {
            throw new IllegalArgumentException("operations between samples must be positive: " + every);
        }
        this.workload = workload;
        this.allocator = allocator;
        this.every = every;
        this.requested = requested;
    }

    /** Samples that count operations but keep none, for the helper threads of the mix. */
    static Samples uncounted(String workload, AtomicLong requested) {
        return new Samples(workload, "", Long.MAX_VALUE, requested);
    }

    String workload() {
        return workload;
    }

    String allocator() {
        return allocator;
    }

    /** Counts one allocation or release; every {@code K}-th takes a sample. */
    void operation(BufferSource source) {
        long n = operations.incrementAndGet();
        if (n % every == 0) {
            take(n, source);
        }
    }

    /**
     * Takes the last sample, with the workload still holding its buffers, and
     * keeps the allocator's own report of its state at that moment.
     */
    void finish(BufferSource source) {
        take(operations.get(), source);
        String report = source.report();
        synchronized (this) {
            endReport = report;
        }
    }

    private void take(long n, BufferSource source) {
        long live = requested.get();
        long reserved = source.reservedBytes();
        long committed = source.committedBytes();
        long resident = Resident.bytes();
        long moved = source.relocation().map(r -> r.totals().movedBytes()).orElse(-1L);
        boolean newPeak;
        synchronized (this) {
            newPeak = committed > peakReported;
            peakReported = Math.max(peakReported, committed);
        }
        if (newPeak) { // rare once the workload is at its steady state
            String report = "at operation " + n + ", requested " + live + " bytes:\n" + source.report();
            synchronized (this) {
                peakReport = report;
            }
        }
        synchronized (this) {
            int at = samples.size(); // two threads of the mix may come in out of order: keep the list sorted
            while (at > 0 && samples.get(at - 1).operations() > n) {
                at--;
            }
            samples.add(at, new Sample(n, live, reserved, committed, resident, moved));
        }
    }

    /** The allocator's report taken by {@link #finish}. */
    synchronized String endReport() {
        return endReport;
    }

    /** The allocator's report taken at the sample with the most committed bytes. */
    synchronized String peakReport() {
        return peakReport;
    }

    synchronized List<Sample> all() {
        return List.copyOf(samples);
    }

    /** The mean committed/requested over the second half of the samples: the steady state. */
    double steadyOverhead() {
        return meanOverhead(0.5, 1.0);
    }

    /**
     * The mean committed/requested over a slice of the samples, given as
     * fractions of the run ({@code 0.25, 0.5} is the second quarter); NaN if
     * the slice holds no sample with requested bytes.
     */
    synchronized double meanOverhead(double from, double to) {
        double sum = 0;
        int n = 0;
        for (int i = (int) (samples.size() * from); i < (int) (samples.size() * to); i++) {
            double o = samples.get(i).overhead();
            if (!Double.isNaN(o)) {
                sum += o;
                n++;
            }
        }
        return n == 0 ? Double.NaN : sum / n;
    }

    /**
     * How much committed/requested still grows: the mean over the last
     * quarter of the samples minus the mean over the second quarter (the
     * first is left out: caches filling). Near 0 is flat; a positive figure
     * that grows with the traffic is fragmentation that keeps accumulating.
     */
    double drift() {
        return meanOverhead(0.75, 1.0) - meanOverhead(0.25, 0.5);
    }

    /** committed/requested at the last sample, taken before the workload released what it held. */
    synchronized double finalOverhead() {
        return samples.isEmpty() ? Double.NaN : samples.get(samples.size() - 1).overhead();
    }

    /** The mean requested bytes over the second half of the samples. */
    synchronized double meanRequested() {
        return mean(Sample::requested);
    }

    /** The mean committed bytes over the second half of the samples. */
    synchronized double meanCommitted() {
        return mean(Sample::committed);
    }

    private double mean(java.util.function.ToLongFunction<Sample> field) {
        long sum = 0;
        int n = 0;
        for (int i = samples.size() / 2; i < samples.size(); i++) {
            sum += field.applyAsLong(samples.get(i));
            n++;
        }
        return n == 0 ? Double.NaN : (double) sum / n;
    }

    /** The most committed bytes any sample saw. */
    synchronized long peakCommitted() {
        long peak = 0;
        for (Sample s : samples) {
            peak = Math.max(peak, s.committed());
        }
        return peak;
    }

    /** The most resident bytes any sample saw. */
    synchronized long peakResident() {
        long peak = 0;
        for (Sample s : samples) {
            peak = Math.max(peak, s.resident());
        }
        return peak;
    }

    /** The largest operation count sampled. */
    synchronized long lastOperation() {
        return samples.isEmpty() ? 0 : samples.get(samples.size() - 1).operations();
    }

    /**
     * Writes the samples as CSV; an allocator that does not report reserved
     * bytes, or cannot move buffers, gets {@code n/a} there.
     */
    synchronized void writeCsv(Path file) throws IOException {
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
            out.println("operations,requested,reserved,committed,resident,committed_over_requested,moved");
            for (Sample s : samples) {
                out.printf(Locale.ROOT, "%d,%d,%s,%d,%d,%.4f,%s%n", s.operations(), s.requested(),
                        s.reserved() < 0 ? "n/a" : Long.toString(s.reserved()), s.committed(), s.resident(),
                        s.overhead(), s.moved() < 0 ? "n/a" : Long.toString(s.moved()));
            }
        }
    }
}
