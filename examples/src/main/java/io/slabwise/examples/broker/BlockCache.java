package io.slabwise.examples.broker;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.BlockByteBufAllocator;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * A broker's block cache: blocks of segments read from object storage
 * (typically 64 KiB to 8 MiB), bounded by bytes, evicting the least recently
 * used (LRU). Blocks live in composites of fixed-size blocks from a
 * {@link BlockByteBufAllocator}, so the mix of sizes and lifetimes does not
 * fragment the memory behind it.
 *
 * <pre>
 *  access order  [ least recently used ........................ most recently used ]
 *                  ^ evicted first                               ^ get / getOrLoad put it here
 * </pre>
 *
 * <p>Every cached block is held by exactly one reference of the cache; an
 * eviction releases it, so its memory is freed as soon as no reader holds a
 * duplicate of it. The cache's {@link #bytes()} therefore equal the requested
 * bytes of its allocator's category while no reader holds an evicted block.
 *
 * <p>Thread-safe: one lock (the cache's monitor) guards it; a loader runs
 * under it, so two readers never load the same block twice (and a slow loader
 * holds up the others: fine for an example, not for a broker).
 */
public final class BlockCache implements AutoCloseable {

    private final BlockByteBufAllocator allocator;
    private final long maxBytes;
    private final LinkedHashMap<String, ByteBuf> entries = new LinkedHashMap<>(64, 0.75f, true);
    private long bytes;
    private long hits;
    private long misses;
    private long evictions;
    private boolean closed;

    /**
     * A cache of at most {@code maxBytes} bytes of blocks.
     *
     * @throws IllegalArgumentException when {@code maxBytes} is not positive
     */
    public BlockCache(BlockByteBufAllocator allocator, long maxBytes) {
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be positive: " + maxBytes);
        }
        this.allocator = allocator;
        this.maxBytes = maxBytes;
    }

    /**
     * The block under {@code key} as a retained duplicate the caller must
     * release, or null on a miss; a hit makes it the most recently used.
     */
    public synchronized ByteBuf get(String key) {
        ByteBuf buf = entries.get(key);
        if (buf == null) {
            misses++;
            return null;
        }
        hits++;
        return buf.retainedDuplicate();
    }

    /**
     * The block under {@code key}; on a miss, a buffer of {@code size} bytes is
     * allocated, filled by {@code loader} (key, buffer to write into, writer
     * index 0), and cached, evicting least-recently-used blocks until it fits.
     *
     * @return a retained duplicate the caller must release, or null when the
     *         block is larger than the cache or memory was refused with nothing left to evict
     * @throws IllegalArgumentException when {@code size} is not positive
     * @throws IllegalStateException    when the cache is closed
     */
    public synchronized ByteBuf getOrLoad(String key, int size, BiConsumer<String, ByteBuf> loader) {
        if (closed) {
            throw new IllegalStateException("the block cache is closed");
        }
        if (size <= 0) {
            throw new IllegalArgumentException("block '" + key + "' must have a positive size: " + size);
        }
        ByteBuf cached = get(key);
        if (cached != null || size > maxBytes) {
            return cached;
        }
        while (bytes + size > maxBytes) {
            evictEldest();
        }
        ByteBuf buf = allocator.allocate(size);
        while (buf == null && !entries.isEmpty()) { // refused at a limit under RETURN_NULL: make room and retry
            evictEldest();
            buf = allocator.allocate(size);
        }
        if (buf == null) {
            return null;
        }
        try {
            loader.accept(key, buf);
        } catch (RuntimeException | Error e) {
            buf.release();
            throw e;
        }
        entries.put(key, buf);
        bytes += size;
        return buf.retainedDuplicate();
    }

    private void evictEldest() {
        Iterator<Map.Entry<String, ByteBuf>> eldest = entries.entrySet().iterator();
        ByteBuf buf = eldest.next().getValue();
        eldest.remove();
        bytes -= buf.capacity();
        evictions++;
        buf.release();
    }

    /** Bytes of blocks cached. */
    public synchronized long bytes() {
        return bytes;
    }

    /** The bound on {@link #bytes()}. */
    public long maxBytes() {
        return maxBytes;
    }

    /** Blocks cached. */
    public synchronized int size() {
        return entries.size();
    }

    /** Lookups that found their block. */
    public synchronized long hits() {
        return hits;
    }

    /** Lookups that did not. */
    public synchronized long misses() {
        return misses;
    }

    /** Blocks evicted so far (by loads and by {@link #close()}). */
    public synchronized long evictions() {
        return evictions;
    }

    /** Whether {@code key} is cached, without touching its recency. */
    public synchronized boolean contains(String key) {
        return entries.containsKey(key);
    }

    /** Releases every cached block; later loads fail, lookups miss. Closing twice does nothing. */
    @Override
    public synchronized void close() {
        closed = true;
        while (!entries.isEmpty()) {
            evictEldest();
        }
    }
}
