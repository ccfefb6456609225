package io.slabwise;


/**
 * A block of native memory cut into pages, handed out as runs of contiguous
 * pages; its size, a power of two, is fixed when its arena takes it (an
 * arena's first chunks are smaller than the pool's chunk size). Every method
 * runs under the owning {@link Arena}'s lock.
 *
 * <h2>Free runs</h2>
 * Free space is kept as maximal runs of free pages; two free runs are never
 * adjacent, because {@link #freeRun} merges a freed run with its free
 * neighbours. Each free run is recorded at both ends so that either neighbour
 * finds it in O(1). A run of four pages or more sits in a list of runs of its
 * length, whose links it keeps in its own second and third pages' marks (no
 * other reader looks there: a neighbour only reads a run's ends); a shorter
 * run is a bit in one of three page bitmaps, by length:
 *
 * <pre>
 *  page:        0   1   2   3   4   5   6   7   8   9 ...
 *             [ used  ][ free run of 5       ][used][ free run of 1 ] ...
 *  runAt[2] = 5                  (first page of a free run: its length, up to 32,768 = END)
 *  runAt[3], runAt[4]            (a run of 4 pages or more: the next and previous run of its length)
 *  runAt[6] = END | (2 + 1)       (last page of a free run of two pages or more: END | (start + 1))
 *  runAt[p] = 0                  (any other page)
 *  lists by length 4 and up: len 5 -> {2, ...}; short runs: bit 8 of the bitmap of length 1
 *  a bitmap over lengths marks the lengths that have a free run
 * </pre>
 *
 * Allocation is best fit: the shortest free run that is long enough (a scan of
 * the length bitmap), split from its low end; among short runs of the same
 * length the lowest, among longer ones the last freed. Both operations are
 * O(pages/64) at worst and allocate nothing.
 *
 * <h2>Heap</h2>
 * A chunk's metadata is what a pool holds on the heap per GiB of native
 * memory, so it is kept small: a {@code char} per page for the run ends (and
 * the lists' links, inside the free runs), a {@code char} per length for the
 * lists' heads, three bits per page for the short runs (a chunk has at most
 * {@link #MAX_PAGES} pages: 256 MiB of 8 KiB pages), and the table of
 * subpages only once the chunk carves one (a chunk of large runs never
 * does): about 2.4 KiB for a 4 MiB chunk of 8 KiB pages, 4.4 KiB with
 * subpages.
 *
 * <h2>Handles</h2>
 * An allocation inside a chunk is named by a {@code long} handle:
 * <pre>
 *  63          48 47          32  31   30 .. 16   15 .. 0
 *  [ run start  ][ run pages   ][ S ][ unused  ][ element ]
 * </pre>
 * {@code S} marks an element of a subpage, whose run is given by the first two
 * fields; {@code element} is then the element's index in the subpage bitmap.
 */
final class Chunk {

    private static final long SUBPAGE_BIT = 1L << 31;
    /** The last {@link #key} given. */
    private static final java.util.concurrent.atomic.AtomicLong KEYS = new java.util.concurrent.atomic.AtomicLong();

    /** The most pages a chunk has: a run's start and length fit the 15 bits of a {@link #runAt} mark. */
    static final int MAX_PAGES = 1 << 15;
    /** In {@link #runAt}, the mark of a free run's last page, beside its start + 1 (at least 1); alone, a length of 32,768. */
    private static final char END = 0x8000;
    /** The end of a list of free runs. */
    private static final char NONE = 0xFFFF;
    /**
     * The shortest free runs kept in lists: a run of this many pages has two
     * pages between its ends for its links; shorter ones are bits in
     * {@link #shortRuns}.
     */
    private static final int LISTED = 4;

    final Arena arena;
    final NativeRegion region;
    /**
     * A number no other chunk or region of this JVM ever has: what
     * {@link Allocation#regionKey()} gives for the allocations in it.
     */
    final long key = KEYS.incrementAndGet();
    /** The slot of this chunk in its arena's table; names it in remote-free entries. */
    final int id;
    final boolean huge;
    /** For a dedicated region in the pool's idle list: when it was listed, in ticker nanoseconds. */
    long idleSince;
    final int pageShift;
    final int pages;

    /** The ends of the free runs, and the links of the longer ones: see the class comment. */
    private final char[] runAt;
    /** The first of the free runs of each length from {@link #LISTED} up; {@link #NONE} for none. */
    private final char[] listHead;
    /**
     * Free runs shorter than {@link #LISTED} pages: bit {@code p} of bitmap
     * {@code length - 1} is set when a run of that length starts at page {@code p}.
     */
    private final long[][] shortRuns;
    /** For each bitmap of {@link #shortRuns}: no word before this one has a bit set. */
    private final int[] shortFrom;
    /** How many free runs of each short length there are. */
    private final int[] shortCount;
    /** Bit {@code len} is set when there is a free run of length {@code len}. */
    private final long[] lengthsPresent;
    /** The subpage whose run starts at a page, if any; null until the chunk carves its first subpage. */
    private Subpage[] subpages;

