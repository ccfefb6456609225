package io.slabwise;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A thread cache's blank {@link Allocation} holders, kept for callers that
 * never show a holder to anyone (the Netty adapter's buffers): a buffer takes
 * one at allocation and it comes back here when the buffer is released on the
 * cache's thread, so the only object an allocation makes is the buffer itself.
 *
 * <pre>
 *  holders[0 .. count)          taken and stashed by the owner (or under a shared cache's lock), newest on top
 *  returned ─▶ h ─▶ h ─▶ null   pushed by other threads (compare-and-set), taken whole by the owner
 *  takenReturned ─▶ h ─▶ null   what the owner took of them and has not handed out yet
 * </pre>
 *
 * <p>The array belongs to the owner thread, or, in a shared cache, to the
 * holder of its lock, where it serves all of its virtual threads. A holder
 * of a thread's own cache freed on another thread (a consumer of the buffers
 * it allocated) goes back to it, cleared, through the lock-free stack of
 * returned holders that releasing threads push onto and the owner takes
 * whole, once its array is empty ({@link #returnHolder}, {@link #takeReturned}):
 * push and take-all, so no holder can be seen twice. With the adapter's
 * recycling, the holder brings its buffer object back too, as Netty's
 * recycler does.
 */
final class HolderStash {

    /** The most blank holders a stash keeps: enough for a thread that holds a few buffers at a time. */
    static final int CAPACITY = 8;

    /** Blank holders, made on first use; {@code holders[0 .. holderCount)} are free to take. */
    private Allocation[] holders;
    private int holderCount;
    /** Blank holders other threads gave back, linked by {@link Allocation#nextReturned}; the owner takes them whole. */
    private final AtomicReference<Allocation> returnedHolders = new AtomicReference<>();
    /** What the owner took of {@link #returnedHolders} and has not handed out yet; owner only. */
    private Allocation takenReturned;

    /** The top holder of the stash, or null; the owner, or the shared cache's lock held. */
    Allocation pop() {
        int n = holderCount;
        if (n == 0) {
            return null;
        }
        holderCount = --n;
        return holders[n]; // left in place: stashing it again then stores nothing (see stash)
    }

    /**
     * Keeps a cleared holder for the next allocation, if there is room; the
     * owner thread, or the shared cache's lock held.
     */
    void stash(Allocation holder) {
        Allocation[] stash = holders;
        if (stash == null) {
            holders = stash = new Allocation[CAPACITY];
        }
        int n = holderCount;
        if (n < stash.length) {
            if (stash[n] != holder) {
                stash[n] = holder; // most often the holder taken from this place: nothing to store
            }
            holderCount = n + 1;
        }
    }

    /** A holder another thread gave back, or null; owner only (the one taker of the stack). */
    Allocation takeReturned() {
        Allocation holder = takenReturned;
        if (holder == null) {
            if (returnedHolders.get() == null) {
                return null; // the common case: a plain read, no write to the line releasing threads push onto
            }
            holder = returnedHolders.getAndSet(null);
        }
        takenReturned = holder.nextReturned;
        holder.nextReturned = null;
        return holder;
    }

    /**
     * Gives a cleared holder of this stash, released on another thread, back
     * to the owner for its next allocations; any thread. Never for a shared
     * cache, whose holders go back to its stash under its lock.
     */
    void returnHolder(Allocation holder) {
        Allocation head;
        do {
            head = returnedHolders.get();
            holder.nextReturned = head;
        } while (!returnedHolders.compareAndSet(head, holder));
    }

    /** Drops the stashed holders: a dead thread's cache keeps none (see {@link ThreadCache#retire()}). */
    void drop() {
        holders = null;
        holderCount = 0;
    }

    /** Blank holders in the stash now; for tests. */
    int size() {
        return holderCount;
    }
}
