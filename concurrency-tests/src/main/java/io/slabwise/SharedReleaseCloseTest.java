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
 * An allocation of the cache that virtual threads share is released while
 * another thread closes the pool: every chunk goes back to the chunk source
 * whichever comes first, and none stays behind in the shared cache's stacks.
 *
 * <p>The race: the release checks that the pool is open and caches the
 * memory under the shared cache's try-lock ({@link SharedCache#release}),
 * and {@code close()} sets the closed flag, then flushes the shared cache if
 * its lock is free (or asks for a flush if not) and gives back the empty
 * chunks. A release that checked before the close and cached after the
 * close's flush would leave its chunk in the stacks of a closed pool; the
 * release therefore reads the flag again once it has let go of the lock, and
 * a release that finds the pool closed reclaims as the close did: it
 * flushes the shared caches (free by then, unless another thread is in one)
 * and gives back every empty chunk. That reclaim covers for the check:
 * with the check under the lock removed this test still passes; with the
 * reclaim of a release into a closed pool removed it fails, in the samples
 * where the close comes first.
 *
 * <p>The allocation is made through the shared cache on the setup thread
 * (which is no virtual thread, but the cache does not ask), so the release
 * takes the shared path from either actor's thread, and the stacks hold the
 * rest of the batch the allocation's refill took. Result: {@code [chunks
 * still held by the chunk source after both actors, 1 if the pool's counters
 * were exact]}.
 */
@JCStressTest
@Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "Everything went back: released before, during or after the close.")
@Outcome(expect = FORBIDDEN, desc = "A chunk stayed in a closed pool, or the counts were wrong.")
@State
public class SharedReleaseCloseTest {

    static {
        TestPools.quietCloseWarnings(); // a close with a live buffer warns, once per sample when the close wins
    }

    private static final int REQUESTED = 1000;

    private final CountingChunkSource source = new CountingChunkSource();
    private final MemoryPool pool = new MemoryPool(PoolConfig.builder()
            .chunkSource(source)
            .chunkSize(TestPools.CHUNK_SIZE)
            .arenas(1)
            .scheduler((task, period) -> () -> { })
            .build());
    private final Allocation allocation = TestPools.onSetupThread(() -> {
        Allocation a = new Allocation();
        pool.threadCaches.shared(0).allocate(pool.defaultCategory(), REQUESTED, SizeClasses.indexOf(REQUESTED),
                pool.reservedSizeFor(REQUESTED), a);
        return a;
    });

    /** Releases the shared cache's allocation: into its stacks, under its lock, while the pool is open. */
    @Actor
    public void release() {
        pool.free(allocation);
    }

    /** Closes the pool: the shared cache is flushed and empty chunks go back; later releases go straight back. */
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
