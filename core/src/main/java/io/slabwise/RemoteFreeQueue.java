package io.slabwise;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.LongConsumer;

/**
 * A bounded multi-producer, single-consumer ring of frees that other threads
 * hand to an arena. It holds plain {@code long}s, so handing memory back
 * allocates nothing, and it knows nothing of arenas: the consumer passes a
 * {@link LongConsumer} to {@link #drain}.
 *
 * <h2>Algorithm</h2>
 * Three counters only grow: {@code producerIndex} (the next slot to claim),
 * {@code consumerIndex} (the next slot to take) and {@code producerLimit} (the
 * first index producers may not claim without looking at the consumer again).
 * Slot {@code i} of the ring is {@code slots[PAD + (i & mask)]}; 0 marks an
 * empty slot, which is why an entry is never 0.
 * <ul>
 *   <li><b>Producers</b> (threads releasing memory of an arena they are not
 *       bound to) read {@code producerLimit}, and while the producer index is
 *       below it they claim a slot by {@code compareAndSet} on
 *       {@code producerIndex} (retried with a fresh {@code getVolatile} of the
 *       index when another producer won) without looking at the consumer. Only
 *       at the limit do they read {@code consumerIndex}: if the ring is really
 *       full {@link #offer} fails (and the caller frees under the arena's lock
 *       instead); otherwise they store {@code consumerIndex + capacity} as the
 *       new limit, so that the consumer's line is read about once per capacity
 *       of offers rather than on every one. The claimed slot is then written
 *       with a release store.</li>
 *   <li><b>The consumer</b> is whoever holds the arena's lock. It reads the slot
 *       at {@code consumerIndex} with an acquire load; 0 ends the drain (nothing
 *       published, or a slot claimed whose entry is not written yet: it is taken
 *       at a later drain, and so is everything behind it). Otherwise it clears
 *       the slot, advances {@code consumerIndex} with a release store and hands
 *       the entry to its sink. A drain takes at most the {@code limit} it is
 *       given, so producers that keep adding cannot keep the lock holder
 *       draining: what is left waits, in order, for the next drain.</li>
 * </ul>
 *
 * <h2>Memory ordering</h2>
 * A producer may write slot {@code i} only after the consumer cleared it one lap
 * earlier. The consumer clears the slot, then {@code setRelease}s
 * {@code consumerIndex}; a producer {@code getAcquire}s {@code consumerIndex}
 * and publishes the limit derived from it with {@code setRelease}; other
 * producers {@code getAcquire} {@code producerLimit}. Each link is a
 * release/acquire pair, so the clear happens before any write that a limit
 * allowed. Limits may be stored out of order by racing producers; a stale one
 * is only smaller than the true {@code consumerIndex + capacity} (the consumer
 * index never goes back), so it can cost an extra look at the consumer but
 * never lets a producer overwrite an entry. The entry itself goes from the
 * producer's {@code setRelease} of the slot to the consumer's
 * {@code getAcquire} of it: what the producer did before releasing the memory
 * happens before the arena reuses it.
 *
 * <h2>Layout</h2>
 * The three counters are written by different parties at different rates:
 * {@code producerIndex} by every offer (a CAS contended by all producers),
 * {@code producerLimit} about once per capacity of offers, {@code consumerIndex}
 * by every entry drained. Each sits on a cache line of its own, with at least
 * 128 bytes of padding on each side (two 64-byte lines, because CPUs prefetch
 * lines in adjacent pairs), so that a write to one does not invalidate the
 * others or a neighbouring object. HotSpot lays out a class's fields after its
 * superclass's (only a field narrower than a long may slip into a gap the
 * superclass left), so the padding is a chain of superclasses, as JCTools does
 * it; {@code RemoteFreeQueueRingTest} checks the offsets:
 * <pre>
 *  object header | slots, mask          (final: read by everyone, written never)
 *  RemoteFreeQueuePad0         16 longs
 *  RemoteFreeQueueProducer     producerIndex             CAS by producers
 *  RemoteFreeQueuePad1         16 longs
 *  RemoteFreeQueueLimit        producerLimit,            read by producers, written
 *                              consumerIndexReads        when they look at the consumer
 *  RemoteFreeQueuePad2         16 longs
 *  RemoteFreeQueueConsumer     consumerIndex             written by the consumer
 *  RemoteFreeQueue             16 longs
 * </pre>
 * The array has {@link #PAD} unused slots at each end for the same reason:
 * its first and last entries never share a line with its header or with
 * another object.
 *
 * <h2>Entries</h2>
 * An entry is never 0: {@link #encode} sets a marker bit.
 * <pre>
 *  62      56 .. 33     32   31 .. 16    15 .. 0
 *  [marker][ chunk id ][ S ][run start][run pages | element]
 * </pre>
 */