    int freePages;
    /** Subpages carved from this chunk right now. */
    int subpageCount;
    /** Bytes handed out of this chunk, to live buffers or to thread caches (a subpage counts its taken elements). */
    long usedBytes;
    /** When the chunk last became completely free, in ticker nanoseconds. */
    long idleSinceNanos;
    /** Whether the chunk is in its arena's {@link IdleChunks}; with its links there. */
    boolean idle;
    Chunk idlePrev;
    Chunk idleNext;
    /** The chunk's slot in its arena's {@link PlacementIndex}; -1 when it is in none. */
    int placementSlot = -1;
    /** The band of {@link #usedBytes} its arena counts the chunk in (see {@link #occupancyBandOf}), and its links there. */
    int occupancyBand;
    Chunk bandPrev;
    Chunk bandNext;
    /**
     * Whether a compaction is emptying this chunk (see {@link Compaction}):
     * nothing new is placed in it, and memory freed in it goes straight back
     * to its arena instead of into a thread cache. Set and cleared by the
     * compaction, under the arena's lock for an arena chunk; read by any
     * thread, so an allocation racing with the setting may still land in it
     * (it is then moved by the next compaction).
     */
    volatile boolean evacuating;
    /**
     * Whether the chunk is lent whole to a sequential allocator, which
     * carves it itself: a compaction empties it only through that allocator.
     * Written under the arena's lock together with the chunk's allocation
     * and its free ({@link Arena#lendWhole}, {@link Arena#takeBackWhole}), so
     * that under the lock it says whether the chunk is lent; read by any thread.
     */
    volatile boolean lentWhole;

    Chunk(Arena arena, NativeRegion region, int id, int pageShift) {
        this.arena = arena;
        this.region = region;
        this.id = id;
        this.huge = false;
        this.pageShift = pageShift;
        this.pages = region.size() >>> pageShift;
        if (pages > MAX_PAGES) {
            throw new IllegalArgumentException("a chunk has at most " + MAX_PAGES + " pages, not " + pages);
        }
        runAt = new char[pages];
        listHead = new char[pages + 1];
        java.util.Arrays.fill(listHead, NONE);
        shortRuns = new long[LISTED - 1][(pages >>> 6) + 1];
        shortFrom = new int[LISTED - 1];
        shortCount = new int[LISTED - 1];
        lengthsPresent = new long[(pages >>> 6) + 1];
        freePages = 0;
        insertFreeRun(0, pages);
    }

    /** A dedicated region for one huge allocation; it has no page structure. */
    Chunk(Arena arena, NativeRegion region) {
        this.arena = arena;
        this.region = region;
        this.id = -1;
        this.huge = true;
        this.pageShift = 0;
        this.pages = 0;
        runAt = null;
        listHead = null;
        shortRuns = null;
        shortFrom = shortCount = null;
        lengthsPresent = null;
    }

    static long runHandle(int start, int runPages) {
        return ((long) start << 48) | ((long) runPages << 32);
    }

    static long subpageHandle(int runStart, int runPages, int element) {
        return runHandle(runStart, runPages) | SUBPAGE_BIT | element;
    }

    static int runStart(long handle) {
        return (int) (handle >>> 48);
    }

    static int runPages(long handle) {
        return (int) (handle >>> 32) & 0xFFFF;
    }

    static boolean isSubpage(long handle) {
        return (handle & SUBPAGE_BIT) != 0;
    }

    static int element(long handle) {
        return (int) handle & 0xFFFF;
    }

    /**
     * Byte offset of the allocation named by {@code handle} inside this chunk;
     * {@code elementSize} is the size of its class, which a subpage's elements
     * all have (the caller knows it, so no subpage is looked up).
     */
    long offset(long handle, int elementSize) {
        if (huge) {
            return 0;
        }
        long runOffset = (long) runStart(handle) << pageShift;
        return isSubpage(handle) ? runOffset + (long) element(handle) * elementSize : runOffset;
    }

    int chunkSize() {
        return region.size();
    }

    boolean isEmpty() {
        return freePages == pages;
    }

    /**
     * The band of occupancy {@code usedBytes} puts this chunk in: 0 idle,
     * 1 under 25%, 2 25-50%, 3 50-75%, 4 75% up to full, 5 full (see
     * {@link PoolStats#chunksByOccupancy()}).
     */
    int occupancyBandOf(long usedBytes) {
        if (usedBytes <= 0) {
            return 0;
        }
        long size = (long) pages << pageShift; // a power of two
        return usedBytes >= size ? 5 : 1 + (int) Math.min(3, (usedBytes << 2) >>> Long.numberOfTrailingZeros(size));
    }

