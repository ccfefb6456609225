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
 * Two threads release, at once, allocations that a third thread made: both
 * releases are counted, none is lost.
 *
 * <p>The race: a thread releasing another thread's allocation counts it in
 * that thread's {@link ThreadCounters}, in a second array that the first such
 * release makes and publishes by a CAS ({@code compareAndExchangeRelease});
 * here both actors are that first release. If both installed an array of their
 * own, the counts added to the losing one would vanish. Then both count with
 * atomic adds on the same fields.
 *
 * <p>Result: {@code [releases counted, reserved bytes left]} once both are
 * done.
 */
@JCStressTest
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "Both releases were counted.")
@Outcome(expect = FORBIDDEN, desc = "A release was lost, or memory stayed behind.")
@State
public class ReleaseCountersTest {

    private final CountingChunkSource source = new CountingChunkSource();
    private final MemoryPool pool = TestPools.newPool(source, 0);
    private final Allocation[] made = TestPools.allocateOnSetupThread(pool, 1000, 2);

    /** Creates the state: a pool with two allocations of the setup thread. */
    public ReleaseCountersTest() {
    }

    /** Releases the first allocation. */
    @Actor
    public void releaseFirst() {
        pool.free(made[0]);
    }

    /** Releases the second allocation. */
    @Actor
    public void releaseSecond() {
        pool.free(made[1]);
    }

    /** Reads the counts once both are done, and checks that the chunk goes back. */
    @Arbiter
    public void settle(JJ_Result r) {
        ThreadCaches.Snapshot counts = TestPools.counters(pool);
        r.r1 = counts.totalReleases();
        r.r2 = TestPools.emptyAfterTrim(pool, source) ? counts.totalReserved() : -1;
    }
}
