package io.slabwise;

/**
 * A run cut into equal elements of one small size class, with a bitmap of
 * which elements are taken. Every method runs under the owning arena's lock.
 *
 * <pre>
 *  run (pages)   [ e0 | e1 | e2 | e3 | ... | e(n-1) | tail ]
 *  bitmap        bit i set  =  element i is allocated
 * </pre>
 *
 * A subpage with free elements sits in its arena's list for its size class;
 * it leaves the list when full and comes back at the first free. The tail is
 * the few bytes too short for one more element (see
 * {@code SizeClasses.chooseSubpageRunPages}).
 */
final class Subpage {

    /** The most elements one subpage holds; the bitmap has this many bits. */
    static final int MAX_ELEMENTS = 512;

    final Chunk chunk;
    final int runStart;
    final int runPages;
    final int sizeIndex;
    final int elementSize;
    final int elements;
    private final long[] bitmap;
    private int free;
    /** A word of the bitmap that may have a free bit; searching starts there. */
    private int searchFrom;

    /** Links in the arena's list of subpages with free elements for this size class. */
    Subpage prev;
    Subpage next;
    boolean inList;

    Subpage(Chunk chunk, int runStart, int runPages, int sizeIndex, int elementSize) {
        this.chunk = chunk;
        this.runStart = runStart;
        this.runPages = runPages;
        this.sizeIndex = sizeIndex;
        this.elementSize = elementSize;
        this.elements = Math.min(MAX_ELEMENTS, (runPages << chunk.pageShift) / elementSize);
        this.bitmap = new long[(elements + 63) >>> 6];
        this.free = elements;
    }

    /** Takes a free element and returns its handle; the caller has checked {@link #hasFree()}. */
    long allocate() {
        for (int w = searchFrom; w < bitmap.length; w++) {
            long bits = bitmap[w];
            if (bits != -1L) {
                int bit = Long.numberOfTrailingZeros(~bits);
                int element = (w << 6) + bit;
                if (element < elements) {
                    bitmap[w] = bits | (1L << bit);
                    free--;
                    searchFrom = w;
                    return Chunk.subpageHandle(runStart, runPages, element);
                }
            }
        }
        throw new IllegalStateException("subpage has no free element");
    }

    /**
     * Frees an element.
     *
     * @throws IllegalStateException when the element is not allocated (a double free)
     */
    void free(int element) {
        int w = element >>> 6;
        long mask = 1L << (element & 63);
        if ((bitmap[w] & mask) == 0) {
            throw new IllegalStateException("element " + element + " of a " + elementSize + "-byte subpage is already free");
        }
        bitmap[w] &= ~mask;
        free++;
        if (w < searchFrom) {
            searchFrom = w;
        }
    }

    boolean hasFree() {
        return free > 0;
    }

    boolean isEmpty() {
        return free == elements;
    }

    int freeElements() {
        return free;
    }
}
