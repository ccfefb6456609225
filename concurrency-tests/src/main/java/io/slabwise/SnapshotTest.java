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
 * A statistics snapshot read while memory is released by one thread and
 * reused by another's allocation: it never counts the memory twice, so
 * requested &lt;= reserved &lt;= the committed bytes it read, and nothing is
 * negative.
 *
 * <p>The race is the one {@link ThreadCounters} is built for. The setup thread
 * (none of the actors) allocates a whole chunk. Actor 1 releases it, which is
 * counted with atomic adds in a second array of the setup thread's counters,
 * made by this first release from another thread; the chunk stays in the
 * arena as its one idle chunk. Actor 1 then allocates a whole chunk again,
 * getting the same memory, and counts it as the owner with release stores,
 * then releases it as the owner. Actor 2 takes the snapshot that
 * {@link MemoryPool#stats()} is built on ({@code ThreadCaches.snapshot}),
 * which reads every thread's allocation side, then the committed bytes, then
 * every release side, with acquire loads and no lock that writers take. Since
 * each release is counted before its memory can be reused, a snapshot that
 * sees the new allocation also sees the release before it: the reserved bytes
 * never reach two chunks while one chunk is committed. (jcstress runs one
 * actor per CPU and CI has two, so the owner's and the other thread's counts
 * are made by actor 1 in turn, each of them concurrent with the reader.)
 *
 * <p>Result: {@code [reserved bytes in chunks, committed bytes in chunks (-1
 * when negative or not whole chunks), 1 if 0 <= requested <= reserved, 1 if
 * the pool was exact and empty at the end]}.
 */
@JCStressTest
@Outcome(id = "0, 1, 1, 1", expect = ACCEPTABLE, desc = "The snapshot saw no allocation live (or a release without its allocation).")
@Outcome(id = "1, 1, 1, 1", expect = ACCEPTABLE, desc = "The snapshot saw one allocation live.")
@Outcome(expect = FORBIDDEN, desc = "Memory counted twice, reserved above committed, requested above reserved, "
        + "or the pool not exact at the end.")
@State
public class SnapshotTest {

    /** A request that takes a whole chunk (the size class of 64,000 bytes is the 64 KiB chunk). */
    private static final int REQUEST = 64_000;

    private final CountingChunkSource source = new CountingChunkSource();
    private final MemoryPool pool = TestPools.newPool(source, 1);
    private final Allocation held = TestPools.allocateOnSetupThread(pool, REQUEST);
    private final Allocation reused = new Allocation();

    /** Creates the state: a pool whose one chunk is allocated whole by the setup thread. */
    public SnapshotTest() {
        if (held.reservedBytes() != TestPools.CHUNK_SIZE) {
            throw new IllegalStateException("the request must take a whole chunk: " + held);
        }
    }

    /** Releases the setup thread's chunk, then allocates and releases it again as its own. */
    @Actor
    public void releaseThenReuse() {
        pool.free(held);
        pool.allocate(REQUEST, reused);
        pool.free(reused);
    }

    /** Takes a snapshot while the other actor works. */
    @Actor
    public void read(IIII_Result r) {
        ThreadCaches.Snapshot counts = TestPools.counters(pool);
        long requested = counts.totalRequested();
        long reserved = counts.totalReserved();
        r.r1 = inChunks(reserved);
        r.r2 = inChunks(counts.committed);
        r.r3 = requested >= 0 && requested <= reserved ? 1 : 0;
    }

    /** Whole chunks in {@code bytes}; -1 for a negative figure or one that is not a whole number of chunks. */
    private static int inChunks(long bytes) {
        return bytes >= 0 && bytes % TestPools.CHUNK_SIZE == 0 ? (int) (bytes / TestPools.CHUNK_SIZE) : -1;
    }

    /** Checks that the pool is exact and empty once both actors are done, and that its chunk goes back. */
    @Arbiter
    public void settle(IIII_Result r) {
        r.r4 = TestPools.emptyAfterTrim(pool, source) ? 1 : 0;
    }
}
