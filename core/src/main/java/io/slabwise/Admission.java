package io.slabwise;

/**
 * Admission: whether an allocation may take memory now, and what happens when
 * it may not. It opens and closes the pool, and owns the policies, the quota
 * changes and the wait at a limit; the ceiling, the wait queues and the
 * closed flag themselves are in {@link MemoryLimit} (which the thread caches
 * and the background work read too), each category's quota in its
 * {@link Category}.
 *
 * <pre>
 *  allocate ──▶ closed? ──yes──▶ IllegalStateException
 *                 │no
 *                 ▼
 *        others wait for my resource (ceiling, or my category's quota) and I would wait too?
 *                 │yes: line up (QUEUED)                │no
 *                 │                                     ▼
 *                 │                            attempt.tryOnce ──DONE──▶ filled
 *                 │                                     │CEILING / QUOTA
 *                 ▼                                     ▼
 *              atLimit: reclaim idle memory and retry (ceiling); ask shrinkers and retry (Pressure) ──▶ policy:
 *                 RETURN_NULL → false;  FAIL → MemoryLimitException;
 *                 never satisfiable (larger than the quota or the ceiling) → MemoryLimitException at once;
 *                 WAIT → queue of that resource, first come first served, until memory is released or the timeout
 * </pre>
 *
 * <p>Every refusal (false or {@link MemoryLimitException}) and every wait is
 * counted in {@link LimitCounters} and reported to JDK Flight Recorder
 * ({@code io.slabwise.LimitRefused}, {@code io.slabwise.LimitWait}; see
 * {@link PoolEvents}); both happen here, past the fast path.
 *
 * Any thread; no lock but the limit's, and never while an arena lock is held.
 */
final class Admission {

    private final PoolConfig config;
    private final MemoryLimit limit;
    /** Asks the caches' shrinkers for memory before the policy applies at a limit. */
    private final Pressure pressure;
    /** Takes back idle memory before a refusal at the ceiling. */
    private final CeilingReclaim reclaim;
    /** Refusals and waits, per category and limit. */
    private final LimitCounters limitCounters = new LimitCounters();

    /** What admission asks for before it refuses an allocation at the ceiling. */
    interface CeilingReclaim {
        /** Gives back what is idle (and may compact), so that a retry can commit; on the refused thread. */
        void reclaimForCeiling();
    }

    Admission(PoolConfig config, MemoryLimit limit, Pressure pressure, CeilingReclaim reclaim) {
        this.config = config;
        this.limit = limit;
        this.pressure = pressure;
        this.reclaim = reclaim;
    }

    /** Refuses every allocation from now on and wakes the callers waiting at a limit; false when already closed. */
    boolean close() {
        return limit.close(); // waiting callers wake up and find the pool closed
    }

    boolean isClosed() {
        return limit.isClosed();
    }

    /** @throws IllegalStateException when the pool is closed */
    void checkOpen() {
        if (limit.isClosed()) {
            throw new IllegalStateException("this pool is closed: no new allocations (" + config.chunkSource()
                    + " chunks, " + limit.committed() + " bytes still committed for live buffers)");
        }
    }

    /** The ceiling on committed bytes; {@link Long#MAX_VALUE} when there is none. */
    long maxMemory() {
        return limit.max;
    }

    /** Whether any allocation waits at the ceiling or a quota right now; one volatile read. */
    boolean hasWaiters() {
        return limit.hasWaiters();
    }

    /** Allocations waiting at the ceiling or a quota right now. */
    int waiters() {
        return limit.waiters();
    }

    /** Refusals and waits so far for the categories {@code known}, and the callers waiting now. */
    LimitStats limitStats(Category[] known) {
        return limitCounters.snapshot(known, limit.waiters());
    }

    /** Memory was given back: wakes callers waiting for it, if any. */
    void released() {
        limit.released();
    }

