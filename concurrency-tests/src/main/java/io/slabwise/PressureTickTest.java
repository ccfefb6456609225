package io.slabwise;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.ArrayDeque;
import java.util.concurrent.locks.ReentrantLock;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * A background pressure tick races another tick followed by an allocation
 * at the ceiling, over one log cache that fills the pool: the ticks' episode state is guarded by a
 * compare-and-set ({@code Pressure.ticking}), not a lock, and the allocation
 * asks the same shrinker inline.
 *
 * <p>What must hold whatever the interleaving: at most one episode begins
 * (two ticks at once never both count a crossing and both ask for the excess);
 * the shrinker is never asked for more than the episode's excess plus what
 * one allocation at the ceiling asks (a chunk); and the pool's requested
 * bytes equal the cache's plus the allocation's. The allocation is served,
 * unless it met the shrinker busy (a tick holding the cache's lock) and the
 * memory the tick freed had not come back yet when it tried once more: then
 * its policy refuses it, as the rule "never wait for a busy shrinker" says.
 * Result: {@code [allocation served, high-watermark crossings, 1 if the asks
 * stayed within bounds and the counts were exact]}.
 */
@JCStressTest
@Outcome(id = {"1, 0, 1", "1, 1, 1"}, expect = ACCEPTABLE, desc = "Served; at most one episode; asks bounded; exact counts.")
@Outcome(id = {"0, 0, 1", "0, 1, 1"}, expect = ACCEPTABLE_INTERESTING,
        desc = "Refused: the shrinker was busy in a tick and nothing had come back yet.")
@Outcome(expect = FORBIDDEN, desc = "Two episodes at once, asks past the bounds, or wrong counts.")
@State
public class PressureTickTest {

    static {
        TestPools.quietCloseWarnings();
    }

    private static final int ENTRY = 4096;
    private static final long CEILING = 16L * TestPools.CHUNK_SIZE;

    private Runnable tick;
    private final MemoryPool pool = new MemoryPool(PoolConfig.builder()
            .chunkSource(new CountingChunkSource())
            .chunkSize(TestPools.CHUNK_SIZE)
            .arenas(1)
            .maxMemory(CEILING)
            .limitPolicy(LimitPolicy.FAIL)
            .categoryPolicy("log_cache", LimitPolicy.RETURN_NULL)
            .scheduler((task, period) -> {
                if (period.equals(PressureConfig.defaults().checkPeriod())) {
                    tick = task; // not the decay
                }
                return () -> { };
            })
            .build());
    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Allocation> entries = new ArrayDeque<>();
    private long cached;
    private long asked;
    private final long excess;
    private final Allocation network = new Allocation();
    private int served;

    public PressureTickTest() {
        SequentialAllocator log = pool.sequential("log_cache");
        while (true) {
            Allocation a = new Allocation();
            if (!log.allocate(ENTRY, a)) {
                break;
            }
            entries.add(a);
            cached += ENTRY;
        }
        excess = pool.committedBytes() - (long) (CEILING * pool.config().pressure().lowWatermark());
        pool.setShrinker("log_cache", new Shrinker() {
            @Override
            public long reclaimable() {
                return ENTRY * (long) entries.size(); // a racy estimate is allowed
            }

            @Override
            public long shrink(long bytes) {
                if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
                    return BUSY;
                }
                try {
                    asked += bytes;
                    long freed = 0;
                    while (freed < bytes && !entries.isEmpty()) {
                        pool.free(entries.removeFirst());
                        freed += ENTRY;
                    }
                    cached -= freed;
                    return freed;
                } finally {
                    lock.unlock();
                }
            }
        });
    }

    @Actor
    public void backgroundTick() {
        tick.run();
    }

    @Actor
    public void anotherTickThenNetworkAtTheCeiling() {
        tick.run();
        try {
            pool.allocator("network").allocate(TestPools.CHUNK_SIZE, network);
            served = 1;
        } catch (MemoryLimitException refused) {
            served = 0;
        }
    }

    @Arbiter
    public void settle(III_Result r) {
        PressureStats stats = pool.pressureStats();
        r.r1 = served;
        r.r2 = (int) stats.highWatermarkCrossings();
        long requested = pool.stats().requestedBytes();
        boolean bounded;
        lock.lock();
        try {
            // the episode asks for its excess at most (plus a byte of rounding), the allocation for a chunk per round
            // while rounds free something: it is served after its first round here, one chunk frees a chunk
            bounded = asked <= excess + 1 + 2L * TestPools.CHUNK_SIZE;
            bounded &= requested == cached + (served == 1 ? TestPools.CHUNK_SIZE : 0);
        } finally {
            lock.unlock();
        }
        r.r3 = bounded ? 1 : 0;
        if (served == 1) {
            pool.free(network);
        }
        entries.forEach(pool::free);
        pool.close();
    }
}
