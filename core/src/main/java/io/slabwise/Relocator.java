package io.slabwise;

/**
 * The owner's side of relocation: a cache that owns its entries and can move
 * them registers one for its category ({@link MemoryPool#setRelocator}), and a
 * {@linkplain MemoryPool#compact() compaction} calls it to empty sparsely used
 * chunks, so that they can go back to the operating system.
 *
 * <p>The pool never moves anything itself. It chooses the chunks to empty,
 * marks them, and calls {@link #relocate} once per compaction; the owner walks
 * its own entries and, for each that {@link Evacuation#contains} says lies in
 * such a chunk, asks {@link Evacuation#moveInto} (or
 * {@link Evacuation#movePayload}) for new memory holding a copy of the bytes,
 * swaps its own reference to the new memory, and frees the old, all under its
 * own concurrency control. Readers still holding the old memory keep it valid
 * until they let go (the Netty adapter counts references for that), so the
 * chunk goes back once the last of them has.
 *
 * <p>Removing a category's relocator means its memory never moves again;
 * removing the last one opens the chunks a compaction left closed to new
 * memory for readers of moved entries. While any category has one, the last
 * chunk under the ceiling (when the ceiling holds at least four chunks) is
 * kept for compactions' moves: other allocations are refused a chunk
 * earlier, so that a compaction at the ceiling always has room to move into.
 *
 * <h2>Rules for an implementation</h2>
 * <ul>
 *   <li>Move only entries that are not in use in a way a move would break
 *       (being written, say); call {@link Evacuation#refused()} for those and
 *       leave them where they are. An owner that cannot look at its entries
 *       this time (its lock is busy) calls {@code refused()} once: otherwise
 *       the pool takes the chunks it chose for chunks with nothing movable
 *       and leaves them alone for a while.</li>
 *   <li>{@code relocate} may run on any thread: the caller of
 *       {@code compact()}, the pool's scheduler for background compaction,
 *       or a thread whose allocation found the pool at its ceiling, which may
 *       be inside the owner's own code. So never wait for a lock there: take
 *       it with {@code tryLock}, and if it is busy (or held by the calling
 *       thread) return at once.</li>
 *   <li>Use the evacuation only during the call and on the calling thread.</li>
 *   <li>Stop when {@link Evacuation#budgetLeft()} turns false.</li>
 * </ul>
 */
@FunctionalInterface
public interface Relocator {

    /**
     * Moves the live entries that {@code evacuation} contains, as far as the
     * owner can and the budget allows.
     */
    void relocate(Evacuation evacuation);
}
