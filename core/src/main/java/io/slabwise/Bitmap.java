package io.slabwise;

/**
 * A list node with a fixed number of slots, each taken or free, one bit each;
 * the lowest free slot is taken first. Subpages (elements of a run) and the
 * block pool's regions (slots of a block) are such nodes, so a node and its
 * bits are one object. Not thread-safe: its owner's lock guards it.
 *
 * <pre>
 *  first     slots 0..63 (bits past the last slot set: never free)
 *  more      [ slots 64..127 | 128..191 | ... ]    null up to 64 slots
 *  bit set = slot taken;  searchFrom ──▶ the first word that may have a free bit
 * </pre>
 *
 * Up to 64 slots (a subpage of 4 KiB elements has two) the bits are a field
 * of the node, without an array: what a live small buffer costs on the heap
 * is mostly its share of such a node.
 *
 * @param <T> the node type
 */
abstract class Bitmap<T extends Bitmap<T>> extends ListNode<T> {

    /** Slots 0 to 63. */
    private long first;
    /** Slots 64 and up, 64 a word; null when there are at most 64 slots. */
    private final long[] more;
    private final int slots;
    private int free;
    /** No word below this one has a free bit (word 0 is {@link #first}). */
    private int searchFrom;

    Bitmap(int slots) {
        if (slots < 1) {
            throw new IllegalArgumentException("a bitmap has at least one slot, not " + slots);
        }
        this.slots = slots;
        this.free = slots;
        int words = (slots + 63) >>> 6;
        this.more = words > 1 ? new long[words - 1] : null;
        int past = slots & 63; // bits of the last word past the last slot, set once and for all
        if (past != 0) {
            setWord(words - 1, -1L << past);
        }
    }

    private long word(int w) {
        return w == 0 ? first : more[w - 1];
    }

    private void setWord(int w, long bits) {
        if (w == 0) {
            first = bits;
        } else {
            more[w - 1] = bits;
        }
    }

    /** Takes the lowest free slot and returns it; -1 when every slot is taken. */
    final int take() {
        int words = more == null ? 1 : more.length + 1;
        for (int w = searchFrom; w < words; w++) {
            long bits = word(w);
            if (bits != -1L) {
                int bit = Long.numberOfTrailingZeros(~bits);
                setWord(w, bits | (1L << bit));
                free--;
                searchFrom = w;
                return (w << 6) + bit;
            }
        }
        searchFrom = words;
        return -1;
    }

    /** Frees {@code slot}; false when it was free already (a double free) or is no slot, in which case nothing changes. */
    final boolean release(int slot) {
        if (slot < 0 || slot >= slots) {
            return false;
        }
        int w = slot >>> 6;
        long mask = 1L << (slot & 63);
        long bits = word(w);
        if ((bits & mask) == 0) {
            return false;
        }
        setWord(w, bits & ~mask);
        free++;
        if (w < searchFrom) {
            searchFrom = w;
        }
        return true;
    }

    /** Free slots. */
    final int free() {
        return free;
    }

    /** All slots. */
    final int slots() {
        return slots;
    }
}
