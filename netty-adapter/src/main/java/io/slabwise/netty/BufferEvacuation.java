package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.slabwise.Allocation;
import io.slabwise.Allocator;
import io.slabwise.Evacuation;

import java.util.ArrayList;
import java.util.List;

/**
 * One compaction as a {@link BufferRelocator} sees it, in buffers: which of
 * the owner's buffers lie in chunks being emptied, and copies of them made
 * elsewhere. Usable only during the {@code relocate} call, on its thread.
 *
 * <p>A buffer here is one the owner got from this allocator: from
 * {@code directBuffer} (or a category's view of it), a
 * {@link SequentialByteBufAllocator}, or a {@link BlockByteBufAllocator}
 * (a composite of blocks, which moves whole). A slice or duplicate of it is
 * not: keep the buffer itself as the entry.
 */
public final class BufferEvacuation {

    private final Evacuation evacuation;
    private final SlabwiseAllocator allocator;

    BufferEvacuation(Evacuation evacuation, SlabwiseAllocator allocator) {
        this.evacuation = evacuation;
        this.allocator = allocator;
    }

    /** The category whose buffers this evacuation moves. */
    public String category() {
        return evacuation.category().name();
    }

    /**
     * The region keys of the chunks and blocks this compaction empties that
     * may hold this category's buffers, ascending (see
     * {@link io.slabwise.Evacuation#regionKeys()}). An owner that keeps its
     * buffers by {@link #regionKeysOf region key} looks only at those under
     * these keys, rather than at every buffer it holds.
     */
    public long[] regionKeys() {
        return evacuation.regionKeys();
    }

    /**
     * The {@linkplain Allocation#regionKey() region keys} of the memory
     * under an entry, ascending and distinct: one for a buffer from
     * {@code directBuffer} or a sequential allocator, one per block for a
     * payload of blocks. They stay the same while the buffer lives; a moved
     * buffer's copy has keys of its own. Empty for a released buffer, a
     * slice, or a buffer of no Slabwise allocator.
     */
    public static long[] regionKeysOf(ByteBuf buffer) {
        ByteBuf root = root(buffer);
        if (root.refCnt() != 0 && root instanceof SlabwiseDirectByteBuf) { // one allocation, one key
            Allocation a = ((SlabwiseDirectByteBuf) root).allocation();
            long key = a == null ? -1 : a.regionKey();
            return key < 0 ? new long[0] : new long[] {key};
        }
        List<Allocation> memory = root.refCnt() != 0 ? memoryOf(root) : null;
        if (memory == null) {
            return new long[0];
        }
        return memory.stream().mapToLong(Allocation::regionKey).filter(k -> k >= 0).distinct().sorted().toArray();
    }

    /** Whether the budget allows more bytes to move; stop walking the entries when not. */
    public boolean budgetLeft() {
        return evacuation.budgetLeft();
    }

    /**
     * Whether {@code buffer}, a live buffer of this category, lies (in part,
     * for a composite of blocks) in a chunk or block being emptied: an entry
     * to move. False for a released buffer and for buffers of other
     * categories or allocators.
     */
    public boolean contains(ByteBuf buffer) {
        ByteBuf root = root(buffer);
        if (root.refCnt() == 0) {
            return false;
        }
        if (root instanceof SlabwiseDirectByteBuf) { // the common entry: no list made for it
            Allocation a = ((SlabwiseDirectByteBuf) root).allocation();
            return a != null && evacuation.contains(a);
        }
        return contains(memoryOf(root));
    }

    /** Whether any of an entry's memory (null: not an entry) lies in a chunk or block being emptied. */
    private boolean contains(List<Allocation> memory) {
        if (memory == null) {
            return false;
        }
        for (Allocation a : memory) {
            if (evacuation.contains(a)) {
                return true;
            }
        }
        return false;
    }