    /** The length of the longest free run, in pages. */
    int longestFreeRun() {
        for (int w = lengthsPresent.length - 1; w >= 0; w--) {
            long bits = lengthsPresent[w];
            if (bits != 0) {
                return (w << 6) + 63 - Long.numberOfLeadingZeros(bits);
            }
        }
        return 0;
    }

    /** Takes a run of {@code runPages} pages; returns its handle, or -1 when no free run is long enough. */
    long allocateRun(int runPages) {
        int length = shortestFreeRunAtLeast(runPages);
        if (length < 0) {
            return -1;
        }
        int start = length < LISTED ? lowestShortRun(length) : listHead[length];
        removeFreeRun(start, length);
        if (length > runPages) {
            insertFreeRun(start + runPages, length - runPages);
        }
        return runHandle(start, runPages);
    }

    /** Gives back the run {@code [start, start + runPages)}, merging it with free neighbours. */
    void freeRun(int start, int runPages) {
        int end = start + runPages; // exclusive
        if (start > 0) {
            int before = startOfFreeRunEndingAt(start - 1);
            if (before >= 0) {
                removeFreeRun(before, start - before);
                start = before;
            }
        }
        if (end < pages && runAt[end] != 0) { // a free run starts right after (it cannot end there: end - 1 is ours)
            int afterLength = runAt[end];
            removeFreeRun(end, afterLength);
            end += afterLength;
        }
        insertFreeRun(start, end - start);
    }

    /** Records the subpage whose run starts at {@code runStart}, or with null that it is gone. */
    void setSubpage(int runStart, Subpage subpage) {
        if (subpages == null) {
            if (subpage == null) {
                return;
            }
            subpages = new Subpage[pages];
        }
        Subpage old = subpages[runStart];
        subpages[runStart] = subpage;
        subpageCount += (subpage != null ? 1 : 0) - (old != null ? 1 : 0);
    }

    Subpage subpageAt(int runStart) {
        return subpages == null ? null : subpages[runStart];
    }

    /** The first page of the free run whose last page is {@code page}, or -1 when no free run ends there. */
    private int startOfFreeRunEndingAt(int page) {
        int v = runAt[page];
        if (v > END) {
            return (v & ~END) - 1;
        }
        // a length starts a free run: one of a single page ends there too; a longer one cannot hold page + 1,
        // which the caller is freeing
        return v == 1 ? page : -1;
    }


    private int shortestFreeRunAtLeast(int length) {
        int w = length >>> 6;
        long bits = lengthsPresent[w] & (-1L << (length & 63));
        while (true) {
            if (bits != 0) {
                return (w << 6) + Long.numberOfTrailingZeros(bits);
            }
            if (++w == lengthsPresent.length) {
                return -1;
            }
            bits = lengthsPresent[w];
        }
    }

    /** The first page of the lowest free run of {@code length} pages, one of which there is, shorter than {@link #LISTED}. */
    private int lowestShortRun(int length) {
        long[] bits = shortRuns[length - 1];
        int w = shortFrom[length - 1];
        while (bits[w] == 0) {
            w++;
        }
        shortFrom[length - 1] = w;
        return (w << 6) + Long.numberOfTrailingZeros(bits[w]);
    }

    private void insertFreeRun(int start, int length) {
        runAt[start] = (char) length; // 32,768 is END alone, which no last page's mark is
        if (length > 1) {
            runAt[start + length - 1] = (char) (END | (start + 1)); // start + 1 < MAX_PAGES: the run has two pages
        }
        boolean first;
        if (length < LISTED) {
            int i = length - 1;
            shortRuns[i][start >>> 6] |= 1L << (start & 63);
            shortFrom[i] = Math.min(shortFrom[i], start >>> 6);
            first = shortCount[i]++ == 0;
        } else {
            char head = listHead[length];
            runAt[start + 1] = head; // next
            runAt[start + 2] = NONE; // previous
            if (head != NONE) {
                runAt[head + 2] = (char) start;
            }
            listHead[length] = (char) start;
            first = head == NONE;
        }
        if (first) {
            lengthsPresent[length >>> 6] |= 1L << (length & 63);
        }
        freePages += length;
    }

    private void removeFreeRun(int start, int length) {
        boolean last;
        if (length < LISTED) {
            int i = length - 1;
            shortRuns[i][start >>> 6] &= ~(1L << (start & 63));
            last = --shortCount[i] == 0;
        } else {
            char n = runAt[start + 1];
            char p = runAt[start + 2];
            if (p != NONE) {
                runAt[p + 1] = n;
            } else {
                listHead[length] = n;
            }
            if (n != NONE) {
                runAt[n + 2] = p;
            }
            runAt[start + 1] = 0; // pages of a used run are all 0
            runAt[start + 2] = 0;
            last = listHead[length] == NONE;
        }
        if (last) {
            lengthsPresent[length >>> 6] &= ~(1L << (length & 63));
        }
        runAt[start] = 0;
        runAt[start + length - 1] = 0;
        freePages -= length;
    }
}
