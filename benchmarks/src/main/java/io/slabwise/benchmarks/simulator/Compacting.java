package io.slabwise.benchmarks.simulator;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * How the owners of one {@code -moving} run compact, and what they saw: made
 * by the simulator for each run of a {@code -moving} workload and shared by
 * its owners ({@link Owner}).
 *
 * <ul>
 *   <li>{@code byOwners}: each owner looks every time it has released
 *       {@link #STEP_FRACTION} of its bound (the phase-shifting owner also
 *       after each phase's frees), and if the pool's committed bytes are
 *       more than {@code compactAbove} times its reserved bytes, it calls
 *       {@code compact(maxOccupancy, no budget)} itself, on its own thread:
 *       in the mix, whichever owner looks first compacts for all. Without it,
 *       only the pool's background compaction (if it has a budget) or the
 *       ceiling's compacts, and the owners only register their
 *       relocators.</li>
 *   <li>{@code maxOccupancy}: chunks used at most this fraction of their size
 *       are emptied by an owner's compaction (the pool's background and
 *       ceiling compactions use their own, one half).</li>
 * </ul>
 */
final class Compacting {

    /** The part of its bound an owner releases between two looks at whether to compact. */
    static final double STEP_FRACTION = 1.0 / 8;

    private final boolean byOwners;
    private final double maxOccupancy;
    private final double compactAbove;
    /** Relocator calls that returned at once because the owner was busy with its entries. */
    private final LongAdder ownerBusy = new LongAdder();
    /** Compactions the owners asked for. */
    private final LongAdder ownerCompactions = new LongAdder();
    /** Bytes each owner moved, by category. */
    private final Map<String, LongAdder> movedBytes = new ConcurrentHashMap<>();
    /** Each owner's relocator calls that walked its entries, and the time they took (moves included), by category. */
    private final Map<String, LongAdder> walks = new ConcurrentHashMap<>();
    private final Map<String, LongAdder> walkNanos = new ConcurrentHashMap<>();
    /** Each owner's walks that found none of its entries in the chunks being emptied, by category. */
    private final Map<String, LongAdder> fruitlessWalks = new ConcurrentHashMap<>();

    Compacting(boolean byOwners, double maxOccupancy, double compactAbove) {
        if (!(maxOccupancy >= 0 && maxOccupancy < 1)) {
            throw new IllegalArgumentException("the occupancy must be from 0 to under 1: " + maxOccupancy);
        }
        if (!(compactAbove >= 1)) {
            throw new IllegalArgumentException("the committed/reserved to compact above must be at least 1: " + compactAbove);
        }
        this.byOwners = byOwners;
        this.maxOccupancy = maxOccupancy;
        this.compactAbove = compactAbove;
    }

    boolean byOwners() {
        return byOwners;
    }

    double maxOccupancy() {
        return maxOccupancy;
    }

    /** The pool's committed/reserved above which an owner compacts at the points it chose. */
    double compactAbove() {
        return compactAbove;
    }

    void countBusy() {
        ownerBusy.increment();
    }

    void countOwnerCompaction() {
        ownerCompactions.increment();
    }

    void countMove(String category, long bytes) {
        movedBytes.computeIfAbsent(category, c -> new LongAdder()).add(bytes);
    }

    void countWalk(String category, long nanos, boolean fruitless) {
        walks.computeIfAbsent(category, c -> new LongAdder()).increment();
        walkNanos.computeIfAbsent(category, c -> new LongAdder()).add(nanos);
        if (fruitless) {
            fruitlessWalks.computeIfAbsent(category, c -> new LongAdder()).increment();
        }
    }

    /**
     * What each owner did, by category: its relocator calls that walked its
     * entries, how many of them found none of its entries to move, the
     * milliseconds they took (moves included), the MiB it moved.
     */
    String byOwner() {
        Map<String, String> owners = new TreeMap<>();
        walks.forEach((category, calls) -> owners.put(category, String.format(Locale.ROOT,
                "%d walks (%d found nothing) %d ms, moved %d MiB", calls.sum(), sum(fruitlessWalks, category),
                sum(walkNanos, category) / 1_000_000, sum(movedBytes, category) >> 20)));
        return owners.toString();
    }

    private static long sum(Map<String, LongAdder> counters, String category) {
        LongAdder counter = counters.get(category);
        return counter == null ? 0 : counter.sum();
    }

    long ownerBusy() {
        return ownerBusy.sum();
    }

    long ownerCompactions() {
        return ownerCompactions.sum();
    }
}
