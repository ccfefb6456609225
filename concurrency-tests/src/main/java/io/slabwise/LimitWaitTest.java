package io.slabwise;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * A caller waiting at the ceiling, for real, while memory is given back: it
 * gets the memory, and its waits end because the release woke it, not because
 * the 50 ms safety net of {@link MemoryLimit#awaitRelease} ran out.
 *
 * <p>The race: the waiter reads the release count, fails its try, and calls
 * {@code awaitRelease(seen, deadline)}, which under the limit's lock sleeps
 * only if the count still equals what it read. The releaser gives the bytes
 * back, then, seeing a waiter, bumps the count and signals under the same
 * lock. Whichever comes first, the waiter must not sleep through the release.
 * The waiter loops as {@code Admission} does, until it gets the memory or a
 * 2-second deadline passes.
 *
 * <p>The limit runs on the system clock, through a {@link Parking} that
 * counts the sleeps that ran out at their deadline (the safety net) instead
 * of ending on a signal: how a wait ended is observed, not timed.
 * jcstress has no mode for long blocking, and a thread descheduled for the
 * whole safety net also runs into it: a wait that ends on the safety net is
 * reported as interesting, not as a failure. A lost wake-up shows there as a
 * steady count; a healthy run has none, or a handful from descheduled
 * threads. Not getting the memory at all is a failure.
 * {@link LimitWakeUpTest} checks the same hand-off without any clock.
 *
 * <p>Result: {@code [the waiter got the memory, waits it made, waits that ran
 * into the safety net]}.
 */
@JCStressTest
@Outcome(id = "1, 0, 0", expect = ACCEPTABLE, desc = "The memory was back before the first try.")
@Outcome(id = "1, [1-9][0-9]*, 0", expect = ACCEPTABLE, desc = "The waiter waited and was woken by the release.")
@Outcome(id = "1, [1-9][0-9]*, [1-9][0-9]*", expect = ACCEPTABLE_INTERESTING,
        desc = "A sleep ran out on the 50 ms safety net: a lost wake-up, or a thread descheduled for that long.")
@Outcome(expect = FORBIDDEN, desc = "The waiter did not get the memory within 2 seconds.")
@State
public class LimitWaitTest {

    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final SleepCountingClock clock = new SleepCountingClock();
    private final MemoryLimit limit = new MemoryLimit(TestPools.CHUNK_SIZE, clock);
    private long ticket;

    /**
     * The system clock, parking as the pool does, and counting the sleeps
     * that ran out at their deadline rather than ending on a signal. Only
     * the waiter parks, so only the waiter writes the count.
     */
    private static final class SleepCountingClock implements Ticker, Parking {
        private final Ticker system = Ticker.system();
        private final Parking parking = Parking.on(system);
        int ranOut;

        @Override
        public long read() {
            return system.read();
        }

        @Override
        public void parkUntil(Lock lock, Condition condition, long deadline) throws InterruptedException {
            parking.parkUntil(lock, condition, deadline);
            if (deadline - system.read() <= 0) {
                ranOut++;
            }
        }
    }

    /** Creates the state: a limit of one chunk, fully committed. */
    public LimitWaitTest() {
        if (!limit.tryCommit(TestPools.CHUNK_SIZE)) {
            throw new IllegalStateException("a fresh limit refused its first chunk");
        }
    }

    /** Lines up at the ceiling and retries after each release until it gets the chunk or the deadline passes. */
    @Actor
    public void waiter(III_Result r) {
        long deadline = clock.read() + DEADLINE_NANOS;
        ticket = limit.enqueue(limit.ceilingQueue);
        limit.retrying(true);
        int waits = 0;
        try {
            while (true) {
                long seen = limit.releaseCount();
                if (limit.tryCommit(TestPools.CHUNK_SIZE)) {
                    r.r1 = 1;
                    break;
                }
                boolean beforeDeadline = limit.awaitRelease(seen, deadline);
                waits++;
                if (!beforeDeadline) {
                    break;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            limit.retrying(false);
        }
        r.r2 = waits;
        r.r3 = clock.ranOut;
    }

    /** Gives the chunk's bytes back, which wakes the waiter if it sees it. */
    @Actor
    public void releaser() {
        limit.uncommit(TestPools.CHUNK_SIZE);
    }

    /** Takes the waiter out of the queue. */
    @Arbiter
    public void settle() {
        limit.dequeue(limit.ceilingQueue, ticket);
    }
}
