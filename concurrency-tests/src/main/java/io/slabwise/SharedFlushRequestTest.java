package io.slabwise;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;

/**
 * A flush asked of the cache that virtual threads share (by a trim, a
 * close, a caller waiting at the ceiling or a compaction) while a virtual
 * thread holds the cache's lock is never lost: once both are done, the
 * cache is empty.
 *
 * <p>The race: the holder, letting go of the lock ({@link SharedCache#unlockShared}),
 * answers a flush request it reads, and the asker ({@link SharedCache#flushShared})
 * flushes itself if it gets the lock, or sets the request. A holder that read
 * no request just before the asker set it, and let go of the lock just after
 * the asker found it taken, would leave the request to the cache's next
 * operation, which may never come (a pool closed, a scheduler that never
 * runs). So the asker sets the request first and then tries the lock until
 * it gets it or sees the request answered.
 *
 * <p>The cache holds a released allocation's memory from the setup thread
 * (the shared cache does not ask whether its caller is a virtual thread).
 * Result: the bytes the shared cache still holds after both actors.
 */
@JCStressTest
@Outcome(id = "0", expect = ACCEPTABLE, desc = "The flush was made: by the asker, or by the holder as it let go.")
@Outcome(expect = FORBIDDEN, desc = "The request was left pending and the cache still holds memory.")
@State
public class SharedFlushRequestTest {

    private static final int REQUESTED = 1000;

    private final MemoryPool pool = new MemoryPool(PoolConfig.builder()
            .chunkSource(new CountingChunkSource())
            .chunkSize(TestPools.CHUNK_SIZE)
            .arenas(1)
            .scheduler((task, period) -> () -> { })
            .build());
    private final SharedCache cache = TestPools.onSetupThread(() -> {
        SharedCache shared = pool.threadCaches.shared(0);
        Allocation a = new Allocation();
        shared.allocate(pool.defaultCategory(), REQUESTED, SizeClasses.indexOf(REQUESTED),
                pool.reservedSizeFor(REQUESTED), a);
        pool.free(a); // into the shared cache, under its lock
        return shared;
    });

    /** A virtual thread's short step under the shared cache's lock, when it gets the lock. */
    @Actor
    public void holder() {
        if (cache.lockShared()) {
            cache.unlockShared();
        }
    }

    /** Asks for the flush, as a trim or a close does. */
    @Actor
    public void asker() {
        cache.flushShared();
    }

    /** What the shared cache still holds. */
    @Arbiter
    public void settle(I_Result r) {
        r.r1 = (int) cache.cachedBytes();
    }
}