    /**
     * Whether an allocation in {@code category} must line up behind callers
     * already waiting instead of trying first: true, for callers that would
     * wait themselves ({@code policy}, read once by the caller), while someone waits for the ceiling or for this
     * category's quota, the resources this caller competes for. This keeps a
     * stream of small requests from starving a large one, and leaves callers
     * that compete for neither resource alone.
     */
    boolean mustQueue(Category category, LimitPolicy policy) {
        return limit.hasWaiters() && (limit.ceilingQueue.hasWaiters() || category.quotaQueue.hasWaiters())
                && policy == LimitPolicy.WAIT && config.waitAllowed().getAsBoolean();
    }

    /**
     * Whether an allocation in {@code category} may take memory the calling
     * thread already holds (its cache) with no further check: the pool is
     * open, the category has no quota, and nobody waits at a limit, so no
     * caller must line up. Memory already cached never raises the committed
     * bytes, so the ceiling cannot refuse it.
     */
    boolean admitsFreely(Category category) {
        return !category.tracked && !limit.isClosed() && !limit.hasWaiters();
    }

    /**
     * Tries once unless the caller must line up; then, or when refused, the
     * slow path. The category's policy is read once: a {@code MemoryPool.setPolicy}
     * meanwhile never refuses a caller that lined up under WAIT untried.
     */
    boolean admit(Attempt attempt, Category category, int requested, Allocation out) {
        checkOpen();
        LimitPolicy policy = policyOf(category);
        int refusal = mustQueue(category, policy) ? Attempt.QUEUED : attempt.tryOnce(category, requested, out);
        return refusal == Attempt.DONE || atLimit(attempt, category, requested, out, refusal, policy);
    }

    /** {@link #admit} under {@link LimitPolicy#RETURN_NULL} whatever the category's policy: never waits. */
    boolean tryAdmit(Attempt attempt, Category category, int requested, Allocation out) {
        checkOpen();
        int refusal = attempt.tryOnce(category, requested, out);
        return refusal == Attempt.DONE || atLimit(attempt, category, requested, out, refusal, LimitPolicy.RETURN_NULL);
    }

    /** {@link #tryAdmit} with {@code neverWait} (null or false at a limit, whatever the policy), else {@link #admit}. */
    boolean admit(Attempt attempt, Category category, int requested, Allocation out, boolean neverWait) {
        return neverWait ? tryAdmit(attempt, category, requested, out) : admit(attempt, category, requested, out);
    }

    private LimitPolicy policyOf(Category category) {
        LimitPolicy policy = category.policy;
        return policy != null ? policy : config.limitPolicy();
    }

