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
 * {@code SizeClasses.chooseSubpageRunPages}). A released subpage may serve
 * a new run of its class later ({@link #reuse}).
 */
final class Subpage extends Bitmap<Subpage> {

    /** The most elements one subpage holds; the bitmap has this many bits. */
    static final int MAX_ELEMENTS = 512;

    /** The chunk and first page of the run; they change only when a spare subpage serves a new run ({@link #reuse}). */
    Chunk chunk;
    int runStart;
    final int runPages;
    final int sizeIndex;
    final int elementSize;
    /** Whether the subpage is carved, has no element taken and is in its arena's list of such subpages. */
    boolean empty;
    Subpage prevEmpty;
    Subpage nextEmpty;
    /**
     * A subpage of the run of {@code runPages} pages at {@code runStart} of
     * {@code chunk}; its bitmap says which elements are taken, and it is in
     * its arena's list of its size class while it has a free one.
     */
    Subpage(Chunk chunk, int runStart, int runPages, int sizeIndex, int elementSize) {
        super(elementsIn(chunk, runPages, elementSize));
        this.chunk = chunk;
        this.runStart = runStart;
        this.runPages = runPages;
        this.sizeIndex = sizeIndex;
        this.elementSize = elementSize;
    }

    /** How many elements the subpage has: its bitmap's slots. */
    int elements() {
        return slots();
    }

    /**
     * Makes this released, empty subpage (its bitmap all free) serve the run
     * of {@code runPages} pages at {@code runStart} of {@code chunk}, for the
     * same size class: the arena keeps a few released subpages of each class,
     * so that a class whose subpages empty and fill again in turn (a consumer
     * thread's batches, then the producer's refills) does not make new ones.
     * Whether it can: the same number of elements in the new run.
     */
    boolean reuse(Chunk chunk, int runStart) {
        if (!isEmpty() || elementsIn(chunk, runPages, elementSize) != slots()) {
            return false;
        }
        this.chunk = chunk;
        this.runStart = runStart;
        return true;
    }

    /** How many elements of {@code elementSize} bytes a run of {@code runPages} pages of {@code chunk} holds. */
    private static int elementsIn(Chunk chunk, int runPages, int elementSize) {
        return Math.min(MAX_ELEMENTS, (runPages << chunk.pageShift) / elementSize);
    }

    /** Takes a free element and returns its handle; the caller has checked {@link #hasFree()}. */
    long allocate() {
        int element = take();
        if (element < 0) {
            throw new IllegalStateException("subpage has no free element");
        }
        return Chunk.subpageHandle(runStart, runPages, element);
    }

    /**
     * Frees an element.
     *
     * @throws IllegalStateException when the element is not allocated (a double free)
     */
    void free(int element) {
        if (!release(element)) {
            throw new IllegalStateException("element " + element + " of a " + elementSize + "-byte subpage is already free");
        }
    }

    boolean hasFree() {
        return free() > 0;
    }

    boolean isEmpty() {
        return free() == slots();
    }

    int freeElements() {
        return free();
    }
}
