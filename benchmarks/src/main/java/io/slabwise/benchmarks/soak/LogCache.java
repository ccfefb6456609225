package io.slabwise.benchmarks.soak;

import io.netty.buffer.ByteBuf;
import io.slabwise.MemoryLimitException;
import io.slabwise.netty.BufferEvacuation;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The soak's log cache: record batches in a sequential allocator, appended
 * with increasing offsets and evicted oldest first to stay within a byte
 * bound, read back by offset, and moved by compactions through the cache's
 * relocator. Every batch it holds is in its {@link Tally}.
 *
 * <pre>
 *  [ oldest ............................................ newest ]
 *    ^ evicted first (bound, or the pool's ceiling)        ^ append copies a batch here
 *  relocator (a compaction on any thread): tryLock; for each batch the evacuation contains: move, swap, release
 * </pre>
 *
 * <p>At the pool's ceiling ({@code tryAllocate} returns null) it evicts and
 * tries again, never waiting; with nothing left to evict the append is
 * refused. A refusal of the chunk source ({@link RefusingChunkSource.Refusal})
 * refuses the append, or leaves a batch in place when it comes up in a move.
 *
 * <p>One lock guards the batches and the tally; the relocator never waits for
 * it. {@link #lock()} lets the checker hold it while it reads the pool, so
 * that no compaction moves a batch meanwhile.
 */
final class LogCache {

    /** A cached batch; its buffer changes when a compaction moves it. */
    private static final class Batch {
        final long offset;
        final int stamp;
        ByteBuf buffer;

        Batch(long offset, int stamp, ByteBuf buffer) {
            this.offset = offset;
            this.stamp = stamp;
            this.buffer = buffer;
        }
    }

    private final SequentialByteBufAllocator allocator;
    private final long maxBytes;
    private final Tally tally;
    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Batch> batches = new ArrayDeque<>();
    private final Map<Long, Batch> byOffset = new HashMap<>();
    private long nextOffset;
    private long bytes;
    private final LongAdder ceilingRefusals = new LongAdder();
    private final LongAdder sourceRefusals = new LongAdder();
    private final LongAdder relocations = new LongAdder();
    private final LongAdder relocationsRefused = new LongAdder();

    /** A cache of at most {@code maxBytes} in the category of {@code allocator}, registered as its relocator. */
    LogCache(SlabwiseAllocator pool, SequentialByteBufAllocator allocator, long maxBytes) {
        this.allocator = allocator;
        this.maxBytes = maxBytes;
        this.tally = new Tally(allocator.category());
        pool.setRelocator(allocator.category(), this::relocate);
    }

    /** What the cache holds. */
    Tally tally() {
        return tally;
    }

    /**
     * Copies a batch of {@code size} bytes of {@code template}, stamped with
     * its offset, at the next offset.
     *
     * @return whether it was cached (false: refused at the ceiling with nothing to evict, or by the chunk source)
     */
    boolean append(int size, byte[] template) {
        lock.lock();
        try {
            while (bytes + size > maxBytes && !batches.isEmpty()) {
                evictOldest();
            }
            ByteBuf buffer = tryAllocate(size);
            while (buffer == null && !batches.isEmpty()) {
                evictOldest();
                buffer = tryAllocate(size);
            }
            if (buffer == null) {
                ceilingRefusals.increment();
                return false;
            }
            long offset = nextOffset++;
            int stamp = (int) offset;
            Contents.fill(buffer, template, stamp);
            Batch batch = new Batch(offset, stamp, buffer);
            batches.addLast(batch);
            byOffset.put(offset, batch);
            bytes += size;
            tally.add(size, 1);
            return true;
        } catch (RefusingChunkSource.Refusal refused) {
            sourceRefusals.increment();
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: a buffer, or null at a limit; a source refusal is thrown. */
    private ByteBuf tryAllocate(int size) {
        try {
            return allocator.tryAllocate(size);
        } catch (MemoryLimitException e) { // tryAllocate returns null at a limit; counted the same if it throws
            return null;
        }
    }

    /**
     * Reads the batch {@code back} offsets before the newest, if cached, and
     * checks its stamp.
     *
     * @return whether it was cached
     * @throws IllegalStateException when its bytes are not the ones written
     */
    boolean read(int back) {
        ByteBuf duplicate;
        int stamp;
        lock.lock();
        try {
            Batch batch = byOffset.get(nextOffset - 1 - back);
            if (batch == null) {
                return false;
            }
            duplicate = batch.buffer.retainedDuplicate();
            stamp = batch.stamp;
        } finally {
            lock.unlock();
        }
        try {
            Contents.check(duplicate, stamp, "log batch");
        } finally {
            duplicate.release();
        }
        return true;
    }

    /** Under the lock. */
    private void evictOldest() {
        Batch oldest = batches.pollFirst();
        byOffset.remove(oldest.offset);
        int size = oldest.buffer.readableBytes();
        bytes -= size;
        tally.remove(size, 1);
        oldest.buffer.release();
    }

    /** Moves the batches the evacuation contains while its budget lasts; never waits for the lock. */
    private void relocate(BufferEvacuation evacuation) {
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            relocationsRefused.increment();
            evacuation.refused();
            return;
        }
        try {
            for (Batch batch : batches) {
                if (!evacuation.budgetLeft()) {
                    return;
                }
                if (!evacuation.contains(batch.buffer)) {
                    continue;
                }
                ByteBuf moved;
                try {
                    moved = evacuation.move(batch.buffer);
                } catch (RefusingChunkSource.Refusal refused) {
                    sourceRefusals.increment();
                    moved = null;
                }
                if (moved != null) {
                    Contents.check(moved, batch.stamp, "moved log batch");
                    ByteBuf old = batch.buffer;
                    batch.buffer = moved;
                    old.release(); // the copy is the same size and one buffer: the tally does not change
                    relocations.increment();
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Holds the cache's lock: neither an append nor a compaction's move changes it until {@link #unlock()}. */
    void lock() {
        lock.lock();
    }

    /** Lets go of {@link #lock()}. */
    void unlock() {
        lock.unlock();
    }

    /** Bytes of batches cached. */
    long bytes() {
        lock.lock();
        try {
            return bytes;
        } finally {
            lock.unlock();
        }
    }

    /** Appends refused at the ceiling with nothing to evict. */
    long ceilingRefusals() {
        return ceilingRefusals.sum();
    }

    /** Appends and moves refused by the chunk source. */
    long sourceRefusals() {
        return sourceRefusals.sum();
    }

    /** Batches moved by compactions. */
    long relocations() {
        return relocations.sum();
    }

    /** Releases every batch and removes the relocator. */
    void close(SlabwiseAllocator pool) {
        pool.setRelocator(allocator.category(), null);
        lock.lock();
        try {
            while (!batches.isEmpty()) {
                evictOldest();
            }
        } finally {
            lock.unlock();
        }
    }
}
