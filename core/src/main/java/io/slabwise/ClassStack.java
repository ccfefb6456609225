package io.slabwise;

import java.util.Arrays;
import java.util.function.Consumer;

/**
 * What a {@link ThreadCache} keeps of one size class: recently freed entries,
 * newest on top, and above them up to {@link #KEPT_LIMIT} holders kept filled
 * with the memory their buffers released.
 *
 * <pre>
 *  top ─▶ kept[keptCount-1] … kept[0]       holders with their memory (taken first by a stashed allocation)
 *         entries[count-1] … entries[0]      (chunk id, handle) pairs, the oldest at the bottom
 *  count + keptCount &lt;= capacity;   lowWater: the fewest entries since the last sweep
 * </pre>
 *
 * <p>Entries name their chunk by its id in the arena: ints rather than
 * references, so that pushing one is a plain store, not a store of a
 * reference into a long-lived array, which costs a GC write barrier. Kept
 * holders are references, but a thread that releases what it allocated puts
 * the same holder back into the same slot, and the slot is not stored again.
 *
 * <p>Refills grow with demand: when the stack is empty, the cache takes a
 * batch of allocations from the arena under one lock, {@link #FIRST_REFILL_BATCH}
 * at the class's first refill, twice as many at each refill after, up to
 * {@link #REFILL_BATCH}, and half as many again after a sweep finds entries of
 * the class unused (so a thread that touches many classes now and then holds
 * little, and one that keeps allocating a class takes it 16 at a time): first
 * memory of that class that other threads released into the arena's
 * remote-free queue, then, for a small class, elements of subpages with room;
 * a page class takes one new run only when the queue gave none. While callers
 * wait at a limit, a refill takes a single allocation, so that released
 * memory is not parked in one thread's cache. A thread whose buffers are
 * released by other threads (a producer) then takes the arena lock once per
 * batch instead of once per buffer, and gets its own memory back without the
 * arena taking it apart and carving it again. The other side, a thread that
 * releases more of a class than it allocates (a consumer), fills its stack;
 * a release into a full stack hands the older half over to the arena's
 * remote-free queue ({@link #pushOrFlush}), lock-free, for the producer's
 * next refill.
 *
 * <p>Not thread-safe: the owner thread of the cache, a virtual thread
 * holding a shared cache's lock, or any thread once the owner died.
 */
final class ClassStack {

    /** The most allocations one refill takes. */
    static final int REFILL_BATCH = 16;
    /** What a class's first refill takes. */
    static final int FIRST_REFILL_BATCH = 2;
    /** The most filled holders a stack keeps; the rest of its class's releases become entries. */
    static final int KEPT_LIMIT = 4;

    /** The most entries and kept holders the stack may hold; its arrays start smaller and double up to it. */
    final int capacity;
    private int[] chunkIds;
    private long[] handles;
    private int count;
    /** The fewest entries the stack held since the last sweep: that many were not needed. */
    private int lowWater;
    /** How many allocations the next refill takes. */
    private int batch = FIRST_REFILL_BATCH;
    /** Filled holders, made at the first one; slots above {@link #keptCount} may still name holders in use. */
    private Allocation[] kept;
    private int keptCount;

    ClassStack(int capacity) {
        this.capacity = capacity;
        int initial = Math.min(capacity, REFILL_BATCH);
        chunkIds = new int[initial];
        handles = new long[initial];
    }

    /** Entries and kept holders now. */
    int size() {
        return count + keptCount;
    }

    /** Whether a kept holder is waiting. */
    boolean hasKept() {
        return keptCount > 0;
    }

    /**
     * Pushes a freed entry, first handing the older half of the entries
     * over to {@code arena}'s remote-free queue when the stack is full;
     * false, with nothing changed, only when no entry could make room (the
     * kept holders fill it). A thread that frees more of a class than it
     * allocates (a consumer releasing what another thread allocated) thus
     * takes no lock for its releases (unless the queue is full), and the
     * producer's next refill takes the entries straight into its cache.
     */
    boolean pushOrFlush(Arena arena, Chunk chunk, long handle) {
        if (!hasRoom()) {
            int n = count;
            if (n == 0) {
                return false;
            }
            int older = (n + 1) / 2;
            arena.handOverBatch(chunkIds, handles, 0, older);
            dropOldest(older);
            lowWater = Math.max(0, lowWater - older);
        }
        chunkIds[count] = chunk.id;
        handles[count] = handle;
        count++;
        return true;
    }

