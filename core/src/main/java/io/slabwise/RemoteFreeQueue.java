package io.slabwise;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A bounded multi-producer, single-consumer queue of frees that other threads
 * hand to an arena. It holds plain {@code long}s, so handing memory back
 * allocates nothing.
 *
 * <p>Producers (threads releasing memory of an arena they are not bound to)
 * claim a slot by CAS on {@code producerIndex} and publish the entry with a
 * release store. The consumer is whoever holds the arena's lock: it reads a slot
 * with an acquire load, clears it, then advances {@code consumerIndex} with a
 * release store, which is what producers read to see free capacity. A slot that
 * is claimed but not yet written reads as 0 and ends a drain; the entry is taken
 * at the next one. When the queue is full, {@link #offer} fails and the producer
 * takes the arena's lock instead.
 *
 * <p>An entry is never 0: {@link #encode} sets a marker bit.
 * <pre>
 *  62      56 .. 33     32   31 .. 16    15 .. 0
 *  [marker][ chunk id ][ S ][run start][run pages | element]
 * </pre>
 */
final class RemoteFreeQueue {

    private static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle PRODUCER_INDEX;
    private static final VarHandle CONSUMER_INDEX;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            PRODUCER_INDEX = lookup.findVarHandle(RemoteFreeQueue.class, "producerIndex", long.class);
            CONSUMER_INDEX = lookup.findVarHandle(RemoteFreeQueue.class, "consumerIndex", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final long MARKER = 1L << 62;
    private static final int MAX_CHUNK_ID = (1 << 24) - 1;

    private final long[] slots;
    private final int mask;
    @SuppressWarnings("unused") // accessed through PRODUCER_INDEX
    private volatile long producerIndex;
    @SuppressWarnings("unused") // accessed through CONSUMER_INDEX
    private volatile long consumerIndex;

    RemoteFreeQueue(int capacity) {
        int size = Integer.highestOneBit(Math.max(2, capacity - 1)) << 1;
        slots = new long[size];
        mask = size - 1;
    }

    static long encode(int chunkId, long handle) {
        if (chunkId > MAX_CHUNK_ID) {
            throw new IllegalStateException("chunk id " + chunkId + " does not fit a remote-free entry");
        }
        long low = Chunk.isSubpage(handle)
                ? (1L << 32) | ((long) Chunk.runStart(handle) << 16) | Chunk.element(handle)
                : ((long) Chunk.runStart(handle) << 16) | Chunk.runPages(handle);
        return MARKER | ((long) chunkId << 33) | low;
    }

    static int chunkId(long entry) {
        return (int) (entry >>> 33) & MAX_CHUNK_ID;
    }

    static boolean isSubpage(long entry) {
        return (entry & (1L << 32)) != 0;
    }

    static int runStart(long entry) {
        return (int) (entry >>> 16) & 0xFFFF;
    }

    /** The run's length in pages, or for a subpage entry the element index. */
    static int lowField(long entry) {
        return (int) entry & 0xFFFF;
    }

    /** Adds an entry; returns false when the queue is full. Any thread. */
    boolean offer(long entry) {
        long capacity = slots.length;
        long consumerLimit = (long) CONSUMER_INDEX.getAcquire(this) + capacity;
        while (true) {
            long p = (long) PRODUCER_INDEX.getVolatile(this);
            if (p >= consumerLimit) {
                consumerLimit = (long) CONSUMER_INDEX.getAcquire(this) + capacity;
                if (p >= consumerLimit) {
                    return false;
                }
            }
            if (PRODUCER_INDEX.compareAndSet(this, p, p + 1)) {
                SLOTS.setRelease(slots, (int) (p & mask), entry);
                return true;
            }
        }
    }

    /** Entries that a drain will find (an estimate while producers are active). */
    long size() {
        return Math.max(0, (long) PRODUCER_INDEX.getVolatile(this) - (long) CONSUMER_INDEX.getVolatile(this));
    }

    /** Takes every published entry in order; the caller holds the arena's lock. */
    void drain(Arena arena) {
        long c = (long) CONSUMER_INDEX.getOpaque(this);
        while (true) {
            int index = (int) (c & mask);
            long entry = (long) SLOTS.getAcquire(slots, index);
            if (entry == 0) {
                return;
            }
            SLOTS.setOpaque(slots, index, 0L);
            c++;
            CONSUMER_INDEX.setRelease(this, c);
            arena.freeEntry(entry);
        }
    }
}
