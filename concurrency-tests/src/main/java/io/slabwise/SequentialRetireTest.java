package io.slabwise;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * The last slices of a sequential allocator's chunk are released while
 * {@link SequentialAllocator#trim()} retires that chunk: the chunk is recycled
 * exactly once, by whichever of them ends its life, and goes back to the pool
 * exactly once.
 *
 * <p>The race is on the chunk's packed state word: each release adds its bytes
 * and takes one from the count of slices outstanding, and the retirement
 * replaces the open offset by the number of slices carved, all with atomic
 * adds; the one whose add brings the count to zero recycles the chunk. The
 * recycled chunk becomes the allocator's spare by a CAS, which races with
 * trim's own hand-back of the spare ({@code getAndSet}). A chunk recycled
 * twice is given back twice, which the test's chunk source refuses with an
 * exception (reported as an error); one never recycled stays held.
 *
 * <p>jcstress runs one actor per CPU and CI has two, so one actor releases both
 * slices in turn, racing the other actor's trim; {@link SequentialReleaseTest}
 * races two releases against each other.
 *
 * <p>Result: {@code [what the actor's trim returned (1: retired; 2: retired
 * and the spare given back), chunks held after both actors, what a final trim
 * returned, 1 if the pool was exact and empty at the end]}.
 */
@JCStressTest
@Outcome(id = "2, 0, 0, 1", expect = ACCEPTABLE,
        desc = "The slices were gone when trim retired the chunk: it was recycled within trim and given back by it.")
@Outcome(id = "1, 1, 1, 1", expect = ACCEPTABLE,
        desc = "A slice outlived the retirement: its release recycled the chunk as the spare; the final trim gave it back.")
@Outcome(expect = FORBIDDEN, desc = "The chunk was recycled twice, never, or went back to the pool a wrong number of times.")
@State
public class SequentialRetireTest {

    private final CountingChunkSource source = new CountingChunkSource();
    private final MemoryPool pool = TestPools.newPool(source, 0);
    private final SequentialAllocator slabs = pool.sequential("log", 1, 1024);
    private final Allocation first = new Allocation();
    private final Allocation second = new Allocation();

    /** Creates the state: two slices carved from the allocator's one open chunk. */
    public SequentialRetireTest() {
        slabs.allocate(1000, first);
        slabs.allocate(1000, second);
    }

    /** Releases both slices, the last of which may end the chunk's life. */
    @Actor
    public void releaseBoth() {
        pool.free(first);
        pool.free(second);
    }

    /** Retires the open chunk and gives the spare back, if there is one yet. */
    @Actor
    public void trim(IIII_Result r) {
        r.r1 = slabs.trim();
    }

    /** Gives back what is left and checks that nothing stayed behind. */
    @Arbiter
    public void settle(IIII_Result r) {
        r.r2 = slabs.stats().chunks();
        r.r3 = slabs.trim();
        r.r4 = slabs.stats().chunks() == 0 && TestPools.emptyAfterTrim(pool, source) ? 1 : 0;
    }
}
