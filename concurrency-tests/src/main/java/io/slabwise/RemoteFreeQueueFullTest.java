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
 * Two threads hand frees to an arena whose {@link RemoteFreeQueue} has one
 * free slot left: one wins it, the other finds the queue full and frees under
 * the arena's lock, which drains the queue first, while the winner may not
 * have written its slot yet. Then the second thread offers again, into a slot
 * the drain may just have freed (the ring wraps). No free is lost or applied
 * twice.
 *
 * <p>The race: producers claim a slot by CAS and publish with a release
 * store; at their cached limit they read the consumer index (an acquire load)
 * to see whether the ring has room. The drain clears each slot it took before
 * it advances the consumer index with a release store, so a producer that
 * sees the new index also sees the slot cleared, and the clear cannot
 * overwrite the entry it then writes there.
 * A subpage element freed twice throws (its bitmap refuses it), which jcstress
 * reports as an error; a run freed twice leaves the bytes in use negative.
 *
 * <p>Result: {@code [bytes in use after a final drain, chunks the arena holds
 * after trimming]}.
 */
@JCStressTest
@Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "Every free was applied once, through the queue or under the lock.")
@Outcome(expect = FORBIDDEN, desc = "A free was lost, or a chunk stayed behind.")
@State
public class RemoteFreeQueueFullTest {

    private static final int SMALL = 64;
    private static final int RUN = 16 * 1024;

    private final Arena arena = TestPools.newArena();
    private final Allocation run = TestPools.allocate(arena, RUN);
    private final Allocation first = TestPools.allocate(arena, SMALL);
    private final Allocation second = TestPools.allocate(arena, SMALL);

    /** Creates the state: an arena of its own whose 4-slot queue already holds 3 frees. */
    public RemoteFreeQueueFullTest() {
        for (int i = 0; i < 3; i++) {
            Allocation queued = TestPools.allocate(arena, SMALL);
            arena.freeFromOtherArena(queued.chunk, queued.handle);
        }
    }

    /** Producer 1: frees a run, into the last slot or, if producer 2 took it, under the lock. */
    @Actor
    public void freeRun() {
        arena.freeFromOtherArena(run.chunk, run.handle);
    }

    /** Producer 2: frees two subpage elements, the second into a slot a drain may have freed. */
    @Actor
    public void freeTwoSmall() {
        arena.freeFromOtherArena(first.chunk, first.handle);
        arena.freeFromOtherArena(second.chunk, second.handle);
    }

    /** Drains what is left, then gives the arena's idle chunk back. */
    @Arbiter
    public void settle(II_Result r) {
        r.r1 = TestPools.drainAndCountUsed(arena);
        r.r2 = TestPools.trimAndCountChunks(arena);
    }
}
