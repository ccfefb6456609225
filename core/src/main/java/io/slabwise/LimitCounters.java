package io.slabwise;

import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * What happened at the pool's limits, counted per category and per limit
 * (ceiling or quota): refusals, waits and the time spent waiting. Written by
 * {@link Admission} on its slow path only, read by {@link #snapshot}.
 *
 * <pre>
 *  byCategory[category.id] ──▶ Counts (made on the category's first refusal or wait)
 *                                 refusals[kind]   waits[kind]   waitNanos[kind]    kind: CEILING=0, QUOTA=1
 * </pre>
 *
 * A category that never met a limit costs one null slot. The counters are
 * {@link LongAdder}s: under a storm of refusals (a quota full and the policy
 * to return nothing) many threads count at once without contending. Each
 * counter only grows, so successive snapshots never go down; a snapshot taken
 * while a wait ends may see its count before its time. Any thread.
 */
final class LimitCounters {

    private static final int KINDS = MemoryLimitException.Kind.values().length;

    private final AtomicReferenceArray<Counts> byCategory = new AtomicReferenceArray<>(Category.MAX_CATEGORIES);

    /** The counters of one category. */
    private static final class Counts {
        final LongAdder[] refusals = adders();
        final LongAdder[] waits = adders();
        final LongAdder[] waitNanos = adders();

        private static LongAdder[] adders() {
            LongAdder[] adders = new LongAdder[KINDS];
            for (int i = 0; i < KINDS; i++) {
                adders[i] = new LongAdder();
            }
            return adders;
        }
    }

    /** An allocation of {@code category} was refused at that limit. */
    void refused(Category category, MemoryLimitException.Kind kind) {
        countsOf(category).refusals[kind.ordinal()].increment();
    }

    /** An allocation of {@code category} waited {@code nanos} at that limit, whatever came of it. */
    void waited(Category category, MemoryLimitException.Kind kind, long nanos) {
        Counts counts = countsOf(category);
        counts.waits[kind.ordinal()].increment();
        counts.waitNanos[kind.ordinal()].add(Math.max(0, nanos));
    }

    private Counts countsOf(Category category) {
        Counts counts = byCategory.get(category.id);
        if (counts == null) {
            Counts made = new Counts();
            counts = byCategory.compareAndExchange(category.id, null, made);
            if (counts == null) {
                counts = made;
            }
        }
        return counts;
    }

    /** The counts of the categories {@code known} (every category of the pool), with the callers waiting now. */
    LimitStats snapshot(Category[] known, int waiting) {
        String[] names = new String[known.length];
        long[] refusals = new long[known.length * KINDS];
        long[] waits = new long[known.length * KINDS];
        long[] waitNanos = new long[known.length * KINDS];
        for (Category category : known) {
            names[category.id] = category.name();
            Counts counts = byCategory.get(category.id);
            if (counts != null) {
                for (int k = 0; k < KINDS; k++) {
                    int i = category.id * KINDS + k;
                    refusals[i] = counts.refusals[k].sum();
                    waits[i] = counts.waits[k].sum();
                    waitNanos[i] = counts.waitNanos[k].sum();
                }
            }
        }
        return new LimitStats(names, refusals, waits, waitNanos, waiting);
    }
}
