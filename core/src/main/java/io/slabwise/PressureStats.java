package io.slabwise;

import java.util.List;

/**
 * What memory pressure has done in a pool so far ({@link MemoryPool#pressureStats()}):
 * per category with a shrinker, what it was asked and what it answered; for the
 * pool, how often the high watermark was crossed, how many allocations needed
 * shrinking at a limit and how long shrinking took. Every count only grows.
 * Reading it costs one pass over the categories with a shrinker.
 *
 * @param highWatermarkCrossings times committed memory was found above the high watermark and the background shrinking began
 * @param backgroundRounds       background rounds that asked shrinkers for memory
 * @param backgroundGivenBack    committed bytes that fell during those rounds (the pool's own accounting, not the answers)
 * @param limitShrinks           allocations at the ceiling or a quota for which a shrinker looked at its entries
 *                               (answered other than busy) before the policy applied
 * @param limitShrinksServed     of those, the ones served after shrinking (the others met the policy)
 * @param shrinkNanos            time spent in shrinker calls, every cause
 * @param maxLimitShrinkNanos    the longest time one allocation spent shrinking at a limit
 * @param categories             per category with a shrinker (or that had one), in category order
 */
public record PressureStats(long highWatermarkCrossings, long backgroundRounds, long backgroundGivenBack,
                            long limitShrinks, long limitShrinksServed, long shrinkNanos, long maxLimitShrinkNanos,
                            List<CategoryPressure> categories) {

    /** Nothing yet. */
    public static final PressureStats NONE = new PressureStats(0, 0, 0, 0, 0, 0, 0, List.of());

    /** A copy holding an unmodifiable list. */
    public PressureStats {
        categories = List.copyOf(categories);
    }

    /**
     * One category's shrinker, as the pool asked it.
     *
     * @param name     the category
     * @param calls    calls of {@link Shrinker#shrink}
     * @param asked    bytes asked for in those calls, but for the ones answered busy
     * @param freed    bytes the shrinker answered it freed
     * @param busy     calls answered {@link Shrinker#BUSY}
     * @param failures calls that threw
     */
    public record CategoryPressure(String name, long calls, long asked, long freed, long busy, long failures) {
    }

    /** The category called {@code name}, or null when it never had a shrinker. */
    public CategoryPressure category(String name) {
        for (CategoryPressure c : categories) {
            if (c.name().equals(name)) {
                return c;
            }
        }
        return null;
    }

    /** Bytes the shrinkers answered they freed, every category. */
    public long freed() {
        long sum = 0;
        for (CategoryPressure c : categories) {
            sum += c.freed();
        }
        return sum;
    }
}
