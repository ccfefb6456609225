package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.SequentialByteBufAllocator;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * A broker's log cache: the most recent record batches of a partition, kept
 * for tail readers, bounded by bytes, evicting the oldest first. Batches are
 * copied into buffers of a {@link SequentialByteBufAllocator}, so memory
 * written together is freed together and whole chunks go back as the cache
 * moves on.
 *
 * <p>Thread-safe: one lock guards the cache (appends and reads are short; the
 * copy happens under it, which keeps the order of offsets and buffers the same).
 */
public final class LogCache implements AutoCloseable {

    private final SequentialByteBufAllocator allocator;
    private final long maxBytes;
    private final ArrayDeque<Entry> entries = new ArrayDeque<>();
    private final Map<Long, ByteBuf> byOffset = new HashMap<>();
    private long bytes;
    private long evictions;

    private record Entry(long offset, ByteBuf buffer) {
    }

    /** A cache of at most {@code maxBytes} bytes of batches. */
    public LogCache(SequentialByteBufAllocator allocator, long maxBytes) {
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be positive: " + maxBytes);
        }
        this.allocator = allocator;
        this.maxBytes = maxBytes;
    }

    /**
     * Appends a copy of {@code batch}'s readable bytes at {@code offset},
     * evicting the oldest batches until it fits. Offsets must increase.
     *
     * @return false when the batch alone is larger than the cache (it is not cached)
     */
    public synchronized boolean append(long offset, ByteBuf batch) {
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
        while (copy == null && !entries.isEmpty()) { // the memory ceiling said no: make room and retry
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

    /** The batch at {@code offset} as a retained duplicate the caller must release, or null when it is not cached. */
    public synchronized ByteBuf read(long offset) {
        ByteBuf buf = byOffset.get(offset);
        return buf == null ? null : buf.retainedDuplicate();
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

    /** Batches cached. */
    public synchronized int size() {
        return entries.size();
    }

    /** Batches evicted so far. */
    public synchronized long evictions() {
        return evictions;
    }

    /** The oldest cached offset, or -1 when empty. */
    public synchronized long oldestOffset() {
        return entries.isEmpty() ? -1 : entries.peekFirst().offset();
    }

    /** Releases every cached batch. */
    @Override
    public synchronized void close() {
        while (!entries.isEmpty()) {
            evictOldest();
        }
    }
}
