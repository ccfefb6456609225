package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.SequentialByteBufAllocator;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * A broker's log cache: the most recent record batches of one partition, kept
 * for tail readers, bounded by bytes, evicting the oldest first (FIFO).
 * Batches are copied into buffers of a {@link SequentialByteBufAllocator}, so
 * memory written together is freed together and whole chunks go back as the
 * cache moves on.
 *
 * <pre>
 *  offsets   [ oldest ........................................ newest ]
 *  append:                                      evict from here &lt;-- | --&gt; copy in here
 * </pre>
 *
 * <p>Every cached batch is held by exactly one reference of the cache; an
 * eviction releases it, so its memory is freed as soon as no reader holds a
 * duplicate of it. The cache's {@link #bytes()} therefore equal the requested
 * bytes of its allocator's category while no reader holds an evicted batch.
 *
 * <p>Thread-safe: one lock (the cache's monitor) guards it. Appends and reads
 * are short; the copy happens under the lock, which keeps offsets and buffers
 * in the same order.
 */
public final class LogCache implements AutoCloseable {

    private final SequentialByteBufAllocator allocator;
    private final long maxBytes;
    private final ArrayDeque<Entry> entries = new ArrayDeque<>();
    private final Map<Long, ByteBuf> byOffset = new HashMap<>();
    private long bytes;
    private long hits;
    private long misses;
    private long evictions;
    private boolean closed;

    private record Entry(long offset, ByteBuf buffer) {
    }

    /**
     * A cache of at most {@code maxBytes} bytes of batches.
     *
     * @throws IllegalArgumentException when {@code maxBytes} is not positive
     */
    public LogCache(SequentialByteBufAllocator allocator, long maxBytes) {
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be positive: " + maxBytes);
        }
        this.allocator = allocator;
        this.maxBytes = maxBytes;
    }

    /**
     * Appends a copy of {@code batch}'s readable bytes at {@code offset},
     * evicting the oldest batches until it fits; {@code batch} itself is not
     * changed. Offsets must increase.
     *
     * @return false when the batch is empty or alone larger than the cache (it is not cached)
     * @throws IllegalArgumentException when {@code offset} is not after the newest cached offset
     * @throws IllegalStateException    when the cache is closed
     */
    public synchronized boolean append(long offset, ByteBuf batch) {
        if (closed) {
            throw new IllegalStateException("the log cache is closed");
        }
        int size = batch.readableBytes();
        if (size > maxBytes || size == 0) {
            return false;
        }
        if (!entries.isEmpty() && offset <= entries.peekLast().offset()) {
            throw new IllegalArgumentException("offset " + offset + " is not after " + entries.peekLast().offset());
        }
        while (bytes + size > maxBytes) {
            evictOldest();
        }
        ByteBuf copy = allocator.allocate(size);
        while (copy == null && !entries.isEmpty()) { // refused at a limit under RETURN_NULL: make room and retry
            evictOldest();
            copy = allocator.allocate(size);
        }
        if (copy == null) {
            return false;
        }
        copy.writeBytes(batch, batch.readerIndex(), size);
        entries.addLast(new Entry(offset, copy));
        byOffset.put(offset, copy);
        bytes += size;
        return true;
    }

    /**
     * The batch at {@code offset} as a retained duplicate the caller must
     * release, or null when it is not cached (counted as a miss).
     */
    public synchronized ByteBuf read(long offset) {
        ByteBuf buf = byOffset.get(offset);
        if (buf == null) {
            misses++;
            return null;
        }
        hits++;
        return buf.retainedDuplicate();
    }

    private void evictOldest() {
        Entry oldest = entries.pollFirst();
        byOffset.remove(oldest.offset());
        bytes -= oldest.buffer().readableBytes();
        evictions++;
        oldest.buffer().release();
    }

    /** Bytes of batches cached. */
    public synchronized long bytes() {
        return bytes;
    }

    /** The bound on {@link #bytes()}. */
    public long maxBytes() {
        return maxBytes;
    }

    /** Batches cached. */
    public synchronized int size() {
        return entries.size();
    }

    /** Reads that found their batch. */
    public synchronized long hits() {
        return hits;
    }

    /** Reads that did not. */
    public synchronized long misses() {
        return misses;
    }

    /** Batches evicted so far (by appends and by {@link #close()}). */
    public synchronized long evictions() {
        return evictions;
    }

    /** The oldest cached offset, or -1 when empty. */
    public synchronized long oldestOffset() {
        return entries.isEmpty() ? -1 : entries.peekFirst().offset();
    }

    /** The newest cached offset, or -1 when empty. */
    public synchronized long newestOffset() {
        return entries.isEmpty() ? -1 : entries.peekLast().offset();
    }

    /** Releases every cached batch; later appends fail, reads miss. Closing twice does nothing. */
    @Override
    public synchronized void close() {
        closed = true;
        while (!entries.isEmpty()) {
            evictOldest();
        }
    }
}
