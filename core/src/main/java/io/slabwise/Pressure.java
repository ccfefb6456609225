package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Pressure: asks the caches' {@link Shrinker}s for memory, in the background
 * above the high watermark and for an allocation at a limit, and counts what
 * it asked and what came back. The rules it keeps:
 *
 * <ul>
 *   <li><b>Measured, not believed.</b> Progress is committed memory read from
 *       the limit (and, at a quota, the category's tracked reserved bytes),
 *       never a shrinker's answer: memory an entry frees may stay committed.</li>
 *   <li><b>No over-eviction.</b> One background episode (from a crossing of
 *       the high watermark to below the low one) asks for at most the bytes
 *       that were above the low watermark when it began; when committed
 *       memory does not follow, the episode ends and a new one begins only
 *       after committed memory went back under the high watermark or grew by
 *       the gap between the marks. An allocation at a limit asks for what it
 *       lacks (at least a chunk at the ceiling, where memory goes back a chunk
 *       at a time), within {@link PressureConfig#atLimitBytes()} or
 *       {@link PressureConfig#inlineBytes()}, and stops as soon as a round
 *       frees nothing. A floor is never asked for.</li>
 *   <li><b>Never waits.</b> Shrinkers say {@link Shrinker#BUSY} rather than
 *       wait; a busy, throwing or empty shrinker is counted and skipped. A
 *       thread inside a shrinker never shrinks again (its own allocations at
 *       a limit go straight to the policy).</li>
 * </ul>
 *
 * Per background tick the work is a read of the committed bytes while there is
 * no pressure, and a pass over the categories with a shrinker (at most
 * {@link Category#MAX_CATEGORIES}) while there is: nothing here walks chunks,
 * entries or threads. Any thread; the background runs one tick at a time.
 */
final class Pressure {

    /** {@link PoolEvents.Shrink#cause}: the background, above the high watermark. */
    static final String BACKGROUND = "background";
    /** {@link PoolEvents.Shrink#cause}: an allocation at the ceiling. */
    static final String CEILING = "ceiling";
    /** {@link PoolEvents.Shrink#cause}: an allocation at its category's quota, or a quota above its high watermark. */
    static final String QUOTA = "quota";

    /** Set while this thread runs a shrinker: what it allocates at a limit meanwhile shrinks nothing. */
    private static final ThreadLocal<Boolean> SHRINKING = new ThreadLocal<>();
    private static final System.Logger LOGGER = System.getLogger(Pressure.class.getName());

    private final PressureConfig config;
    private final MemoryLimit limit;
    private final Ticker ticker;
    private final IdleMemory idle;
    private final long chunkSize;
    /** Whether shrinkers are ever asked: pressure on and a ceiling to press against. */
    private final boolean active;
    /** The watermarks in bytes of committed memory. */
    private final long high;
    private final long low;

    /** The registered shrinkers, in category order; copy-on-write under {@code this}. */
    private volatile Registered[] registered = new Registered[0];
    /** Counts per category id, made when the category first gets a shrinker and kept after it is removed. */
    private final Tally[] tallies = new Tally[Category.MAX_CATEGORIES];

    /** The background runs one tick at a time; the fields below are its own. */
    private final AtomicBoolean ticking = new AtomicBoolean();
    /** Bytes the current episode may still ask for; 0 outside an episode. */
    private long episodeLeft;
    /** Committed bytes when the last episode ended without reaching the low watermark. */
    private long episodeEnd;
    /** Whether a crossing of the high watermark starts an episode. */
    private boolean armed = true;

    private final AtomicLong crossings = new AtomicLong();
    private final AtomicLong rounds = new AtomicLong();
    private final AtomicLong givenBack = new AtomicLong();
    private final AtomicLong limitShrinks = new AtomicLong();
    private final AtomicLong limitShrinksServed = new AtomicLong();
    private final AtomicLong shrinkNanos = new AtomicLong();
    private final AtomicLong maxLimitShrinkNanos = new AtomicLong();

    /** A category's shrinker, with the settings that apply to it. */
    private static final class Registered {
        final Category category;
        final Shrinker shrinker;
        final long floor;
        final double weight;
        final Tally tally;

        Registered(Category category, Shrinker shrinker, long floor, double weight, Tally tally) {
            this.category = category;
            this.shrinker = shrinker;
            this.floor = floor;
            this.weight = weight;
            this.tally = tally;
        }
    }

    /** What one category's shrinkers were asked and answered, over the pool's life. */
    private static final class Tally {
        final String name;
        final AtomicLong calls = new AtomicLong();
        final AtomicLong asked = new AtomicLong();
        final AtomicLong freed = new AtomicLong();
        final AtomicLong busy = new AtomicLong();
        final AtomicLong failures = new AtomicLong();
        volatile boolean warned;

        Tally(String name) {
            this.name = name;
        }
    }

    Pressure(PressureConfig config, MemoryLimit limit, Ticker ticker, IdleMemory idle, long chunkSize) {
        this.config = config;
        this.limit = limit;
        this.ticker = ticker;
        this.idle = idle;
        this.chunkSize = chunkSize;
        this.active = config.enabled() && limit.max != Long.MAX_VALUE;
        this.high = (long) (limit.max * config.highWatermark());
        this.low = (long) (limit.max * config.lowWatermark());
    }

    /** Whether this pool ever asks shrinkers: pressure is on and there is a ceiling. */
    boolean active() {
        return active;
    }

    /**
     * Registers {@code shrinker} for {@code category} (null: removes it).
     *
     * @return the shrinker it replaced, or null
     */
    synchronized Shrinker set(Category category, Shrinker shrinker) {
        Registered[] current = registered;
        List<Registered> next = new ArrayList<>(current.length + 1);
        Shrinker previous = null;
        for (Registered r : current) {
            if (r.category == category) {
                previous = r.shrinker;
            } else {
                next.add(r);
            }
        }
        if (shrinker != null) {
            Tally tally = tallies[category.id];
            if (tally == null) {
                tally = tallies[category.id] = new Tally(category.name());
            }
            int at = 0;
            while (at < next.size() && next.get(at).category.id < category.id) {
                at++;
            }
            next.add(at, new Registered(category, shrinker, config.floor(category.name()),
                    config.weight(category.name()), tally));
        }
        registered = next.toArray(new Registered[0]);
        return previous;
    }

    /**
     * One background tick: shrinks categories above their quota's high
     * watermark, then, while committed memory is above the high watermark (an
     * episode), asks the shrinkers for the bytes above the low one, gives back
     * idle memory and compacts. At most one tick at a time; a tick that finds
     * another running returns.
     */
    void background(Compaction compaction) {
        if (!active || !config.background() || registered.length == 0 || !ticking.compareAndSet(false, true)) {
            return;
        }
        try {
            shrinkQuotas();
            long committed = limit.committed();
            if (!armed && (committed <= high || committed > episodeEnd + (high - low))) {
                armed = true;
            }
            if (episodeLeft <= 0) {
                if (committed <= high || !armed) {
                    return;
                }
                crossings.incrementAndGet();
                episodeLeft = committed - low;
                idle.reclaimAll(false); // idle memory first: it costs no cache anything
                long after = limit.committed();
                if (after < committed) {
                    givenBack.addAndGet(committed - after);
                }
                committed = after;
            }
            long ask = Math.min(committed - low, episodeLeft);
            if (ask <= 0) {
                endEpisode(committed);
                return;
            }
            rounds.incrementAndGet();
            Round round = new Round(ticker.read() + config.atLimitTime().toNanos());
            spread(round, registered, null, ask, BACKGROUND, true);
            episodeLeft -= round.askedOfAnswering;
            idle.reclaimAll(false); // blocks and sequential chunks the shrinkers emptied go back
            if (round.freed > 0 && compaction.hasRelocators()) {
                compaction.compact(Compaction.DEFAULT_MAX_OCCUPANCY, ask, false, "pressure");
            }
            long after = limit.committed();
            if (after < committed) {
                givenBack.addAndGet(committed - after);
            }
            if (after <= low || episodeLeft <= 0 || (round.freed <= 0 && !round.anyBusy)) {
                endEpisode(after);
            }
        } finally {
            ticking.set(false);
        }
    }

    /** Ends the episode; a new one needs committed memory under the high watermark again, or grown by the gap. */
    private void endEpisode(long committed) {
        episodeLeft = 0;
        episodeEnd = committed;
        armed = committed <= high;
    }

    /** Asks each category whose tracked reserved bytes are above its quota's high watermark for the bytes above the low one. */
    private void shrinkQuotas() {
        for (Registered r : registered) {
            Category c = r.category;
            long quota = c.quota;
            if (!c.tracked || quota == Long.MAX_VALUE) {
                continue;
            }
            long reserved = c.trackedReserved.get();
            if (reserved > (long) (quota * config.highWatermark())) {
                long ask = Math.min(reserved - (long) (quota * config.lowWatermark()), aboveFloor(r));
                if (ask > 0 && reclaimable(r) > 0) {
                    call(r, ask, QUOTA);
                }
            }
        }
    }

    /**
     * Before an allocation refused at {@code refusal} (the ceiling or its
     * quota) meets its policy: asks shrinkers for what it lacks, gives back
     * what they emptied ({@code reclaimForCeiling}, at the ceiling) and tries
     * again, round after round, while rounds free something and the bounds
     * allow: the bytes bound caps what all rounds ask together, the time
     * bound is checked after each round (the first one always runs whole,
     * asking each cache once), so a thread descheduled on a loaded machine
     * still asks before it is refused. At a quota only the category's own shrinker is asked; at the
     * ceiling its own first, then, for a category that takes from caches, the
     * others. {@code mayWait} picks the bounds: false for a thread that may
     * not wait, which shrinks inline within {@link PressureConfig#inlineBytes()}.
     *
     * @return {@link Attempt#DONE} when {@code out} was filled, else the last refusal
     */
    int relieve(Attempt attempt, Category category, int requested, Allocation out, int refusal, boolean mayWait,
                Runnable reclaimForCeiling) {
        Registered[] all = registered;
        if (!active || all.length == 0 || SHRINKING.get() != null
                || (refusal != Attempt.CEILING && refusal != Attempt.QUOTA)) {
            return refusal;
        }
        boolean atQuota = refusal == Attempt.QUOTA;
        Registered own = null;
        for (Registered r : all) {
            if (r.category == category) {
                own = r;
            }
        }
        boolean others = !atQuota && config.takesFromCaches(category.name(), own != null);
        long maxBytes = mayWait ? config.atLimitBytes() : config.inlineBytes();
        if ((own == null && !others) || maxBytes == 0) {
            return refusal;
        }
        long start = ticker.read();
        Round round = new Round(start + (mayWait ? config.atLimitTime() : config.inlineTime()).toNanos());
        long asked = 0;
        boolean counted = false;
        try {
            while (asked < maxBytes) {
                long ask = Math.min(lacking(attempt, category, requested, atQuota), maxBytes - asked);
                long freedBefore = round.freed;
                if (own != null) {
                    long fromOwn = call(own, Math.min(ask, Math.min(reclaimable(own), aboveFloor(own))), atQuota ? QUOTA : CEILING);
                    round.freed += Math.max(0, fromOwn);
                    round.anyBusy |= fromOwn == Shrinker.BUSY;
                    if (fromOwn != Shrinker.BUSY) {
                        round.askedOfAnswering += ask;
                    }
                }
                if (others && round.freed - freedBefore < ask) {
                    // every round asks each cache once: the time bound applies between rounds, never before the first
                    spread(round, all, category, ask - (round.freed - freedBefore), CEILING, false);
                }
                asked += ask;
                if (!counted && round.askedOfAnswering > 0) {
                    counted = true; // an allocation that shrank: some shrinker looked at its entries for it
                    limitShrinks.incrementAndGet();
                }
                boolean freedNothing = round.freed == freedBefore;
                if (freedNothing && !round.anyBusy) {
                    return refusal; // nothing could go: the policy applies
                }
                // a busy shrinker may be freeing right now (the background, another allocation): one more try
                if (!atQuota) {
                    reclaimForCeiling.run();
                }
                int again = attempt.tryOnce(category, requested, out);
                if (again == Attempt.DONE) {
                    if (counted) {
                        limitShrinksServed.incrementAndGet();
                    }
                    return Attempt.DONE;
                }
                if (again != refusal || freedNothing || round.pastDeadline(ticker)) {
                    return again;
                }
            }
            return refusal;
        } finally {
            if (counted) {
                maxLimitShrinkNanos.accumulateAndGet(ticker.read() - start, Math::max);
            }
        }
    }

    /**
     * What the request lacks: at the ceiling, the committed bytes it needs
     * beyond what the calling thread may still commit, at least a chunk; at a
     * quota, the reserved bytes beyond the quota. At least 1.
     */
    private long lacking(Attempt attempt, Category category, int requested, boolean atQuota) {
        if (atQuota) {
            long reserved = Math.max(requested, attempt.leastReserved(requested));
            return Math.max(1, category.trackedReserved.get() + reserved - category.quota);
        }
        long needed = Math.max(requested, attempt.leastCommitted(requested));
        long short_ = limit.committed() + needed - limit.ceilingFor(Thread.currentThread());
        return Math.max(short_, chunkSize);
    }

    /** The state of one round of asking: its deadline, what was freed, whether a shrinker was busy. */
    private static final class Round {
        final long deadline;
        long freed;
        long askedOfAnswering;
        boolean anyBusy;

        Round(long deadline) {
            this.deadline = deadline;
        }

        boolean pastDeadline(Ticker ticker) {
            return ticker.read() - deadline >= 0;
        }
    }

    /**
     * Spreads {@code ask} over the shrinkers in {@code candidates} but
     * {@code except}, by what each could free (within its floor) times its
     * weight, never asking one for more than that; with {@code timed}, stops
     * at the round's deadline.
     */
    private void spread(Round round, Registered[] candidates, Category except, long ask, String cause, boolean timed) {
        long[] can = new long[candidates.length];
        double total = 0;
        for (int i = 0; i < candidates.length; i++) {
            Registered r = candidates[i];
            if (r.category != except) {
                can[i] = Math.min(reclaimable(r), aboveFloor(r));
                total += can[i] * r.weight;
            }
        }
        if (total <= 0) {
            return;
        }
        for (int i = 0; i < candidates.length; i++) {
            if (can[i] <= 0) {
                continue;
            }
            Registered r = candidates[i];
            long share = Math.min(can[i], Math.max(1, (long) (ask * (can[i] * r.weight / total))));
            if (share <= 0) {
                continue;
            }
            long answer = call(r, share, cause);
            if (answer == Shrinker.BUSY) {
                round.anyBusy = true;
            } else {
                round.askedOfAnswering += share;
                round.freed += answer;
            }
            if (timed && round.pastDeadline(ticker)) {
                return;
            }
        }
    }

    /** The reserved bytes of the category above its floor; unbounded when it has no floor. */
    private static long aboveFloor(Registered r) {
        if (r.floor == 0 || !r.category.tracked) {
            return Long.MAX_VALUE;
        }
        return Math.max(0, r.category.trackedReserved.get() - r.floor);
    }

    /** What the shrinker says it could free; 0 when it throws or answers below 0. */
    private static long reclaimable(Registered r) {
        try {
            return Math.max(0, r.shrinker.reclaimable());
        } catch (RuntimeException e) {
            failed(r, "reclaimable()", e);
            return 0;
        }
    }

    /**
     * Calls the shrinker for {@code ask} bytes (at least 1) with this thread
     * marked as shrinking, counts and reports the call, and returns its
     * answer: the bytes freed (0 for nothing, a failure or a negative
     * answer), or {@link Shrinker#BUSY}.
     */
    private long call(Registered r, long ask, String cause) {
        if (ask <= 0) {
            return 0;
        }
        PoolEvents.Shrink event = PoolEvents.beginShrink();
        long start = ticker.read();
        long answer;
        String outcome;
        SHRINKING.set(Boolean.TRUE);
        try {
            answer = r.shrinker.shrink(ask);
            outcome = answer == Shrinker.BUSY ? "busy" : answer > 0 ? "freed" : "nothing";
            if (answer < 0 && answer != Shrinker.BUSY) {
                answer = 0;
            }
        } catch (RuntimeException | Error e) {
            if (e instanceof VirtualMachineError) {
                throw e;
            }
            failed(r, "shrink(" + ask + ")", e);
            answer = 0;
            outcome = "failed";
        } finally {
            SHRINKING.remove();
            shrinkNanos.addAndGet(ticker.read() - start);
        }
        Tally t = r.tally;
        t.calls.incrementAndGet();
        if (answer == Shrinker.BUSY) {
            t.busy.incrementAndGet(); // nothing was asked of it in the end: the asked bytes are what owners looked at
        } else {
            t.asked.addAndGet(ask);
            t.freed.addAndGet(answer);
        }
        PoolEvents.endShrink(event, r.category.name(), cause, ask, Math.max(0, answer), outcome, limit.committed());
        return answer;
    }

    /** Counts a shrinker that threw, and logs the first failure of its category. */
    private static void failed(Registered r, String call, Throwable e) {
        r.tally.failures.incrementAndGet();
        if (!r.tally.warned) {
            r.tally.warned = true;
            LOGGER.log(System.Logger.Level.WARNING, "the shrinker of category '" + r.category + "' threw from "
                    + call + "; counted as freeing nothing (further failures are only counted)", e);
        }
    }

    /** What pressure has done so far. */
    synchronized PressureStats stats() {
        List<PressureStats.CategoryPressure> categories = new ArrayList<>();
        for (Tally t : tallies) {
            if (t != null) {
                categories.add(new PressureStats.CategoryPressure(t.name, t.calls.get(), t.asked.get(), t.freed.get(),
                        t.busy.get(), t.failures.get()));
            }
        }
        return new PressureStats(crossings.get(), rounds.get(), givenBack.get(), limitShrinks.get(),
                limitShrinksServed.get(), shrinkNanos.get(), maxLimitShrinkNanos.get(), categories);
    }

    /** Appends the report's lines on pressure: none while no shrinker was ever registered, or pressure is off. */
    void report(StringBuilder sb) {
        PressureStats p = stats();
        if (!active || p.categories().isEmpty()) {
            return;
        }
        sb.append(String.format(Locale.ROOT, "  pressure: watermarks high %d bytes, low %d bytes; crossed %d times, %d"
                        + " background rounds gave back %d bytes; %d allocations at a limit shrank (%d then served, longest %d us)%n",
                high, low, p.highWatermarkCrossings(), p.backgroundRounds(), p.backgroundGivenBack(),
                p.limitShrinks(), p.limitShrinksServed(), p.maxLimitShrinkNanos() / 1000));
        for (PressureStats.CategoryPressure c : p.categories()) {
            sb.append(String.format(Locale.ROOT, "    shrinker %-16s %d calls, asked %d bytes, freed %d bytes,"
                    + " busy %d, failed %d%n", c.name(), c.calls(), c.asked(), c.freed(), c.busy(), c.failures()));
        }
    }
}
