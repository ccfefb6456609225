package io.slabwise;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * The last two slices of a retired sequential-allocator chunk are released by
 * two threads at once: exactly one of them recycles the chunk, which becomes
 * the allocator's spare, and it goes back to the pool exactly once.
 *
 * <p>The race: each release makes one atomic add to the chunk's packed state
 * word (bytes released in the high half, slices outstanding in the low half);
 * the release whose add brings the count to zero recycles the chunk. The
 * chunk was retired by {@link SequentialAllocator#trim()} in the setup, so no
 * open offset keeps it alive. Recycled twice, the chunk would be given back
 * twice, which the test's chunk source refuses with an exception (reported as
 * an error); never recycled, it would stay held.
 *
 * <p>Result: {@code [chunks held after both releases, spare chunks then,
 * 1 if a final trim gave it back and the pool was exact and empty]}.
 */
@JCStressTest
@Outcome(id = "1, 1, 1", expect = ACCEPTABLE, desc = "One release recycled the chunk as the spare; trim gave it back.")
@Outcome(expect = FORBIDDEN, desc = "The chunk was recycled twice or never.")
@State
public class SequentialReleaseTest {

    private final CountingChunkSource source = new CountingChunkSource();
    private final MemoryPool pool = TestPools.newPool(source, 0);
    private final SequentialAllocator slabs = pool.sequential("log", 1, 1024);
    private final Allocation first = new Allocation();
    private final Allocation second = new Allocation();

    /** Creates the state: two slices of a chunk that is then retired, so that only they keep it. */
    public SequentialReleaseTest() {
        slabs.allocate(1000, first);
        slabs.allocate(1000, second);
        if (slabs.trim() != 1) {
            throw new IllegalStateException("trim did not retire the open chunk");
        }
    }

    /** Releases the first slice. */
    @Actor
    public void releaseFirst() {
        pool.free(first);
    }

    /** Releases the second slice. */
    @Actor
    public void releaseSecond() {
        pool.free(second);
    }

    /** Checks the chunk became the spare, gives it back, and checks that nothing stayed behind. */
    @Arbiter
    public void settle(III_Result r) {
        SequentialStats stats = slabs.stats();
        r.r1 = stats.chunks();
        r.r2 = stats.spareChunks();
        r.r3 = slabs.trim() == 1 && slabs.stats().chunks() == 0 && TestPools.emptyAfterTrim(pool, source) ? 1 : 0;
    }
}
