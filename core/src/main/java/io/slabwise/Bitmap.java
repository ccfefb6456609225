package io.slabwise;

/**
 * A fixed number of slots, each taken or free, one bit each; the lowest free
 * slot is taken first. Used by subpages (elements of a run) and by the block
 * pool's regions (slots of a block). Not thread-safe: its owner's lock guards it.
 *
 * <pre>
 *  words     [ 0: slots 0..63 | 1: slots 64..127 | ... ]     bit set = slot taken
 *  searchFrom ──▶ the first word that may have a free bit (no free bit lies below it)
 * </pre>
 */
final class Bitmap {

    private final long[] words;
    private final int slots;
    private int free;
    /** No word below this one has a free bit. */
    private int searchFrom;

    Bitmap(int slots) {
        this.slots = slots;
        this.words = new long[(slots + 63) >>> 6];
        this.free = slots;
    }

    /** Takes the lowest free slot and returns it; -1 when every slot is taken. */
    int take() {
        for (int w = searchFrom; w < words.length; w++) {
            long bits = words[w];
            if (bits != -1L) {
                int bit = Long.numberOfTrailingZeros(~bits);
                int slot = (w << 6) + bit;
                if (slot >= slots) {
                    break; // the last word's bits past the end are never free
                }
                words[w] = bits | (1L << bit);
                free--;
                searchFrom = w;
                return slot;
            }
        }
        searchFrom = words.length;
        return -1;
    }

    /** Frees {@code slot}; false when it was free already (a double free), in which case nothing changes. */
    boolean release(int slot) {
        int w = slot >>> 6;
        long mask = 1L << (slot & 63);
        if (slot < 0 || slot >= slots || (words[w] & mask) == 0) {
            return false;
        }
        words[w] &= ~mask;
        free++;
        if (w < searchFrom) {
            searchFrom = w;
        }
        return true;
    }

    /** Free slots. */
    int free() {
        return free;
    }

    /** All slots. */
    int slots() {
        return slots;
    }
}
