package io.slabwise;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

/**
 * A caller waiting at a limit when the pool closes fails with
 * {@link IllegalStateException}, even when memory it could take is released
 * between the close and its next try.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WaiterAtCloseTest {

    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;

    /**
     * The head of a quota's line sleeps until a release; the pool closes and
     * a buffer of its category is released before it wakes (the limit's lock
     * held meanwhile, so both signals are in when it runs). Its retry finds
     * the quota with room and free space in a chunk a live buffer keeps: it
     * must still fail, as a caller waiting when the pool closed.
     */
    @Test
    void aWaiterWokenByCloseAndAReleaseFailsInsteadOfBeingServed() throws Exception {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).arenas(1)
                .limitPolicy(LimitPolicy.WAIT).waitTimeout(Duration.ofSeconds(50)).quota("q", 64 * KIB)
                .chunkSource(ChunkSource.direct()).build());
        Category q = pool.category("q");
        Allocation pin = new Allocation();
        pool.allocate(16 * KIB, pin); // keeps the chunk after close
        Allocation held = new Allocation();
        pool.allocate(q, 64 * KIB, held); // the whole quota
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation waited = new Allocation();
        Thread waiter = ConcurrentTasks.startCapturingFailure(() -> pool.allocate(q, 64 * KIB, waited), failure);
        ConcurrentTasks.awaitWaiting(pool, 1);

        ReentrantLock lock = limitLock(pool);
        lock.lock();
        try {
            pool.close();
            pool.free(held); // room in the quota and in the chunk the pin keeps
        } finally {
            lock.unlock();
        }
        waiter.join();
        assertFalse(waited.isLive(), "no allocation after close()");
        assertInstanceOf(IllegalStateException.class, failure.get());
        pool.free(pin);
        assertEquals(0, pool.committedBytes());
    }

    private static ReentrantLock limitLock(MemoryPool pool) throws ReflectiveOperationException {
        Field admissionField = MemoryPool.class.getDeclaredField("admission");
        admissionField.setAccessible(true);
        Field limitField = Admission.class.getDeclaredField("limit");
        limitField.setAccessible(true);
        Field lockField = MemoryLimit.class.getDeclaredField("lock");
        lockField.setAccessible(true);
        return (ReentrantLock) lockField.get(limitField.get(admissionField.get(pool)));
    }
}