    /**
     * A new buffer of the same category, allocator, capacity, maximum
     * capacity and indices as {@code buffer}, in memory outside every chunk
     * being emptied, holding a copy of its bytes (all of its capacity). The
     * owner points its entry at the new buffer and releases its reference to
     * the old one; readers that retained the old one keep reading it, and
     * its memory goes back when the last of them releases it.
     *
     * @return the copy, or null when the budget is spent or a limit refused the new memory (it never waits): the
     *         entry stays where it is
     * @throws IllegalArgumentException when {@link #contains} is false for {@code buffer}
     */
    public ByteBuf move(ByteBuf buffer) {
        ByteBuf root = root(buffer);
        List<Allocation> old = root.refCnt() != 0 ? memoryOf(root) : null;
        if (!contains(old)) {
            throw new IllegalArgumentException("not a buffer of '" + category() + "' in a chunk being emptied: " + buffer);
        }
        ByteBuf moved = root instanceof SlabwiseDirectByteBuf
                ? moveDirect((SlabwiseDirectByteBuf) root)
                : moveComposite((CompositeByteBuf) root, old);
        if (moved == null) {
            return null;
        }
        moved.setIndex(buffer.readerIndex(), buffer.writerIndex());
        if (root.refCnt() > 1) {
            evacuation.heldByReaders(old); // others retained it: its chunk waits for them, closed to new memory
        }
        return moved;
    }

    /**
     * Counts a buffer the owner keeps in place because it is in use now; an
     * owner that cannot look at its buffers this time (its lock is busy)
     * calls it once, so the pool does not take their chunks for chunks with
     * nothing movable.
     */
    public void refused() {
        evacuation.refused();
    }

    /**
     * The pool memory under an entry: a buffer's allocation, or the parts of
     * a payload of blocks, which moves whole. Null when it is no entry: a
     * released buffer, a composite with any other component (one that grew),
     * or a buffer of no Slabwise allocator.
     */
    private static List<Allocation> memoryOf(ByteBuf root) {
        if (root instanceof SlabwiseDirectByteBuf) {
            Allocation a = ((SlabwiseDirectByteBuf) root).allocation();
            return a == null ? null : List.of(a);
        }
        if (!(root instanceof CompositeByteBuf)) {
            return null;
        }
        List<Allocation> parts = new ArrayList<>(((CompositeByteBuf) root).numComponents());
        for (ByteBuf component : (CompositeByteBuf) root) {
            ByteBuf part = root(component);
            Allocation a = part instanceof SlabwiseDirectByteBuf ? ((SlabwiseDirectByteBuf) part).allocation() : null;
            if (a == null || !SlabwiseDirectByteBuf.ENGINE.isBlockPart(a)) {
                return null;
            }
            parts.add(a);
        }
        return parts;
    }

    private ByteBuf moveDirect(SlabwiseDirectByteBuf old) {
        Allocation to = new Allocation();
        if (!evacuation.moveInto(old.allocation(), to)) {
            return null;
        }
        return SlabwiseAllocator.leakAware(DirectBuffers.wrap(old.alloc(), old.source(), to,
                old.maxCapacity(), allocator.bufferKind()));
    }

    private ByteBuf moveComposite(CompositeByteBuf old, List<Allocation> parts) {
        List<Allocation> moved = evacuation.movePayload(parts);
        if (moved == null) {
            return null;
        }
        Allocator growSource = ((SlabwiseDirectByteBuf) root(old.component(0))).source();
        return SlabwiseAllocator.leakAware(BlockByteBufAllocator.composite(old.alloc(), growSource,
                moved, allocator.bufferKind()));
    }

    /**
     * The buffer under the leak detector's wrappers (and duplicates, which
     * show all of it); a slice is its own root, so it is never an entry. A
     * slice of a Slabwise buffer is known by its type, since its capacity may
     * equal its parent's (a slice past the start of a parent that shrank in
     * place); another wrapper whose capacity differs from what it wraps is
     * taken for a slice too.
     */
    private static ByteBuf root(ByteBuf buffer) {
        ByteBuf b = buffer;
        while (!(b instanceof SlabwiseDirectByteBuf) && !(b instanceof CompositeByteBuf) && b.unwrap() != null) {
            if (b instanceof SlabwiseDerivedByteBuf.Slice || b.capacity() != b.unwrap().capacity()) {
                return b; // a slice: its bytes are not the entry's
            }
            b = b.unwrap();
        }
        return b;
    }
}
