package io.slabwise.benchmarks.soak;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.slabwise.MemoryLimitException;
import io.slabwise.netty.BlockByteBufAllocator;
import io.slabwise.netty.BufferEvacuation;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The soak's block cache: payloads in a block pool under integer keys,
 * evicted least recently used to stay within a byte bound, loaded on a miss,
 * and moved by compactions through the cache's relocator. Every payload it
 * holds is in its {@link Tally}, as the parts the pool counts (blocks,
 * sub-blocks, mini-blocks: the components of its composite buffer).
 *
 * <pre>
 *  access order [ least recently used .................... most recently used ]
 *                 ^ evicted first (bound, or the pool's ceiling)   ^ a hit or a load puts it here
 *  relocator: tryLock; for each payload the evacuation contains: move, swap (order kept), release the old one
 * </pre>
 *
 * <p>At the pool's ceiling it evicts and tries again, never waiting; with
 * nothing left to evict the load is refused. A refusal of the chunk source
 * refuses the load, or leaves a payload in place in a move. One lock guards
 * the payloads and the tally; the relocator never waits for it.
 */
final class BlockCache {

    /** A cached payload; its buffer changes when a compaction moves it. */
    private static final class Payload {
        final int stamp;
        ByteBuf buffer;

        Payload(int stamp, ByteBuf buffer) {
            this.stamp = stamp;
            this.buffer = buffer;
        }
    }

    private final BlockByteBufAllocator allocator;
    private final long maxBytes;
    private final Tally tally;
    private final ReentrantLock lock = new ReentrantLock();
    private final LinkedHashMap<Integer, Payload> payloads = new LinkedHashMap<>(256, 0.75f, true);
    private long bytes;
    private long loads;
    private final LongAdder ceilingRefusals = new LongAdder();
    private final LongAdder sourceRefusals = new LongAdder();
    private final LongAdder relocations = new LongAdder();

    /** A cache of at most {@code maxBytes} in the category of {@code allocator}, registered as its relocator. */
    BlockCache(SlabwiseAllocator pool, BlockByteBufAllocator allocator, long maxBytes) {
        this.allocator = allocator;
        this.maxBytes = maxBytes;
        this.tally = new Tally(allocator.category());
        pool.setRelocator(allocator.category(), this::relocate);
    }

    /** What the cache holds. */
    Tally tally() {
        return tally;
    }

    /** The pool buffers a payload counts as: the parts of a composite, else one. */
    static int parts(ByteBuf buffer) {
        return buffer instanceof CompositeByteBuf ? ((CompositeByteBuf) buffer).numComponents() : 1;
    }

    /**
     * Reads the payload under {@code key}, checking its stamp; on a miss loads
     * {@code size} bytes of {@code template} under it.
     *
     * @return whether the key was a hit
     * @throws IllegalStateException when a payload's bytes are not the ones written
     */
    boolean getOrLoad(int key, int size, byte[] template) {
        ByteBuf duplicate;
        int stamp;
        lock.lock();
        try {
            Payload payload = payloads.get(key);
            if (payload == null) {
                load(key, size, template);
                return false;
            }
            duplicate = payload.buffer.retainedDuplicate();
            stamp = payload.stamp;
        } finally {
            lock.unlock();
        }
        try {
            Contents.check(duplicate, stamp, "block payload " + key);
        } finally {
            duplicate.release();
        }
        return true;
    }

    /** Under the lock: loads a payload, evicting to make room. */
    private void load(int key, int size, byte[] template) {
        while (bytes + size > maxBytes && !payloads.isEmpty()) {
            evictEldest();
        }
        try {
            ByteBuf buffer = tryAllocate(size);
            while (buffer == null && !payloads.isEmpty()) {
                evictEldest();
                buffer = tryAllocate(size);
            }
            if (buffer == null) {
                ceilingRefusals.increment();
                return;
            }
            int stamp = (int) ++loads;
            Contents.fill(buffer, template, stamp);
            payloads.put(key, new Payload(stamp, buffer));
            bytes += size;
            tally.add(size, parts(buffer));
        } catch (RefusingChunkSource.Refusal refused) {
            sourceRefusals.increment();
        }
    }

    private ByteBuf tryAllocate(int size) {
        try {
            return allocator.tryAllocate(size);
        } catch (MemoryLimitException e) { // tryAllocate returns null at a limit; counted the same if it throws
            return null;
        }
    }

    /** Under the lock. */
    private void evictEldest() {
        Iterator<Payload> eldest = payloads.values().iterator();
        Payload payload = eldest.next();
        eldest.remove();
        int size = payload.buffer.capacity();
        bytes -= size;
        tally.remove(size, parts(payload.buffer));
        payload.buffer.release();
    }

    /** Moves the payloads the evacuation contains while its budget lasts; never waits for the lock. */
    private void relocate(BufferEvacuation evacuation) {
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            evacuation.refused();
            return;
        }
        try {
            // setting a value in place keeps the access order (a put would count as an access)
            for (Map.Entry<Integer, Payload> entry : payloads.entrySet()) {
                if (!evacuation.budgetLeft()) {
                    return;
                }
                Payload payload = entry.getValue();
                if (!evacuation.contains(payload.buffer)) {
                    continue;
                }
                ByteBuf moved;
                try {
                    moved = evacuation.move(payload.buffer);
                } catch (RefusingChunkSource.Refusal refused) {
                    sourceRefusals.increment();
                    moved = null;
                }
                if (moved != null) {
                    Contents.check(moved, payload.stamp, "moved block payload " + entry.getKey());
                    ByteBuf old = payload.buffer;
                    payload.buffer = moved;
                    tally.add(0, parts(moved) - parts(old));
                    old.release();
                    relocations.increment();
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Holds the cache's lock: neither a load nor a compaction's move changes it until {@link #unlock()}. */
    void lock() {
        lock.lock();
    }

    /** Lets go of {@link #lock()}. */
    void unlock() {
        lock.unlock();
    }

    /** Bytes of payloads cached. */
    long bytes() {
        lock.lock();
        try {
            return bytes;
        } finally {
            lock.unlock();
        }
    }

    /** Loads refused at the ceiling with nothing to evict. */
    long ceilingRefusals() {
        return ceilingRefusals.sum();
    }

    /** Loads and moves refused by the chunk source. */
    long sourceRefusals() {
        return sourceRefusals.sum();
    }

    /** Payloads moved by compactions. */
    long relocations() {
        return relocations.sum();
    }

    /** Releases every payload and removes the relocator. */
    void close(SlabwiseAllocator pool) {
        pool.setRelocator(allocator.category(), null);
        lock.lock();
        try {
            while (!payloads.isEmpty()) {
                evictEldest();
            }
        } finally {
            lock.unlock();
        }
    }
}
