package io.slabwise;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.function.LongConsumer;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

/**
 * Two producers offer to a {@link RemoteFreeQueue} while one of them then
 * drains it: no entry is lost or taken twice, an entry published before the
 * drain began is taken by it, and a published entry is left behind only
 * behind a slot that the other producer claimed and has not written yet.
 *
 * <p>The race: each producer claims a slot by CAS on the producer index and
 * publishes its entry with a release store; the drain reads slots with acquire
 * loads, stops at the first empty one, clears each slot it takes and advances
 * the consumer index with a release store. The 4-slot ring has been through
 * three offers and a drain in the setup, so the two offers here cross the end
 * of the ring: the second claim reaches the producers' cached limit (still the
 * one set at construction) and must read the consumer index to go on, into a
 * slot the setup's drain cleared. Producer A offers and then sets a volatile
 * flag; producer B offers, reads the flag, and drains.
 *
 * <p>jcstress runs one actor per CPU and CI has two, so the drain runs on
 * producer B's thread, after its own offer, concurrently with producer A's.
 * {@link RemoteFreeQueueFullTest} runs the queue inside an arena.
 *
 * <p>Result: {@code [A's flag seen, entries the drain took (1: A, 2: B),
 * entries a final drain took, offers refused or entries taken twice]}.
 */
@JCStressTest
@Outcome(id = "1, 3, 0, 0", expect = ACCEPTABLE, desc = "A was published before the drain began: the drain took both.")
@Outcome(id = "0, 3, 0, 0", expect = ACCEPTABLE, desc = "A was written before the drain, its flag set after the read: the drain took both.")
@Outcome(id = "0, 2, 1, 0", expect = ACCEPTABLE, desc = "A was not written when the drain passed its slot: the final drain took it.")
@Outcome(id = "0, 0, 3, 0", expect = ACCEPTABLE_INTERESTING,
        desc = "A's slot was claimed first and not yet written: the drain stopped there, leaving B, published by the "
                + "draining thread itself, for the final drain.")
@Outcome(expect = FORBIDDEN, desc = "A published entry was skipped, an entry was lost or taken twice, or an offer refused.")
@State
public class RemoteFreeQueueTest {

    private static final long A = 1;
    private static final long B = 2;

    private final RemoteFreeQueue queue = new RemoteFreeQueue(4);
    private volatile boolean aPublished;
    private int refused;

    /** Creates the state: a 4-slot queue whose indexes stand at 3, with its producers' cached limit at 4. */
    public RemoteFreeQueueTest() {
        for (long entry = 1; entry <= 3; entry++) {
            queue.offer(entry);
        }
        if (queue.drain(entry -> { }, 4) != 3) {
            throw new IllegalStateException("the setup's drain did not take its 3 entries");
        }
    }

    /** Producer A. */
    @Actor
    public void offerA() {
        if (queue.offer(A)) {
            aPublished = true;
        } else {
            refused++;
        }
    }

    /** Producer B: offers, reads A's flag, then drains as the arena's lock holder would. */
    @Actor
    public void offerBThenDrain(IIII_Result r) {
        if (!queue.offer(B)) {
            r.r4++;
        }
        r.r1 = aPublished ? 1 : 0;
        Taken taken = new Taken();
        queue.drain(taken, 4);
        r.r2 = taken.entries;
        r.r4 += taken.twice;
    }

    /** Drains what is left. */
    @Arbiter
    public void settle(IIII_Result r) {
        Taken taken = new Taken();
        queue.drain(taken, 4);
        r.r3 = taken.entries;
        r.r4 += refused + taken.twice + ((r.r2 & r.r3) != 0 ? 1 : 0);
    }

    /** The entries a drain handed over, as bits, and how many came twice. */
    private static final class Taken implements LongConsumer {
        int entries;
        int twice;

        @Override
        public void accept(long entry) {
            int bit = (int) entry;
            if ((entries & bit) != 0 || (bit != A && bit != B)) {
                twice++;
            }
            entries |= bit;
        }
    }
}