final class RemoteFreeQueue extends RemoteFreeQueueConsumer {

    private static final long MARKER = 1L << 62;
    private static final int MAX_CHUNK_ID = (1 << 24) - 1;

    @SuppressWarnings("unused") // padding after consumerIndex: keeps the next object off its line
    private long d00, d01, d02, d03, d04, d05, d06, d07, d08, d09, d10, d11, d12, d13, d14, d15;

    RemoteFreeQueue(int capacity) {
        super(Integer.highestOneBit(Math.max(2, capacity - 1)) << 1);
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

    /** How many entries the queue holds when full: the capacity asked for, rounded up to a power of two. */
    int capacity() {
        return mask + 1;
    }

    /** Adds an entry (never 0); returns false when the queue is full. Any thread. */
    boolean offer(long entry) {
        long index = claim();
        if (index < 0) {
            return false;
        }
        publish(index, entry);
        return true;
    }

    /**
     * Claims the next slot: returns its index, or -1 when the queue is full.
     * The consumer index is read only when the cached limit is reached.
     * Package-private so that a test can stop a producer between its claim and
     * its {@link #publish}; everything else goes through {@link #offer}.
     */
    long claim() {
        long limit = (long) PRODUCER_LIMIT.getAcquire(this);
        while (true) {
            long index = (long) PRODUCER_INDEX.getVolatile(this);
            if (index >= limit) {
                consumerIndexReads++; // racy on purpose: a count for tests, not a correctness property
                limit = (long) CONSUMER_INDEX.getAcquire(this) + mask + 1;
                if (index >= limit) {
                    return -1;
                }
                PRODUCER_LIMIT.setRelease(this, limit);
            }
            if (PRODUCER_INDEX.compareAndSet(this, index, index + 1)) {
                return index;
            }
        }
    }

    /** Writes the entry of a slot this thread claimed; from here a drain can take it. */
    void publish(long index, long entry) {
        SLOTS.setRelease(slots, PAD + (int) (index & mask), entry);
    }

    /**
     * Entries that a drain would find, an estimate while producers or the
     * consumer are active; never negative or above the capacity.
     */
    long size() {
        long consumed = (long) CONSUMER_INDEX.getAcquire(this); // first, so a concurrent drain makes it larger, not negative
        long claimed = (long) PRODUCER_INDEX.getAcquire(this);
        return Math.max(0, Math.min(capacity(), claimed - consumed));
    }

    /**
     * Takes up to {@code limit} published entries in order and hands each to
     * {@code sink}. The caller is the consumer: it holds the arena's lock. The
     * drain stops early at the first slot not yet written; entries left behind
     * (beyond the limit, or behind that slot) stay in order for the next drain.
     * An entry is removed before the sink sees it, so a sink that throws loses
     * only that entry.
     *
     * @return how many entries were taken
     */
    int drain(LongConsumer sink, int limit) {
        long consumed = (long) CONSUMER_INDEX.getOpaque(this); // only the consumer writes it; the lock orders consumers
        int taken = 0;
        while (taken < limit) {
            int slot = PAD + (int) (consumed & mask);
            long entry = (long) SLOTS.getAcquire(slots, slot);
            if (entry == 0) {
                break;
            }
            SLOTS.setOpaque(slots, slot, 0L);
            CONSUMER_INDEX.setRelease(this, ++consumed); // the clear above happens before a producer's reuse
            taken++;
            sink.accept(entry);
        }
        return taken;
    }
}

/** The ring: read-only fields that every party reads, next to the object header. */
abstract class RemoteFreeQueueSlots {

