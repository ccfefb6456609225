package io.slabwise;

/**
 * The owner's side of memory pressure: a cache that can drop entries
 * registers one for its category ({@link MemoryPool#setShrinker}), and the
 * pool asks it to free memory before it refuses anyone at the ceiling, and in
 * the background while committed memory is above the high watermark (see
 * {@link PressureConfig}). It is the sibling of the {@link Relocator}:
 * compaction gives back memory that fragmentation wastes, shrinking gives
 * back memory a cache holds but can spare.
 *
 * <p>The pool never drops an entry itself. It asks {@link #reclaimable()} how
 * much the owner could free cheaply, spreads what it needs over the
 * categories by those answers (and their weights), and calls {@link #shrink}
 * with each share; the owner drops its coldest entries (its oldest, its least
 * recently used) and releases their memory. The pool then measures what
 * actually went back from its own accounting, not from the answer: memory an
 * entry frees may stay committed (a reader still holds it, or it shares a
 * chunk with live entries), and the pool never asks for more than it needs.
 *
 * <h2>Rules for an implementation</h2>
 * <ul>
 *   <li>Never wait for a lock. {@code shrink} may run on any thread: the
 *       pool's scheduler, or a thread whose allocation found the pool at its
 *       ceiling, which may be inside the owner's own code (an append that
 *       allocates). Take the lock with {@code tryLock}; when it is busy, or
 *       held by the calling thread, return {@link #BUSY} at once.</li>
 *   <li>Free at most about {@code bytes}: drop whole entries, oldest or
 *       coldest first, and stop once what they held reaches {@code bytes}
 *       (the last entry may take it past). Return the bytes those entries
 *       held, 0 when nothing could go.</li>
 *   <li>Release what you drop during the call, on the calling thread, so
 *       the pool can reuse or give back its memory when the call returns.</li>
 *   <li>{@code reclaimable()} is called often and must be cheap: a counter
 *       the owner keeps, not a walk over its entries. An estimate is fine;
 *       it only weighs the categories against each other.</li>
 *   <li>Allocating from the pool inside {@code shrink} is allowed (a cache
 *       that rewrites an index, say); it never triggers shrinking again from
 *       that call.</li>
 * </ul>
 * A shrinker that throws, answers {@link #BUSY} forever or frees nothing never
 * breaks the pool: the pool counts it, reports it and goes on to the policy
 * at the limit (fail, return null or wait).
 */
public interface Shrinker {

    /** The answer of {@link #shrink} when the owner's lock was busy: nothing was freed, ask again later. */
    long BUSY = -1;

    /**
     * The bytes the owner could free now without harm to what it must keep:
     * what its droppable entries hold. Cheap (a counter), any thread; 0 when
     * nothing can go.
     */
    long reclaimable();

    /**
     * Drops entries holding up to about {@code bytes} bytes and releases
     * their memory, never waiting for a lock.
     *
     * @param bytes how much the pool asks for; at least 1
     * @return the bytes the dropped entries held, 0 when none could go, or
     *         {@link #BUSY} when the owner could not look at its entries now
     */
    long shrink(long bytes);
}
