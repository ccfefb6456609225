package io.slabwise;

import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * For the pressure tests: a FIFO cache of pool allocations in one category
 * whose {@link Shrinker} drops the oldest entries, under a lock it only ever
 * tries. It counts what it was asked and keeps the requested bytes it holds,
 * so a test can compare them with the pool's accounting. It is also the
 * category's {@link Relocator} when registered as one: it moves the entries
 * a compaction asks for, in place in its order.
 */
class ShrinkingCache implements Shrinker, Relocator {

    final MemoryPool pool;
    final Allocator allocator;
    final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Allocation> entries = new ArrayDeque<>();
    /** Requested bytes of the entries held; read without the lock by {@link #reclaimable()}. */
    private final AtomicLong bytes = new AtomicLong();
    /** Entries the shrinker dropped, and the largest single request it got. */
    final AtomicLong dropped = new AtomicLong();
    final AtomicLong largestAsk = new AtomicLong();
    final AtomicLong asked = new AtomicLong();

    ShrinkingCache(MemoryPool pool, Allocator allocator) {
        this.pool = pool;
        this.allocator = allocator;
    }

    /** Adds an entry of {@code size} bytes; false when the allocator refused it (RETURN_NULL). */
    boolean add(int size) {
        Allocation a = new Allocation();
        if (!allocator.allocate(size, a)) {
            return false;
        }
        lock.lock();
        try {
            entries.addLast(a);
            bytes.addAndGet(a.requestedBytes());
        } finally {
            lock.unlock();
        }
        return true;
    }

    /** Requested bytes of the entries held. */
    long bytes() {
        return bytes.get();
    }

    int size() {
        lock.lock();
        try {
            return entries.size();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long reclaimable() {
        return bytes.get();
    }

    @Override
    public long shrink(long want) {
        asked.addAndGet(want);
        largestAsk.accumulateAndGet(want, Math::max);
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            return BUSY;
        }
        try {
            return dropOldest(want);
        } finally {
            lock.unlock();
        }
    }

    /** Drops the oldest entries until they held {@code want} bytes or none is left; the lock is held. */
    long dropOldest(long want) {
        long freed = 0;
        while (freed < want && !entries.isEmpty()) {
            Allocation a = entries.removeFirst();
            freed += a.requestedBytes();
            bytes.addAndGet(-a.requestedBytes());
            pool.free(a);
            dropped.incrementAndGet();
        }
        return freed;
    }

    /** Entries moved by compactions. */
    final AtomicLong moved = new AtomicLong();

    @Override
    public void relocate(Evacuation evacuation) {
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            evacuation.refused();
            return;
        }
        try {
            int n = entries.size();
            for (int i = 0; i < n; i++) {
                Allocation old = entries.removeFirst();
                Allocation kept = old;
                if (evacuation.budgetLeft() && evacuation.contains(old)) {
                    Allocation fresh = new Allocation();
                    if (evacuation.moveInto(old, fresh)) {
                        pool.free(old);
                        kept = fresh;
                        moved.incrementAndGet();
                    }
                }
                entries.addLast(kept);
            }
        } finally {
            lock.unlock();
        }
    }

    /** A shrinker that reports this cache's bytes as reclaimable and answers {@code shrink} with {@code answer}. */
    Shrinker answering(java.util.function.LongUnaryOperator answer) {
        return new Shrinker() {
            @Override
            public long reclaimable() {
                return ShrinkingCache.this.reclaimable();
            }

            @Override
            public long shrink(long bytes) {
                return answer.applyAsLong(bytes);
            }
        };
    }

    /** Frees every entry. */
    void clear() {
        lock.lock();
        try {
            dropOldest(Long.MAX_VALUE);
        } finally {
            lock.unlock();
        }
    }
}