    /**
     * The slow path at a limit: reclaim what can be reclaimed and try again,
     * then apply {@code policy}. Returns true when {@code out} was filled.
     */
    private boolean atLimit(Attempt attempt, Category category, int requested, Allocation out, int refusal, LimitPolicy policy) {
        if (refusal == Attempt.CEILING) {
            reclaim.reclaimForCeiling();
            refusal = attempt.tryOnce(category, requested, out);
            if (refusal == Attempt.DONE) {
                return true;
            }
        }
        // caches give back what they can spare before anyone is refused or waits
        refusal = pressure.relieve(attempt, category, requested, out, refusal, config.waitAllowed().getAsBoolean(),
                reclaim::reclaimForCeiling);
        if (refusal == Attempt.DONE) {
            return true;
        }
        if (policy == LimitPolicy.RETURN_NULL) {
            refused(category, requested, kindOf(refusal), policy, PoolEvents.BY_POLICY);
            return false;
        }
        failIfNeverSatisfiable(attempt, category, requested, policy);
        if (policy == LimitPolicy.FAIL) {
            throw refuse(category, requested, kindOf(refusal), policy, PoolEvents.BY_POLICY, "");
        }
        if (!config.waitAllowed().getAsBoolean()) {
            throw refuse(category, requested, kindOf(refusal), policy, PoolEvents.WAIT_NOT_ALLOWED,
                    " (waiting is not allowed on this thread)");
        }
        if (config.waitTimeout().isZero()) {
            throw refuse(category, requested, kindOf(refusal), policy, PoolEvents.WAIT_TIMEOUT, " (the wait timeout is zero)");
        }
        long deadline = config.ticker().read() + config.waitTimeout().toNanos(); // at most 100 years: see PoolConfig
        // first come, first served among the callers waiting for the same resource: only the head retries
        MemoryLimit.WaitQueue queue = queueFor(refusal, attempt, category, requested);
        long ticket = limit.enqueue(queue);
        long waitStart = config.ticker().read();
        PoolEvents.LimitWait waitEvent = PoolEvents.beginWait();
        String outcome = null;
        try {
            while (true) {
                // a quota lowered while this caller waits may leave its request with no hope: it fails then
                int turn;
                while ((turn = limit.awaitTurn(queue, ticket, deadline, () -> neverSatisfiable(attempt, category, requested)))
                        == MemoryLimit.GAVE_UP) {
                    failIfNeverSatisfiable(attempt, category, requested, policy); // unless the quota went back up since
                }
                if (turn == MemoryLimit.TIMED_OUT) {
                    outcome = PoolEvents.TIMEOUT;
                    throw timedOut(category, requested, policy, queue);
                }
                checkOpen();
                limit.retrying(true); // its own releases (a payload's parts given back) do not wake it
                int result = retryAsHead(attempt, category, requested, out, policy, queue, deadline);
                limit.retrying(false);
                if (result == Attempt.DONE) {
                    outcome = PoolEvents.SERVED;
                    return true;
                }
                if (result == TIMED_OUT) {
                    outcome = PoolEvents.TIMEOUT;
                    throw timedOut(category, requested, policy, queue);
                }
                // refused by the other limit: this caller now waits for that one, in its line, and the next
                // caller in this line gets its turn (it may need only what this one was waiting for)
                MemoryLimit.WaitQueue refusedBy = queueFor(result, attempt, category, requested);
                ticket = limit.requeue(queue, ticket, refusedBy);
                queue = refusedBy;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            outcome = PoolEvents.INTERRUPTED;
            throw refuse(category, requested, kindOf(queue), policy, PoolEvents.WAIT_INTERRUPTED, " (interrupted while waiting)");
        } finally {
            limit.retrying(false);
            limit.dequeue(queue, ticket);
            MemoryLimitException.Kind waitedFor = kindOf(queue);
            limitCounters.waited(category, waitedFor, config.ticker().read() - waitStart);
            PoolEvents.endWait(waitEvent, category.name(), requested, waitedFor,
                    outcome != null ? outcome : limit.isClosed() ? PoolEvents.CLOSED : PoolEvents.FAILED);
        }
    }

    /** {@link #retryAsHead}: the deadline passed first. */
    private static final int TIMED_OUT = -1;

    /**
     * The head of {@code queue} retries at every release: {@link Attempt#DONE}
     * when served, {@link #TIMED_OUT}, or the refusal of the other limit (the
     * one this caller does not wait for) as soon as that limit refuses it.
     */
    private int retryAsHead(Attempt attempt, Category category, int requested, Allocation out, LimitPolicy policy,
                            MemoryLimit.WaitQueue queue, long deadline) throws InterruptedException {
        int waitedFor = queue == limit.ceilingQueue ? Attempt.CEILING : Attempt.QUOTA;
        while (true) {
            checkOpen(); // a close() wakes this caller too: memory released since then must not serve it
            long seen = limit.releaseCount();
            int refusal = attempt.tryOnce(category, requested, out);
            if (refusal == Attempt.CEILING) {
                reclaim.reclaimForCeiling();
                refusal = attempt.tryOnce(category, requested, out);
            }
            if (refusal == Attempt.DONE) {
                return Attempt.DONE;
            }
            checkOpen();
            failIfNeverSatisfiable(attempt, category, requested, policy); // the quota may have been lowered
            if (refusal != waitedFor) {
                return refusal;
            }
            if (!limit.awaitRelease(seen, deadline)) {
                return TIMED_OUT;
            }
        }
    }

    /** Counts and returns the refusal of a caller whose wait in {@code queue} timed out. */
    private MemoryLimitException timedOut(Category category, int requested, LimitPolicy policy, MemoryLimit.WaitQueue queue) {
        return refuse(category, requested, kindOf(queue), policy, PoolEvents.WAIT_TIMEOUT,
                " after waiting " + config.waitTimeout().toMillis() + " ms");
    }

    /**
     * The line a caller refused with {@code refusal} waits in: that of the
     * limit that refused it. One that lined up without trying waits for its
     * quota (if it has one) when the quota has no room for it, or when nobody
     * waits at the ceiling; else for the ceiling.
     */
    private MemoryLimit.WaitQueue queueFor(int refusal, Attempt attempt, Category category, int requested) {
        if (refusal == Attempt.QUEUED) {
            if (!category.tracked) {
                // no quota to wait for, even when the callers it lined up behind have left the ceiling's line
                // since: a timeout there would name a quota the category does not have
                return limit.ceilingQueue;
            }
            boolean quotaFull = category.trackedReserved.get() + Math.max(requested, attempt.leastReserved(requested)) > category.quota;
            return quotaFull || !limit.ceilingQueue.hasWaiters() ? category.quotaQueue : limit.ceilingQueue;
        }
        return refusal == Attempt.QUOTA ? category.quotaQueue : limit.ceilingQueue;
    }

    /** The limit a caller waiting in {@code queue} waits for. */
    private MemoryLimitException.Kind kindOf(MemoryLimit.WaitQueue queue) {
        return queue == limit.ceilingQueue ? MemoryLimitException.Kind.CEILING : MemoryLimitException.Kind.QUOTA;
    }

    /**
     * The limit that refused: {@link Attempt#CEILING} or {@link Attempt#QUOTA};
     * for a caller that lined up without trying, the ceiling when others wait
     * there, else its quota.
     */
    private MemoryLimitException.Kind kindOf(int refusal) {
        boolean ceiling = refusal == Attempt.CEILING || (refusal == Attempt.QUEUED && limit.ceilingQueue.hasWaiters());
        return ceiling ? MemoryLimitException.Kind.CEILING : MemoryLimitException.Kind.QUOTA;
    }

    /**
     * Fails a request that no release can ever make room for, rather than
     * let it wait out its timeout: one that reserves more than its category's
     * quota, or needs more committed than the calling thread may ever commit
     * (a request just under either may reserve more, see {@link Attempt}).
     */
    private void failIfNeverSatisfiable(Attempt attempt, Category category, int requested, LimitPolicy policy) {
        if (!neverSatisfiable(attempt, category, requested)) {
            return;
        }
        // what the request reserves, not what it asks for: 99 000 bytes reserve 13 pages, 106 496 bytes
        long reserved = Math.max(requested, attempt.leastReserved(requested));
        if (category.tracked && reserved > category.quota) {
            String why = reserved > requested ? "the request reserves " + reserved + " bytes, more than" : "the request is larger than";
            throw refuse(category, requested, MemoryLimitException.Kind.QUOTA, policy, PoolEvents.NEVER_SATISFIABLE,
                    " (" + why + " the quota itself: it can never be satisfied)");
        }
        long committed = Math.max(requested, attempt.leastCommitted(requested));
        long ceiling = limit.ceilingFor(Thread.currentThread());
        String why = committed > requested ? "the request needs " + committed + " bytes committed, more than" : "the request is larger than";
        String limitNamed = ceiling < limit.max
                ? "the ceiling less the " + (limit.max - ceiling) + " bytes kept for compactions" : "the ceiling itself";
        throw refuse(category, requested, MemoryLimitException.Kind.CEILING, policy, PoolEvents.NEVER_SATISFIABLE,
                " (" + why + " " + limitNamed + ": it can never be satisfied)");
    }

    /**
     * Whether no release can ever make room for the request: it reserves more
     * than its category's quota (which {@link #setQuota} may have lowered), or
     * needs more committed than the ceiling leaves the calling thread (all of
     * it to a compaction's moves, all but the compaction reserve to anyone
     * else). Reads only the limits; any lock may be held.
     */
    private boolean neverSatisfiable(Attempt attempt, Category category, int requested) {
        long reserved = Math.max(requested, attempt.leastReserved(requested));
        return (category.tracked && reserved > category.quota)
                || Math.max(requested, attempt.leastCommitted(requested)) > limit.ceilingFor(Thread.currentThread());
    }

    /** Counts and reports a refusal, and returns the exception to throw for it. */
    private MemoryLimitException refuse(Category category, int requested, MemoryLimitException.Kind kind,
                                        LimitPolicy policy, String reason, String suffix) {
        refused(category, requested, kind, policy, reason);
        return exception(category, requested, kind, suffix);
    }

    /** Counts a refusal and reports it to JDK Flight Recorder. */
    private void refused(Category category, int requested, MemoryLimitException.Kind kind, LimitPolicy policy,
                         String reason) {
        limitCounters.refused(category, kind);
        boolean quota = kind == MemoryLimitException.Kind.QUOTA;
        PoolEvents.limitRefused(category.name(), requested, kind, quota ? category.quota : limit.max,
                quota ? category.trackedReserved.get() : limit.committed(), policy, reason);
    }

    /**
     * The exception for a request of {@code reserved} bytes refused at a limit,
     * naming the category, the request, the limit and the current usage; the
     * quota is blamed when it has no room for that many bytes.
     */
    MemoryLimitException exceptionFor(Category category, int requested, long reserved) {
        boolean quota = category.tracked && category.trackedReserved.get() + reserved > category.quota;
        return exception(category, requested, quota ? MemoryLimitException.Kind.QUOTA : MemoryLimitException.Kind.CEILING, "");
    }

    private MemoryLimitException exception(Category category, int requested, MemoryLimitException.Kind kind, String suffix) {
        // read from counters kept for the limits: a refusal never reads every thread's counters (stats() does), so a
        // storm of refusals at the ceiling costs the same with ten threads or ten thousand
        String usage = "committed " + limit.committed() + " bytes";
        if (kind == MemoryLimitException.Kind.QUOTA) {
            return new MemoryLimitException(MemoryLimitException.Kind.QUOTA, category.name(), requested, category.quota,
                    "category '" + category + "' quota exceeded: request of " + requested + " bytes, quota "
                            + category.quota + " bytes, category reserved " + category.trackedReserved.get()
                            + " bytes; pool " + usage + suffix);
        }
        // the compaction reserve stops this thread a chunk under the ceiling: say so, or committed looks to have room
        long reserve = limit.max - limit.ceilingFor(Thread.currentThread());
        String reserved = reserve > 0 ? " (" + reserve + " bytes of it kept for compactions)" : "";
        return new MemoryLimitException(MemoryLimitException.Kind.CEILING, category.name(), requested, limit.max,
                "memory ceiling reached: category '" + category + "' requested " + requested + " bytes, limit "
                        + limit.max + " bytes" + reserved + "; pool " + usage + suffix);
    }

    /** Changes a tracked category's quota at run time and lets waiting callers try again. */
    void setQuota(Category category, long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("quota of '" + category + "' must not be negative: " + bytes);
        }
        if (!category.tracked) {
            throw new IllegalStateException("category '" + category + "' has no quota: give it one with "
                    + "PoolConfig.Builder.quota(name, bytes) (Long.MAX_VALUE for none yet) so its reserved bytes are tracked");
        }
        category.quota = bytes;
        limit.released();
    }
}