    /** Whether one more entry fits, growing the arrays when they are full but the capacity allows. */
    private boolean hasRoom() {
        if (count + keptCount >= capacity) {
            return false;
        }
        if (count == handles.length) {
            int grown = Math.min(capacity, handles.length * 2);
            chunkIds = Arrays.copyOf(chunkIds, grown);
            handles = Arrays.copyOf(handles, grown);
        }
        return true;
    }

    /** Takes the top entry into {@code out}'s chunk and handle; false when there is none. */
    boolean pop(Arena arena, Allocation out) {
        int n = count;
        if (n == 0) {
            return false;
        }
        n--;
        count = n;
        if (n < lowWater) {
            lowWater = n;
        }
        out.chunk = arena.chunk(chunkIds[n]);
        out.handle = handles[n];
        return true;
    }

    /**
     * Refills the empty stack from {@code arena} with one batch of class
     * {@code sizeIndex} under one lock (a single allocation with
     * {@code single}, while callers wait at a limit) and takes one of it into
     * {@code out}.
     */
    void refill(Arena arena, int sizeIndex, boolean single, Allocation out) {
        int take = single ? 1 : Math.min(batch, chunkIds.length);
        batch = Math.min(REFILL_BATCH, batch * 2);
        count = arena.allocateBatch(sizeIndex, chunkIds, handles, take);
        pop(arena, out);
    }

    /** Keeps a released, still filled holder on top; false, with nothing changed, when no more may be kept. */
    boolean keep(Allocation holder) {
        int n = keptCount;
        if (n == KEPT_LIMIT || count + n >= capacity) {
            return false;
        }
        Allocation[] slots = kept;
        if (slots == null) {
            kept = slots = new Allocation[KEPT_LIMIT];
        }
        if (slots[n] != holder) {
            slots[n] = holder; // (usually the same holder, back in its slot: no store, no write barrier)
        }
        keptCount = n + 1;
        return true;
    }

    /** The top kept holder, taken; null when none is kept. Its slot keeps naming it, for its return. */
    Allocation takeKept() {
        int n = keptCount;
        if (n == 0) {
            return null;
        }
        keptCount = --n;
        return kept[n];
    }

    /**
     * Turns the kept holders back into plain entries on top of the others,
     * clearing each holder and handing it to {@code blank}.
     */
    void unkeep(Consumer<Allocation> blank) {
        Allocation[] slots = kept;
        if (slots == null) {
            return;
        }
        int n = keptCount;
        keptCount = 0;
        for (int i = 0; i < n; i++) {
            Allocation holder = slots[i];
            hasRoom(); // room is certain: kept holders count against the capacity
            chunkIds[count] = holder.chunk.id;
            handles[count] = holder.handle;
            count++;
            holder.clear();
            blank.accept(holder);
        }
        Arrays.fill(slots, null); // the slots above the count too, which may name holders in use
    }

    /**
     * Gives the entries unused since the last sweep (the low-water mark, the
     * oldest) back to {@code arena} and halves the next refill if there were
     * any; kept holders must have been turned into entries first.
     */
    void sweep(Arena arena) {
        int unused = lowWater;
        if (unused > 0) {
            batch = Math.max(FIRST_REFILL_BATCH, batch / 2);
            freeOldest(arena, unused);
        }
        lowWater = count;
    }

    /** Gives the {@code n} oldest entries (the bottom of the stack) back to {@code arena} in one batch. */
    private void freeOldest(Arena arena, int n) {
        arena.freeBatch(chunkIds, handles, 0, n);
        dropOldest(n);
    }

    /** Forgets the {@code n} oldest entries, which went back to the arena. */
    private void dropOldest(int n) {
        int left = count - n;
        System.arraycopy(chunkIds, n, chunkIds, 0, left);
        System.arraycopy(handles, n, handles, 0, left);
        count = left;
    }

    /** Gives every entry back to {@code arena}; kept holders must have been turned into entries first. */
    void flush(Arena arena) {
        if (count > 0) {
            arena.freeBatch(chunkIds, handles, 0, count);
            count = 0;
            lowWater = 0;
        }
    }
}
