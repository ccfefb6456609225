package io.slabwise;

/**
 * The table of size classes: the rounded sizes the pool actually reserves.
 *
 * <pre>
 *  index   0    1    2 ...   7  |  8    9   ...  15  | 16 ...       | ...
 *  size   16   32   48 ...  128 | 144  160  ...  256 | 288 ... 512  | ... chunkSize
 *         \__ 16-byte quantum _/ \__ 8 steps per doubling: 2^k + j * 2^(k-3), j = 1..8 __/
 * </pre>
 *
 * <p>Up to 128 bytes the classes are multiples of 16. Above that every doubling
 * {@code (2^k, 2^(k+1)]} is cut into eight equal steps, so a request is never
 * rounded up by more than one eighth of its group: the reserved size is at most
 * 12.5% over the requested size (Netty's four steps per doubling allow 25%).
 *
 * <p>A class whose size is a whole number of pages is served as a <em>run</em>;
 * every other class is <em>small</em> and is served from a <em>subpage</em>: a
 * run cut into equal elements. The class table ends at the chunk size; larger
 * requests are <em>huge</em>.
 */
final class SizeClasses {

    /** The smallest class and the quantum below {@link #LINEAR_LIMIT}. */
    static final int QUANTUM = 16;
    private static final int QUANTUM_SHIFT = 4;
    /** Classes up to this size are spaced by {@link #QUANTUM}. */
    static final int LINEAR_LIMIT = 128;
    private static final int LINEAR_CLASSES = LINEAR_LIMIT / QUANTUM;
    private static final int LINEAR_LIMIT_SHIFT = 7;
    /** Steps per doubling above {@link #LINEAR_LIMIT}. */
    private static final int STEPS_SHIFT = 3;
    private static final int STEPS = 1 << STEPS_SHIFT;

    private final int pageSize;
    private final int chunkSize;
    private final int[] sizes;
    private final boolean[] small;
    /** For small classes: how many pages one subpage run spans. */
    private final int[] subpageRunPages;

    SizeClasses(int pageSize, int chunkSize) {
        this.pageSize = pageSize;
        this.chunkSize = chunkSize;
        int count = indexOf(chunkSize) + 1;
        sizes = new int[count];
        small = new boolean[count];
        subpageRunPages = new int[count];
        for (int i = 0; i < count; i++) {
            int size = sizeOfIndex(i);
            sizes[i] = size;
            small[i] = size < pageSize || size % pageSize != 0;
            subpageRunPages[i] = small[i] ? chooseSubpageRunPages(size, pageSize, chunkSize / pageSize) : 0;
        }
        if (sizes[count - 1] != chunkSize) {
            throw new IllegalStateException("chunk size " + chunkSize + " is not a size class");
        }
    }

    /** Returns the class index for a request of {@code size} bytes; {@code 1 <= size <= chunkSize}. */
    static int indexOf(int size) {
        if (size <= LINEAR_LIMIT) {
            return size <= QUANTUM ? 0 : ((size - 1) >>> QUANTUM_SHIFT);
        }
        int k = 31 - Integer.numberOfLeadingZeros(size - 1); // 2^k < size <= 2^(k+1)
        int step = (size - 1 - (1 << k)) >>> (k - STEPS_SHIFT);
        return LINEAR_CLASSES + ((k - LINEAR_LIMIT_SHIFT) << STEPS_SHIFT) + step;
    }

    private static int sizeOfIndex(int index) {
        if (index < LINEAR_CLASSES) {
            return (index + 1) << QUANTUM_SHIFT;
        }
        int group = (index - LINEAR_CLASSES) >>> STEPS_SHIFT;
        int step = (index - LINEAR_CLASSES) & (STEPS - 1);
        int k = group + LINEAR_LIMIT_SHIFT;
        return (1 << k) + ((step + 1) << (k - STEPS_SHIFT));
    }

    /**
     * Picks the run length of a subpage: the fewest pages whose tail (the part
     * too short for another element) is at most 1/64 of the run, capped so a
     * subpage never holds more than {@link Subpage#MAX_ELEMENTS} elements. The
     * run is carved from one chunk, so it is at most {@code chunkPages} long;
     * when no run that short meets the 1/64 bound (small chunks), the one that
     * wastes the smallest share of itself is taken.
     */
    private static int chooseSubpageRunPages(int elementSize, int pageSize, int chunkPages) {
        int best = -1;
        long bestTail = 0;
        long bestRunBytes = 1;
        for (int pages = Math.max(1, (elementSize + pageSize - 1) / pageSize); pages <= chunkPages; pages++) {
            long runBytes = (long) pages * pageSize;
            long tail = runBytes % elementSize;
            long elements = runBytes / elementSize;
            if (elements >= Subpage.MAX_ELEMENTS || tail * 64 <= runBytes) {
                return pages;
            }
            if (best < 0 || tail * bestRunBytes < bestTail * runBytes) {
                best = pages;
                bestTail = tail;
                bestRunBytes = runBytes;
            }
        }
        return best;
    }

    int count() {
        return sizes.length;
    }

    int size(int index) {
        return sizes[index];
    }

    boolean isSmall(int index) {
        return small[index];
    }

    int subpageRunPages(int index) {
        return subpageRunPages[index];
    }

    int pageSize() {
        return pageSize;
    }

    /** {@code size} rounded up to whole pages (at most the largest whole-page int). */
    int pageRound(int size) {
        long rounded = ((long) size + pageSize - 1) & -pageSize;
        return (int) Math.min(rounded, Integer.MAX_VALUE & -pageSize);
    }

    int chunkSize() {
        return chunkSize;
    }
}
