package io.slabwise;

/**
 * Released subpage objects an arena keeps per size class, to serve the next
 * subpages of the class without making new ones: a class whose subpages
 * empty and fill again in turn (a consumer thread's batches, then the
 * producer's refills) reuses the same objects. Heap only: a spare names no
 * chunk, so it keeps no chunk from going back.
 *
 * <pre>
 *  spares[class] = [ s0 s1 s2 ... ]   a stack, at most {@link #PER_CLASS}; counts[class] its depth
 * </pre>
 *
 * Not thread-safe: the arena's lock guards it.
 */
final class SpareSubpages {

    /**
     * The most spares kept per size class: about 7 KiB for a class that keeps
     * them all. Enough for the subpages that half a thread cache's stack,
     * given back at once, can empty (128 entries of a class with two
     * elements a subpage).
     */
    static final int PER_CLASS = 64;

    private final Subpage[][] spares;
    private final int[] counts;

    SpareSubpages(int sizeClasses) {
        spares = new Subpage[sizeClasses][];
        counts = new int[sizeClasses];
    }

    /** Keeps a released, empty subpage for a later run of its class, unless its class keeps {@link #PER_CLASS}. */
    void keep(Subpage subpage) {
        int sizeIndex = subpage.sizeIndex;
        int n = counts[sizeIndex];
        if (n == PER_CLASS) {
            return;
        }
        Subpage[] stack = spares[sizeIndex];
        if (stack == null) {
            spares[sizeIndex] = stack = new Subpage[PER_CLASS];
        }
        subpage.chunk = null; // the chunk may go back to the OS: a spare names none
        stack[n] = subpage;
        counts[sizeIndex] = n + 1;
    }

    /** A spare of class {@code sizeIndex} made to serve the run at {@code runStart} of {@code chunk}, or null. */
    Subpage take(int sizeIndex, Chunk chunk, int runStart) {
        int n = counts[sizeIndex];
        if (n == 0) {
            return null;
        }
        Subpage[] stack = spares[sizeIndex];
        Subpage subpage = stack[--n];
        stack[n] = null;
        counts[sizeIndex] = n;
        // taken off first: a spare that cannot serve this run is dropped, not left on top to refuse every later one
        return subpage.reuse(chunk, runStart) ? subpage : null;
    }
}
