package io.slabwise;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * How a pool with a ceiling asks {@link Shrinker}s for memory: the
 * watermarks, the bounds of shrinking at the limit, and per category a floor,
 * a weight and whether its requests may take memory from caches. Immutable;
 * built by {@link #builder()} and given to
 * {@link PoolConfig.Settings#pressure(PressureConfig)}. Without a ceiling (or
 * without a shrinker) pressure is off.
 *
 * <h2>Watermarks</h2>
 * Above the {@linkplain Builder#watermarks high watermark} (90% of the
 * ceiling by default) the pool asks shrinkers in the background, every
 * {@linkplain Builder#checkPeriod check period} on its scheduler, until
 * committed memory is below the low watermark (80%): at most the bytes above
 * the low watermark in one episode, spread over the categories by what each
 * reports it could free times its {@linkplain Builder#weight weight}. The same
 * fractions of a category's quota apply to that category's own shrinker.
 *
 * <h2>At the limit</h2>
 * Before an allocation is refused at the ceiling or made to wait, the pool
 * asks shrinkers for what it needs (at least a chunk: memory goes back to the
 * operating system a chunk at a time) and tries again: its own category's
 * shrinker first, then, for a category that
 * {@linkplain Builder#takesFromCaches takes from caches}, the others. By
 * default a category without a shrinker of its own (network buffers) takes
 * from caches, and a cache (a category with a shrinker) takes only from
 * itself, so a cache never evicts another to grow. A thread that may not wait
 * (a Netty event loop, see {@link PoolConfig.Settings#waitAllowed}) shrinks
 * inline for at most {@link Builder#inline} bytes and time; any other for at
 * most {@link Builder#atLimit}. A category at its own quota asks its own
 * shrinker the same way.
 *
 * <h2>Floors</h2>
 * A category's {@linkplain Builder#floor floor} (like cgroup
 * {@code memory.low}) is never shrunk: the pool asks its shrinker only for
 * reserved bytes above it. A floor makes the category's reserved bytes
 * tracked exactly, as a quota does.
 */
public final class PressureConfig {

    private static final PressureConfig DEFAULTS = builder().build();
    private static final PressureConfig OFF = builder().off().build();

    private final boolean enabled;
    private final boolean background;
    private final double highWatermark;
    private final double lowWatermark;
    private final Duration checkPeriod;
    private final long inlineBytes;
    private final Duration inlineTime;
    private final long atLimitBytes;
    private final Duration atLimitTime;
    private final Map<String, Long> floors;
    private final Map<String, Double> weights;
    private final Map<String, Boolean> takesFromCaches;

    private PressureConfig(Builder b) {
        this.enabled = b.enabled;
        this.background = b.background;
        this.highWatermark = b.highWatermark;
        this.lowWatermark = b.lowWatermark;
        this.checkPeriod = b.checkPeriod;
        this.inlineBytes = b.inlineBytes;
        this.inlineTime = b.inlineTime;
        this.atLimitBytes = b.atLimitBytes;
        this.atLimitTime = b.atLimitTime;
        this.floors = Map.copyOf(b.floors);
        this.weights = Map.copyOf(b.weights);
        this.takesFromCaches = Map.copyOf(b.takesFromCaches);
    }

    /** The defaults: watermarks at 90% and 80%, checked every 100 ms; inline 16 MiB in 1 ms; 64 MiB in 20 ms. */
    public static PressureConfig defaults() {
        return DEFAULTS;
    }

    /** No shrinking, ever: shrinkers may be registered but are never asked. */
    public static PressureConfig off() {
        return OFF;
    }

    /** A builder starting from the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Whether shrinkers are asked at all (when the pool has a ceiling). */
    public boolean enabled() {
        return enabled;
    }

    /** Whether shrinkers are asked in the background above the high watermark, not only at the limits. */
    public boolean background() {
        return background;
    }

    /** The high watermark, a fraction of the ceiling (and of each quota). */
    public double highWatermark() {
        return highWatermark;
    }

    /** The low watermark, a fraction of the ceiling (and of each quota). */
    public double lowWatermark() {
        return lowWatermark;
    }

    /** How often the background check reads committed memory. */
    public Duration checkPeriod() {
        return checkPeriod;
    }

    /** The most bytes a thread that may not wait asks shrinkers for, per allocation. */
    public long inlineBytes() {
        return inlineBytes;
    }

    /**
     * The most time a thread that may not wait spends shrinking, per
     * allocation: checked between shrinker calls, so one slow call may pass it.
     */
    public Duration inlineTime() {
        return inlineTime;
    }

    /** The most bytes any other thread asks shrinkers for, per allocation at a limit. */
    public long atLimitBytes() {
        return atLimitBytes;
    }

    /** The most time any other thread spends shrinking, per allocation at a limit. */
    public Duration atLimitTime() {
        return atLimitTime;
    }

    /** Reserved bytes never shrunk, per category; unnamed categories have none. */
    public Map<String, Long> floors() {
        return floors;
    }

    /** The floor of {@code category}: 0 unless set. */
    public long floor(String category) {
        return floors.getOrDefault(category, 0L);
    }

    /** The weight of {@code category} when a request is spread: 1 unless set. */
    public double weight(String category) {
        return weights.getOrDefault(category, 1.0);
    }

    /**
     * Whether requests of {@code category} may make other categories'
     * shrinkers free memory: as set, else whether the category has no
     * shrinker of its own.
     */
    public boolean takesFromCaches(String category, boolean hasShrinker) {
        Boolean set = takesFromCaches.get(category);
        return set != null ? set : !hasShrinker;
    }

    @Override
    public String toString() {
        if (!enabled) {
            return "PressureConfig{off}";
        }
        return "PressureConfig{watermarks=" + highWatermark + '/' + lowWatermark
                + (background ? ", checkPeriod=" + checkPeriod : ", no background")
                + ", inline=" + inlineBytes + " bytes in " + inlineTime + ", atLimit=" + atLimitBytes + " bytes in "
                + atLimitTime + ", floors=" + floors + ", weights=" + weights + ", takesFromCaches=" + takesFromCaches + '}';
    }

    /** Builds a {@link PressureConfig}; every setter validates its argument. */
    public static final class Builder {
        private boolean enabled = true;
        private boolean background = true;
        private double highWatermark = 0.90;
        private double lowWatermark = 0.80;
        private Duration checkPeriod = Duration.ofMillis(100);
        private long inlineBytes = 16L * 1024 * 1024;
        private Duration inlineTime = Duration.ofMillis(1);
        private long atLimitBytes = 64L * 1024 * 1024;
        private Duration atLimitTime = Duration.ofMillis(20);
        private final Map<String, Long> floors = new LinkedHashMap<>();
        private final Map<String, Double> weights = new LinkedHashMap<>();
        private final Map<String, Boolean> takesFromCaches = new LinkedHashMap<>();

        private Builder() {
        }

        /** Turns pressure off: shrinkers are never asked. */
        public Builder off() {
            this.enabled = false;
            return this;
        }

        /**
         * Whether the pool asks shrinkers in the background above the high
         * watermark (default yes); without, only allocations at a limit do.
         */
        public Builder background(boolean on) {
            this.background = on;
            return this;
        }

        /**
         * The watermarks as fractions of the ceiling (and of each quota):
         * shrinking starts above {@code high} and stops below {@code low}.
         *
         * @throws IllegalArgumentException unless {@code 0 < low < high <= 1}
         */
        public Builder watermarks(double high, double low) {
            if (!(low > 0 && low < high && high <= 1)) {
                throw new IllegalArgumentException("watermarks must satisfy 0 < low < high <= 1: high=" + high + ", low=" + low);
            }
            this.highWatermark = high;
            this.lowWatermark = low;
            return this;
        }

        /** How often the background check runs (default 100 ms); at least 1 ms. */
        public Builder checkPeriod(Duration period) {
            Objects.requireNonNull(period, "period");
            if (period.toMillis() < 1) {
                throw new IllegalArgumentException("checkPeriod must be at least 1 ms: " + period);
            }
            this.checkPeriod = period;
            return this;
        }

        /**
         * The bounds of shrinking inline, on a thread that may not wait (an
         * event loop): at most {@code bytes} asked and, checked after each
         * round of asking, at most {@code time} spent per allocation (default
         * 16 MiB, 1 ms). 0 bytes: such threads never shrink. Memory comes
         * back a chunk at a time, and entries dropped from a cache empty a
         * chunk only when all of it goes: keep {@code bytes} at two chunks or
         * more, or an allocation may free entries and still be refused.
         */
        public Builder inline(long bytes, Duration time) {
            this.inlineBytes = nonNegative("inline bytes", bytes);
            this.inlineTime = nonNegative("inline time", time);
            return this;
        }

        /** The bounds of shrinking on any other thread at a limit (default 64 MiB, 20 ms); 0 bytes: never. */
        public Builder atLimit(long bytes, Duration time) {
            this.atLimitBytes = nonNegative("atLimit bytes", bytes);
            this.atLimitTime = nonNegative("atLimit time", time);
            return this;
        }

        /** Reserved bytes of {@code category} that are never shrunk; tracks the category's reserved bytes exactly. */
        public Builder floor(String category, long bytes) {
            Category.checkName(category);
            floors.put(category, nonNegative("floor of '" + category + "'", bytes));
            return this;
        }

        /** How much of a spread request {@code category} takes, relative to the others (default 1); above 0. */
        public Builder weight(String category, double weight) {
            Category.checkName(category);
            if (!(weight > 0) || Double.isInfinite(weight)) {
                throw new IllegalArgumentException("weight of '" + category + "' must be above 0 and finite: " + weight);
            }
            weights.put(category, weight);
            return this;
        }

        /**
         * Whether requests of {@code category} may make other categories'
         * shrinkers free memory at the ceiling. Default: yes for a category
         * without a shrinker of its own, no for a cache.
         */
        public Builder takesFromCaches(String category, boolean takes) {
            Category.checkName(category);
            takesFromCaches.put(category, takes);
            return this;
        }

        /** The configuration. */
        public PressureConfig build() {
            return new PressureConfig(this);
        }

        private static long nonNegative(String name, long value) {
            if (value < 0) {
                throw new IllegalArgumentException(name + " must not be negative: " + value);
            }
            return value;
        }

        private static Duration nonNegative(String name, Duration value) {
            Objects.requireNonNull(value, name);
            if (value.isNegative()) {
                throw new IllegalArgumentException(name + " must not be negative: " + value);
            }
            return value;
        }
    }
}
