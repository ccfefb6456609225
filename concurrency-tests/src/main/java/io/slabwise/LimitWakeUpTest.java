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
 * A caller lining up at the ceiling while memory is given back: either its
 * try finds the memory, or the release is counted after the caller read the
 * release count, so its wait returns at once or is signalled. Never both
 * missed, which would leave it asleep until the 50 ms safety net.
 *
 * <p>The race is a store-buffering one between {@link MemoryLimit}'s two
 * sides. The waiter (as {@code Admission} does at a limit) takes a ticket,
 * which raises the waiter count, reads {@link MemoryLimit#releaseCount()} and
 * tries to commit. The releaser gives the bytes back
 * ({@link MemoryLimit#uncommit}), and only then reads the waiter count in
 * {@link MemoryLimit#released()} to decide whether to count the release and
 * wake anyone. Read before the give-back, the waiter count could be 0 while
 * the waiter's try still saw the limit full.
 *
 * <p>The waiter does not block here: what it would wait for is whether the
 * release count moved past what it read, which the arbiter checks.
 *
 * <p>Result: {@code [the waiter's try succeeded, the release count moved past
 * what the waiter read]}.
 */
@JCStressTest
@Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "The memory was back before the try; nobody needed waking.")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "The try found the memory; the release also saw the waiter.")
@Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "The try came first; the release was counted for the waiter to see.")
@Outcome(id = "0, 0", expect = FORBIDDEN, desc = "Lost wake-up: the try failed and the release woke nobody.")
@State
public class LimitWakeUpTest {

    private final MemoryLimit limit = new MemoryLimit(TestPools.CHUNK_SIZE);
    private long ticket;
    private long seen;

    /** Creates the state: a limit of one chunk, fully committed. */
    public LimitWakeUpTest() {
        if (!limit.tryCommit(TestPools.CHUNK_SIZE)) {
            throw new IllegalStateException("a fresh limit refused its first chunk");
        }
    }

    /** Lines up at the ceiling (the first ticket: its turn at once), reads the release count, tries. */
    @Actor
    public void waiter(II_Result r) {
        ticket = limit.enqueue(limit.ceilingQueue);
        limit.retrying(true); // marks this thread only: the releaser's releases count whatever it does after
        seen = limit.releaseCount();
        r.r1 = limit.tryCommit(TestPools.CHUNK_SIZE) ? 1 : 0;
        limit.retrying(false);
    }

    /** Gives the chunk's bytes back, which wakes waiters if it sees any. */
    @Actor
    public void releaser() {
        limit.uncommit(TestPools.CHUNK_SIZE);
    }

    /** Says whether the waiter would find the release count changed, and takes it out of the queue. */
    @Arbiter
    public void settle(II_Result r) {
        r.r2 = limit.releaseCount() != seen ? 1 : 0;
        limit.dequeue(limit.ceilingQueue, ticket);
    }
}
