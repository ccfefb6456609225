package io.slabwise;

import java.util.List;

/**
 * An immutable snapshot of what happened at a pool's limits since it was
 * built: per category and per {@link MemoryLimitException.Kind limit} (the
 * pool's ceiling, the category's quota), how many allocations were refused,
 * how many waited and for how long; and how many wait right now. From
 * {@link MemoryPool#limitStats()}.
 *
 * <p>A <em>refusal</em> is an allocation that met a limit and got no memory:
 * it returned nothing ({@link LimitPolicy#RETURN_NULL}, or a try-allocate) or
 * threw {@link MemoryLimitException} (at once, or after waiting in vain). A
 * <em>wait</em> is an allocation that lined up for memory under
 * {@link LimitPolicy#WAIT}, counted when the wait is over whatever came of it:
 * served, timed out (also a refusal), interrupted (also a refusal) or the pool
 * closed. Every count only grows.
 */
public final class LimitStats {

    private static final int KINDS = MemoryLimitException.Kind.values().length;

    /** Category names by id. */
    private final List<String> categories;
    /** Counts by {@code id * KINDS + kind.ordinal()}. */
    private final long[] refusals;
    private final long[] waits;
    private final long[] waitNanos;
    private final int waiting;

    LimitStats(String[] categories, long[] refusals, long[] waits, long[] waitNanos, int waiting) {
        this.categories = List.of(categories);
        this.refusals = refusals;
        this.waits = waits;
        this.waitNanos = waitNanos;
        this.waiting = waiting;
    }

    /** The categories counted, in order of creation. */
    public List<String> categories() {
        return categories;
    }

    /** Allocations of the category refused at that limit; 0 for a category the pool does not have. */
    public long refusals(String category, MemoryLimitException.Kind kind) {
        return at(refusals, category, kind);
    }

    /** Allocations of the category that waited at that limit and are done waiting. */
    public long waits(String category, MemoryLimitException.Kind kind) {
        return at(waits, category, kind);
    }

    /** Nanoseconds those allocations spent waiting, together. */
    public long waitNanos(String category, MemoryLimitException.Kind kind) {
        return at(waitNanos, category, kind);
    }

    /** Allocations refused at any limit. */
    public long refusals() {
        return sum(refusals);
    }

    /** Allocations that waited at any limit. */
    public long waits() {
        return sum(waits);
    }

    /** Nanoseconds spent waiting at any limit, together. */
    public long waitNanos() {
        return sum(waitNanos);
    }

    /** Allocations waiting at the ceiling or a quota when the snapshot was taken. */
    public int waitingAllocations() {
        return waiting;
    }

    private long at(long[] counts, String category, MemoryLimitException.Kind kind) {
        int id = categories.indexOf(category);
        return id < 0 ? 0 : counts[id * KINDS + kind.ordinal()];
    }

    private static long sum(long[] counts) {
        long sum = 0;
        for (long c : counts) {
            sum += c;
        }
        return sum;
    }

    @Override
    public String toString() {
        return "refusals=" + refusals() + " waits=" + waits() + " waited=" + waitNanos() / 1_000_000 + "ms waiting="
                + waiting;
    }
}
