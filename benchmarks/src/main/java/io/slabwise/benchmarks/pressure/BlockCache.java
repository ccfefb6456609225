package io.slabwise.benchmarks.pressure;

import io.netty.buffer.ByteBuf;
import io.slabwise.Shrinker;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;

/**
 * A block cache: fixed-size blocks by key, least recently used evicted first
 * once the cache holds more than its byte budget or the allocator refuses a
 * block. A read of a key that is not cached loads the block (allocates it and
 * writes its key), as a cache in front of object storage does.
 *
 * <p>As a {@link Shrinker} it drops its least recently used blocks for the
 * pool, with the same rules as {@link LogCache}: a counter for
 * {@code reclaimable()}, {@code tryLock} and {@link Shrinker#BUSY} in
 * {@code shrink}, the dropped blocks released before it returns.
 */
final class BlockCache implements Shrinker {

    private final ReentrantLock lock = new ReentrantLock();
    private final LinkedHashMap<Integer, ByteBuf> blocks = new LinkedHashMap<>(1024, 0.75f, true);
    private final IntFunction<ByteBuf> allocator;
    private final int blockSize;
    private final long budget;
    private volatile long bytes;
    private long shed;
    private long refused;

    /**
     * @param allocator a buffer of the given size, or null when the allocator refuses at a limit
     * @param blockSize the size of every block
     * @param budget    the most bytes of blocks the cache keeps
     */
    BlockCache(IntFunction<ByteBuf> allocator, int blockSize, long budget) {
        this.allocator = allocator;
        this.blockSize = blockSize;
        this.budget = budget;
    }

    /** Reads the block of {@code key}: true on a hit; on a miss loads it, evicting to make room. */
    boolean read(int key) {
        lock.lock();
        try {
            ByteBuf cached = blocks.get(key);
            if (cached != null) {
                if (cached.getInt(0) != key) {
                    throw new IllegalStateException("block " + key + " holds " + cached.getInt(0));
                }
                return true;
            }
            ByteBuf loaded = allocator.apply(blockSize);
            while (loaded == null && !blocks.isEmpty()) {
                dropEldest();
                loaded = allocator.apply(blockSize);
            }
            if (loaded == null) {
                refused++;
                return false;
            }
            loaded.writeInt(key);
            blocks.put(key, loaded);
            bytes += blockSize;
            while (bytes > budget) {
                dropEldest();
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    private long dropEldest() {
        Iterator<Map.Entry<Integer, ByteBuf>> eldest = blocks.entrySet().iterator();
        ByteBuf buffer = eldest.next().getValue();
        eldest.remove();
        buffer.release();
        bytes -= blockSize;
        return blockSize;
    }

    /** Bytes of blocks cached. */
    long bytes() {
        return bytes;
    }

    /** Bytes dropped at the pool's request. */
    long shedBytes() {
        return shed;
    }

    /** Loads no allocation could take even with the cache empty. */
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
            while (freed < ask && !blocks.isEmpty()) {
                freed += dropEldest();
            }
            shed += freed;
            return freed;
        } finally {
            lock.unlock();
        }
    }

    /** Releases every block. */
    void clear() {
        lock.lock();
        try {
            while (!blocks.isEmpty()) {
                dropEldest();
            }
        } finally {
            lock.unlock();
        }
    }
}
