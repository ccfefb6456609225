package io.slabwise.benchmarks.simulator;

import java.util.Random;

/** Size and key distributions of the workloads (the simulator's and the pressure workload's). */
public final class Distributions {

    private Distributions() {
    }

    /** A size between {@code min} and {@code max} whose logarithm is uniform: many small, some large. */
    static int logUniform(Random random, int min, int max) {
        double lo = Math.log(min);
        double hi = Math.log(max);
        return (int) Math.round(Math.exp(lo + random.nextDouble() * (hi - lo)));
    }

    /** The mean of {@link #logUniform}: {@code (max - min) / ln(max / min)}. */
    static double logUniformMean(int min, int max) {
        return (max - min) / Math.log((double) max / min);
    }

    /** Zipf-distributed keys in {@code [0, n)}: key 0 is the most popular. */
    public static final class Zipf {
        private final double[] cumulative;

        /** Keys {@code 0..n-1}, key {@code k} drawn in proportion to {@code 1 / (k + 1)^exponent}. */
        public Zipf(int n, double exponent) {
            cumulative = new double[n];
            double sum = 0;
            for (int i = 0; i < n; i++) {
                sum += 1 / Math.pow(i + 1, exponent);
                cumulative[i] = sum;
            }
            for (int i = 0; i < n; i++) {
                cumulative[i] /= sum;
            }
        }

        /** The next key: one {@code nextDouble()} of {@code random}. */
        public int next(Random random) {
            double u = random.nextDouble();
            int lo = 0;
            int hi = cumulative.length - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (cumulative[mid] < u) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
    }
}
