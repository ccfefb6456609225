package io.slabwise;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One compaction as one owner sees it: which of its entries must move, and
 * new memory for them. Handed to a {@link Relocator} for the length of one
 * {@link Relocator#relocate} call; not thread-safe, and unusable after the call.
 *
 * <pre>
 *  for each entry the owner holds:
 *      if evacuation.contains(entry):            its memory lies in a chunk being emptied
 *          if the entry is busy:  evacuation.refused()
 *          else if evacuation.moveInto(entry, fresh):   fresh holds a copy, elsewhere
 *              swap the owner's reference to fresh, then free entry (readers may still hold it)
 *      stop when !evacuation.budgetLeft()
 * </pre>
 *
 * Only memory of the owner's {@linkplain #category() category} can move
 * through its evacuation.
 */
public final class Evacuation {

    /** Where general-pool entries move to, and where memory taken for a move that could not be used goes back. */
    private final GeneralPool general;
    private final Category category;
    private final long byteBudget;
    /** The keys of the chunks and blocks being emptied that may hold this category's entries, ascending. */
    private final long[] regionKeys;
    private boolean over;
    long movedBytes;
    long movedEntries;
    long refusedEntries;
    long heldByReaders;
    /** Whether the budget ran out: some owner may have stopped before it looked at every entry. */
    boolean exhausted;
    /** Chunks whose old memory readers still hold after a move: they stay closed to new memory until it comes back. */
    final Set<Chunk> draining = new HashSet<>();

    Evacuation(GeneralPool general, Category category, long byteBudget, long[] regionKeys) {
        this.general = general;
        this.category = category;
        this.byteBudget = byteBudget;
        this.regionKeys = regionKeys;
    }

    /** The category whose entries this evacuation moves. */
    public Category category() {
        return category;
    }

    /**
     * Whether {@code allocation} is live memory of this category in a chunk
     * (or block) being emptied: an entry to move.
     */
    public boolean contains(Allocation allocation) {
        checkUsable();
        Chunk chunk = allocation.chunk;
        return chunk != null && chunk.evacuating && allocation.category == category;
    }

    /**
     * The {@linkplain Allocation#regionKey() region keys} of the chunks and
     * blocks this compaction empties that may hold entries of this category,
     * ascending (a new array each call). An owner that keeps its entries by
     * region key looks only at those under these keys, rather than at every
     * entry; every entry {@link #contains} is under one of them.
     */
    public long[] regionKeys() {
        checkUsable();
        return regionKeys.clone();
    }

    /** Whether the compaction's budget allows more bytes to move; an owner stops walking its entries when not. */
    public boolean budgetLeft() {
        checkUsable();
        if (movedBytes < byteBudget) {
            return true;
        }
        exhausted = true;
        return false;
    }

    /**
     * Fills {@code to} with new memory of the same category, size and
     * allocator as {@code from} (the general pool, in {@code from}'s arena,
     * or a sequential allocator), outside every chunk being emptied, and
     * copies {@code from}'s requested bytes into it. The owner then points
     * its entry at {@code to} and frees {@code from}.
     *
     * @return true when moved; false when the budget is spent, a limit
     *         refused the new memory (a move never waits) or the pool was
     *         closed: the entry stays
     * @throws IllegalArgumentException when {@code from} is not an entry this evacuation {@link #contains}, or is a
     *                                  block pool part (those move whole, with {@link #movePayload})
     * @throws IllegalStateException    when {@code to} is live, or after the {@code relocate} call returned
     */
    public boolean moveInto(Allocation from, Allocation to) {
        checkUsable();
        checkContained(from);
        to.checkNotLive();
        if (BlockPool.isPart(from)) {
            throw new IllegalArgumentException("a block pool payload moves whole: use movePayload");
        }
        if (refusedOver(from.requested)) {
            return false;
        }
        boolean placed = from.releaser != null ? from.releaser.allocateForMove(from, to) : general.allocateForMove(from, to);
        if (!placed) {
            refusedEntries++;
            return false;
        }
        copy(from, to);
        movedBytes += from.requested;
        movedEntries++;
        return true;
    }

    /**
     * New parts for a block pool payload: a payload of the same pool, size
     * and stripe outside every block being emptied, with the bytes of
     * {@code parts} copied in. The owner then points its entry at the new
     * parts and frees the old ones.
     *
     * @param parts a payload's parts as the block pool gave them, in order, at least one of them {@linkplain #contains contained}
     * @return the new parts, or null when the budget is spent or a limit refused them (the entry stays)
     * @throws IllegalArgumentException when no part is contained, or the parts are not one block pool payload
     */
    public List<Allocation> movePayload(List<Allocation> parts) {
        checkUsable();
        Allocation contained = null;
        long size = 0;
        BlockPool pool = null;
        for (Allocation part : parts) {
            if (!BlockPool.isPart(part)) {
                throw new IllegalArgumentException("not a block pool part: " + part);
            }
            BlockPool owner = BlockPool.poolOf(part);
            if (pool != null && owner != pool) {
                throw new IllegalArgumentException("the parts come from two block pools");
            }
            pool = owner;
            if (contained == null && contains(part)) {
                contained = part;
            }
            size += part.requested;
        }
        if (contained == null) {
            throw new IllegalArgumentException("no part of the payload lies in a block being emptied: " + parts);
        }
        if (refusedOver(size)) {
            return null;
        }
        List<Allocation> moved = pool.allocateForMove((int) size, contained);
        if (moved == null) {
            refusedEntries++;
            return null;
        }
        if (moved.size() != parts.size()) {
            moved.forEach(general::free);
            throw new IllegalArgumentException("the parts are not a whole payload of " + size + " bytes: " + parts);
        }
        for (int i = 0; i < parts.size(); i++) {
            if (moved.get(i).requested < parts.get(i).requested) {
                moved.forEach(general::free);
                throw new IllegalArgumentException("the parts are not in the order the block pool gave them: " + parts);
            }
        }
        for (int i = 0; i < parts.size(); i++) {
            copy(parts.get(i), moved.get(i));
        }
        movedBytes += size;
        movedEntries++;
        return moved;
    }

    /**
     * Counts an entry the owner kept in place because it is in use. An owner
     * that cannot look at its entries now at all (its lock is busy) calls it
     * once too: the pool then knows that the chunks it chose may still hold
     * entries that can move later.
     */
    public void refused() {
        checkUsable();
        refusedEntries++;
    }

    /**
     * Counts a moved entry whose old memory ({@code old}, the allocation it
     * was moved from) readers still hold after the owner lets go. Its chunk
     * stays closed to new memory after the compaction, so that it goes back
     * when they release it (a chunk that also holds memory that cannot move
     * opens again at the next compaction, or when the last relocator is
     * removed).
     */
    public void heldByReaders(Allocation old) {
        heldByReaders(List.of(old));
    }

    /** {@link #heldByReaders(Allocation)} for a moved payload of blocks: its old parts. */
    public void heldByReaders(List<Allocation> oldParts) {
        checkUsable();
        heldByReaders++;
        for (Allocation part : oldParts) {
            if (part.chunk != null && part.chunk.evacuating) {
                draining.add(part.chunk);
            }
        }
    }

    /**
     * Refuses a move of {@code bytes} that would pass the budget, or comes
     * after the pool was closed: counts it and notes that owners may have
     * stopped short; returns whether it refused.
     */
    private boolean refusedOver(long bytes) {
        if (movedBytes + bytes <= byteBudget && !general.isClosed()) {
            return false;
        }
        exhausted = true;
        refusedEntries++;
        return true;
    }

    /** Ends the evacuation: the relocate call returned. */
    void end() {
        over = true;
    }

    private void checkUsable() {
        if (over) {
            throw new IllegalStateException("the evacuation is over: use it only during the relocate call");
        }
    }

    private void checkContained(Allocation from) {
        if (!contains(from)) {
            throw new IllegalArgumentException("not an entry of '" + category + "' in a chunk being emptied: " + from);
        }
    }

    /** Copies {@code from}'s requested bytes to the start of {@code to}; absolute, so no buffer object is made. */
    private static void copy(Allocation from, Allocation to) {
        if (to.requested < from.requested) {
            throw new IllegalStateException("new memory smaller than the old: " + to + " < " + from);
        }
        to.chunkMemory().put(to.offset(), from.chunkMemory(), from.offset(), from.requested);
    }
}
