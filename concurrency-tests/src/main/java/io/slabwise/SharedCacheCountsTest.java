package io.slabwise;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;

/**
 * The counts of the cache virtual threads share, made by two threads at
 * once the way its allocations and releases make them: a thread that takes
 * the cache's lock counts with plain stores into the cache's own array, and
 * one that finds the lock taken counts with atomic adds into the other array.
 * No count may be lost: when the lock passes from one thread to the other
 * (a compare-and-set to take it, a release store to give it back) the second
 * must see the first one's plain counts before adding to them, and a count
 * made past a taken lock must not touch the array the holder writes.
 *
 * <p>The counting is {@link SharedCache#countAllocation}'s, as a shared
 * cache's dedicated regions and carved slices are counted.
 * Each actor counts two allocations, of 1 and 2 bytes (actor 1) and of 4
 * and 8 bytes (actor 2), so every interleaving of lock, fallback and handoff
 * occurs. Result: {@code [requested bytes counted, allocations counted]}.
 */
@JCStressTest
@Outcome(id = "15, 4", expect = ACCEPTABLE, desc = "Every count landed once.")
@Outcome(expect = FORBIDDEN, desc = "A count was lost or made twice.")
@State
public class SharedCacheCountsTest {

    private final MemoryPool pool = TestPools.newPool(new CountingChunkSource(), 1);
    private final SharedCache shared = pool.threadCaches.shared(0);

    /** Counts 1 and 2 bytes. */
    @Actor
    public void first() {
        count(1);
        count(2);
    }

    /** Counts 4 and 8 bytes. */
    @Actor
    public void second() {
        count(4);
        count(8);
    }

    /** Counts as a virtual thread's dedicated region is counted: under the lock if free, else past it. */
    private void count(int bytes) {
        shared.countAllocation(pool.defaultCategory(), bytes, bytes, false, new Allocation());
    }

    /** Adds up both arrays of the shared counters once the actors are done. */
    @Arbiter
    public void settle(JJ_Result r) {
        long[] all = new long[ThreadCounters.COUNTERS];
        shared.counters.addAll(all);
        r.r1 = all[ThreadCounters.REQUESTED_IN];
        r.r2 = all[ThreadCounters.ALLOCATIONS];
    }
}