    /** Unused slots at each end of the array: 128 bytes, two cache lines. */
    static final int PAD = 16;
    static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(long[].class);

    final long[] slots;
    /** Capacity - 1; the capacity is a power of two. */
    final int mask;

    RemoteFreeQueueSlots(int capacity) {
        slots = new long[capacity + 2 * PAD];
        mask = capacity - 1;
    }
}

abstract class RemoteFreeQueuePad0 extends RemoteFreeQueueSlots {

    @SuppressWarnings("unused") // padding between the read-only fields and producerIndex
    private long a00, a01, a02, a03, a04, a05, a06, a07, a08, a09, a10, a11, a12, a13, a14, a15;

    RemoteFreeQueuePad0(int capacity) {
        super(capacity);
    }
}

abstract class RemoteFreeQueueProducer extends RemoteFreeQueuePad0 {

    static final VarHandle PRODUCER_INDEX = handle(MethodHandles.lookup(), "producerIndex");

    /** The next index to claim; accessed only through {@link #PRODUCER_INDEX}. */
    @SuppressWarnings("unused")
    private long producerIndex;

    RemoteFreeQueueProducer(int capacity) {
        super(capacity);
    }

    /** The handle of a {@code long} field of the class that made {@code lookup} (a private field needs its own class's lookup). */
    static VarHandle handle(MethodHandles.Lookup lookup, String field) {
        try {
            return lookup.findVarHandle(lookup.lookupClass(), field, long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}

abstract class RemoteFreeQueuePad1 extends RemoteFreeQueueProducer {

    @SuppressWarnings("unused") // padding between producerIndex and producerLimit
    private long b00, b01, b02, b03, b04, b05, b06, b07, b08, b09, b10, b11, b12, b13, b14, b15;

    RemoteFreeQueuePad1(int capacity) {
        super(capacity);
    }
}

abstract class RemoteFreeQueueLimit extends RemoteFreeQueuePad1 {

    static final VarHandle PRODUCER_LIMIT = handle(MethodHandles.lookup(), "producerLimit");

    /**
     * The first index producers may not claim without reading the consumer
     * index: {@code consumerIndex + capacity} as some producer last saw it.
     * Set in the constructor, then accessed only through {@link #PRODUCER_LIMIT}.
     */
    private long producerLimit;
    /**
     * How many times producers read the consumer index. Plain increments by
     * any producer, on the line that such a read then writes anyway (the new
     * limit) unless the ring is full; exact only on one thread, which is what
     * the tests use it for.
     */
    long consumerIndexReads;

    RemoteFreeQueueLimit(int capacity) {
        super(capacity);
        // a plain store: a producer that still saw the default 0 would only read the consumer index once more
        producerLimit = capacity;
    }
}

abstract class RemoteFreeQueuePad2 extends RemoteFreeQueueLimit {

    @SuppressWarnings("unused") // padding between producerLimit and consumerIndex
    private long c00, c01, c02, c03, c04, c05, c06, c07, c08, c09, c10, c11, c12, c13, c14, c15;

    RemoteFreeQueuePad2(int capacity) {
        super(capacity);
    }
}

abstract class RemoteFreeQueueConsumer extends RemoteFreeQueuePad2 {

    static final VarHandle CONSUMER_INDEX = handle(MethodHandles.lookup(), "consumerIndex");

    /** The next index to take; accessed only through {@link #CONSUMER_INDEX}. */
    @SuppressWarnings("unused")
    private long consumerIndex;

    RemoteFreeQueueConsumer(int capacity) {
        super(capacity);
    }
}
