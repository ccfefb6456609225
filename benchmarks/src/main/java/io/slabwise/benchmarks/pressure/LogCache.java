package io.slabwise.benchmarks.pressure;

import io.netty.buffer.ByteBuf;
import io.slabwise.Shrinker;

import java.util.ArrayDeque;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;

/**
 * A log cache: record batches appended at increasing offsets into direct
 * buffers, evicted oldest first (FIFO) once the cache holds more than its
 * byte budget or the allocator refuses a buffer; a read of an offset is a hit
 * while its record is still cached.
 *
 * <p>As a {@link Shrinker} it drops its oldest records for the pool. It keeps
 * the rules of one: {@code reclaimable()} reads a counter, {@code shrink}
 * takes the lock with {@code tryLock} and answers {@link Shrinker#BUSY} when it
 * is busy or held by the calling thread (an append that allocates at the
 * ceiling), and releases what it drops before it returns. Every byte it drops
 * for the pool is counted in {@link #shedBytes()}.
 */
final class LogCache implements Shrinker {

    /** One cached record batch. */
    private static final class Record {
        final long offset;
        final ByteBuf buffer;
        final int size;

        Record(long offset, ByteBuf buffer, int size) {
            this.offset = offset;
            this.buffer = buffer;
            this.size = size;
        }
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Record> records = new ArrayDeque<>();
    private final IntFunction<ByteBuf> allocator;
    private final long budget;
    private long nextOffset;
    private volatile long bytes;
    private long shed;
    private long refused;

    /**
     * @param allocator a buffer of the given size, or null when the allocator refuses at a limit
     * @param budget    the most bytes of records the cache keeps
     */
    LogCache(IntFunction<ByteBuf> allocator, long budget) {
        this.allocator = allocator;
        this.budget = budget;
    }

    /** Appends a record of {@code size} bytes at the next offset, evicting the oldest to make room. */
    void append(int size) {
        lock.lock();
        try {
            ByteBuf buffer = allocator.apply(size);
            while (buffer == null && !records.isEmpty()) {
                dropOldest();
                buffer = allocator.apply(size);
            }
            long offset = nextOffset++;
            if (buffer == null) {
                refused++; // not even an empty cache could take it: the offset is never cached
                return;
            }
            buffer.writeLong(offset);
            records.addLast(new Record(offset, buffer, size));
            bytes += size;
            while (bytes > budget) {
                dropOldest();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Reads the record {@code lag} offsets behind the next one (lag 1: the
     * newest): whether it was still cached. Offsets are cached densely from the
     * oldest cached one to the newest (an append refused even by an empty cache
     * leaves a gap that this counts as a hit; the run reports how many there
     * were).
     */
    boolean read(long lag) {
        lock.lock();
        try {
            Record oldest = records.peekFirst();
            return oldest != null && nextOffset - lag >= oldest.offset;
        } finally {
            lock.unlock();
        }
    }

    /** The offsets appended so far. */
    long appended() {
        return nextOffset;
    }

    private long dropOldest() {
        Record r = records.pollFirst();
        r.buffer.release();
        bytes -= r.size;
        return r.size;
    }

    /** Bytes of records cached. */
    long bytes() {
        return bytes;
    }

    /** Bytes dropped at the pool's request. */
    long shedBytes() {
        return shed;
    }

    /** Appends no allocation could take even with the cache empty. */
    long refused() {
        return refused;
    }

    @Override
    public long reclaimable() {
        return bytes;
    }

    @Override
    public long shrink(long ask) {
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            return BUSY;
        }
        try {
            long freed = 0;
            while (freed < ask && !records.isEmpty()) {
                freed += dropOldest();
            }
            shed += freed;
            return freed;
        } finally {
            lock.unlock();
        }
    }

    /** Releases every record. */
    void clear() {
        lock.lock();
        try {
            while (!records.isEmpty()) {
                dropOldest();
            }
        } finally {
            lock.unlock();
        }
    }
}
