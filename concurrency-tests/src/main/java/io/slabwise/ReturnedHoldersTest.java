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
 * Blank holders that other threads give back to the cache that made them
 * ({@link HolderStash#returnHolder}, a compare-and-set push) while its owner
 * takes them ({@link HolderStash#takeReturned}, the whole stack at once with
 * a get-and-set): no holder is lost or handed out twice, the owner sees what
 * it pushed itself, and a taken holder's link is cleared.
 *
 * <p>jcstress runs one actor per CPU and CI has two: a releasing thread
 * gives back holder A while the owner gives back holder B (as when the owner
 * releases on another cache's behalf, the push is the same) and then takes
 * two holders. The arbiter takes what is left.
 *
 * <p>Result: {@code [times A taken, times B taken, holders the owner took,
 * links left set]}.
 */
@JCStressTest
@Outcome(id = "1, 1, 2, 0", expect = ACCEPTABLE, desc = "A was pushed before the owner took: it took both.")
@Outcome(id = "1, 1, 1, 0", expect = ACCEPTABLE, desc = "A was pushed after the owner took B: the arbiter took A.")
@Outcome(expect = FORBIDDEN, desc = "A holder was lost or taken twice, the owner missed its own, or a link was left set.")
@State
public class ReturnedHoldersTest {

    private final MemoryPool pool = TestPools.newPool(new CountingChunkSource(), 1);
    private final ThreadCache cache = pool.threadCaches.current();
    private final Allocation a = new Allocation(true);
    private final Allocation b = new Allocation(true);
    private int aTaken;
    private int bTaken;
    private int linksSet;

    /** A thread that released a buffer of the cache's gives its holder back. */
    @Actor
    public void release() {
        cache.stash.returnHolder(a);
    }

    /** The owner: a holder comes back, then it takes two for its next allocations. */
    @Actor
    public void owner(IIII_Result r) {
        cache.stash.returnHolder(b);
        r.r3 = take() + take();
    }

    /** Takes what the owner left. */
    @Arbiter
    public void settle(IIII_Result r) {
        while (take() == 1) {
            // each holder counted once
        }
        r.r1 = aTaken;
        r.r2 = bTaken;
        r.r4 = linksSet;
    }

    private int take() {
        Allocation holder = cache.stash.takeReturned();
        if (holder == null) {
            return 0;
        }
        if (holder.nextReturned != null) {
            linksSet++;
        }
        if (holder == a) {
            aTaken++;
        } else if (holder == b) {
            bTaken++;
        }
        return 1;
    }
}
