package io.slabwise;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * A dedicated region is released by a thread that did not allocate it while
 * another thread closes the pool: the region goes back to the chunk source
 * whichever comes first, never left in the pool's recent cell (or idle list)
 * after {@code close()} emptied them.
 *
 * <p>The race: {@link DedicatedRegions#giveBack} fills the recent cell with
 * one compare-and-set, and {@code close()} sets the closed flag, then takes
 * the cell. A release that read the flag as open before the close and filled
 * the cell after the close had taken it would park the region for good; the
 * release therefore reads the flag again after filling the cell.
 *
 * <p>The window between the release's first read of the flag and its
 * compare-and-set is a few instructions against the close's full
 * statistics: with the second read removed, 145,000 samples did not hit it,
 * so this test shows that a release before, during or after the close leaves
 * nothing behind, and the second read is there by construction. It does
 * catch a close that leaves the cell full.
 *
 * <p>The region is allocated on the setup thread, so neither actor's own
 * slot can take it. Result: {@code [regions still held by the chunk source
 * after both actors, 1 if the pool's counters were exact]}.
 */
@JCStressTest
@Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "The region went back: released before or after the close.")
@Outcome(expect = FORBIDDEN, desc = "The region stayed parked in a closed pool, or the counts were wrong.")
@State
public class DedicatedCloseTest {

    static {
        TestPools.quietCloseWarnings(); // a close with a live buffer warns, once per sample when the close wins
    }

    /** A 1 MiB chunk, so that 200 KiB is above the dedicated threshold (128 KiB) and small enough to park. */
    private static final int CHUNK = 1024 * 1024;

    private final CountingChunkSource source = new CountingChunkSource();
    private final MemoryPool pool = new MemoryPool(PoolConfig.builder()
            .chunkSource(source)
            .chunkSize(CHUNK)
            .arenas(1)
            .maxCachedSize(0)
            .scheduler((task, period) -> () -> { })
            .build());
    private final Allocation region = TestPools.allocateOnSetupThread(pool, 200 * 1024);

    /** Releases the region from a thread other than its allocator's: to the recent cell, if the pool is open. */
    @Actor
    public void release() {
        pool.free(region);
    }

    /** Closes the pool: the cell and the idle list are emptied, and later releases go straight back. */
    @Actor
    public void close() {
        pool.close();
    }

    /** Counts what the chunk source still holds, and checks the pool's counters. */
    @Arbiter
    public void settle(II_Result r) {
        r.r1 = source.outstanding();
        r.r2 = TestPools.exactWithNothingLive(pool);
    }
}
