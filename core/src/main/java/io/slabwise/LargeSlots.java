package io.slabwise;

/**
 * What a thread cache keeps above its cached sizes: one released run in the
 * large slot and one released dedicated region in the dedicated slot, each up
 * to {@link #LIMIT} (1 MiB), plain or as a holder kept filled, and in a shared
 * cache a few more dedicated regions kept filled.
 *
 * <pre>
 *  large slot       run (chunk, handle, class)   | or a kept holder of a run fitted to whole pages
 *  dedicated slot   region (its chunk object)    | or a kept holder of a region
 *  extra regions    kept holders of regions, shared caches only (at most {@link #SHARED_EXTRA_REGIONS})
 * </pre>
 *
 * <p>A thread that allocates and releases a large buffer over and over thus
 * takes no lock. A slot in either form holds one thing at a time; what it
 * holds goes back at a sweep that finds it unused, and at every flush: a
 * thread holds at most 1 MiB in each. A kept holder given up goes blank into
 * the cache's {@link HolderStash}; a run back to its arena, a region to the
 * pool's idle {@link DedicatedRegions}.
 *
 * <p>Not thread-safe, as the cache it belongs to: its owner thread, a
 * virtual thread holding a shared cache's lock, or any thread once the owner
 * died. Other threads read {@link #parkedRegions()} for statistics. The
 * cache answers flush requests and checks the arena before it asks a slot to
 * keep or hand out anything.
 */
final class LargeSlots {

    /** The largest run or region a slot keeps: a thread holds at most this much in each. */
    static final int LIMIT = 1 << 20;
    /** Dedicated regions a shared cache keeps filled beyond its slot's one (see {@link #extraRegions}). */
    static final int SHARED_EXTRA_REGIONS = 3;

    private final SizeClasses sizes;
    /** The pool's idle dedicated regions, where the dedicated slot's region goes when it is given up. */
    private final DedicatedRegions dedicated;
    /** The cache's stash, where a kept holder goes blank when its slot gives it up. */
    private final HolderStash stash;
    /** The size classes up to the largest cached size: the ones above them, up to {@link #largestLargeClass}, may take the large slot. */
    private final int cachedClasses;
    /** Classes above the cached ones, up to this index, may take the large slot; -1 when nothing is cached. */
    private final int largestLargeClass;
    /**
     * Requests above {@code fittedAbove} bytes, up to {@code dedicatedAbove}, reserve a run of whole pages (see
     * {@link MemoryPool}); the large slot's kept holder serves those.
     */
    private final int fittedAbove;
    private final int dedicatedAbove;

    /** One released run above the cached sizes (up to {@link #LIMIT}), kept for the next request of its class. */
    private Chunk largeChunk;
    private long largeHandle;
    private int largeSizeIndex = -1;
    private boolean largeUsed;
    /**
     * The large slot's other form: a holder released on this thread and kept
     * filled with its run, while {@link #largeKeptFilled} (then
     * {@link #largeChunk} is null). The field may still name the holder while
     * it is in use, so that keeping it again stores nothing.
     */
    private Allocation largeKept;
    private boolean largeKeptFilled;
    /**
     * One released dedicated region of up to {@link #LIMIT} (and a chunk)
     * this thread allocated, kept (with its chunk object) for this thread's
     * next request it fits; read by other threads only for statistics.
     */
    private Chunk dedicatedSlot;
    private boolean dedicatedUsed;
    /**
     * The dedicated slot's other form: a holder released on this thread and
     * kept filled with its region, while {@link #dedicatedKeptFilled} (then
     * {@link #dedicatedSlot} is null); like {@link #largeKept}, it may still
     * name the holder while it is in use.
     */
    private Allocation dedicatedKept;
    private boolean dedicatedKeptFilled;
    /**
     * A shared cache's kept holders of dedicated regions beyond the slot's
     * one, at most {@link #SHARED_EXTRA_REGIONS}: an arena's virtual threads
     * may hold several large buffers at once, and a region kept here is one
     * that the pool's idle regions need not take back and hand out again
     * (each a compare-and-set or a lock, and a count). Null in a thread's own
     * cache; under the shared cache's lock, read by others for statistics.
     */
    private final Allocation[] extraRegions;
    private int extraRegionCount;

    /**
     * Slots for a cache whose stacks serve the first {@code cachedClasses}
     * classes; {@code extraRegions} kept holders of regions beyond the
     * dedicated slot's one (0 for a thread's own cache).
     */
    LargeSlots(SizeClasses sizes, DedicatedRegions dedicated, HolderStash stash, int cachedClasses, int fittedAbove,
               int dedicatedAbove, int extraRegions) {
        this.sizes = sizes;
        this.dedicated = dedicated;
        this.stash = stash;
        this.cachedClasses = cachedClasses;
        this.largestLargeClass = cachedClasses == 0 ? -1 : SizeClasses.indexOf(Math.min(LIMIT, sizes.chunkSize()));
        this.fittedAbove = fittedAbove;
        this.dedicatedAbove = dedicatedAbove;
        this.extraRegions = extraRegions == 0 ? null : new Allocation[extraRegions];
    }

    // ---- the large slot ---------------------------------------------------------------------

    /**
     * Takes the large slot's run into {@code out} if it is of class
     * {@code sizeIndex} and reserves {@code reserved} bytes; false otherwise.
     */
    boolean takeRun(int sizeIndex, int reserved, Allocation out) {
        if (sizeIndex != largeSizeIndex || runBytes() != reserved) {
            return false;
        }
        out.chunk = largeChunk;
        out.handle = largeHandle;
        largeChunk = null;
        largeSizeIndex = -1;
        largeUsed = true;
        return true;
    }

    /**
     * Keeps a released run of class {@code sizeIndex} (of the cache's arena)
     * in the large slot if its class is one the slot takes and the slot is
     * empty in both forms; false otherwise.
     */
    boolean keepRun(Chunk chunk, long handle, int sizeIndex) {
        if (largeChunk != null || largeKeptFilled || sizeIndex < cachedClasses || sizeIndex > largestLargeClass) {
            return false;
        }
        largeChunk = chunk;
        largeHandle = handle;
        largeSizeIndex = sizeIndex;
        return true;
    }

    /**
     * Keeps a released holder of a run above the cached sizes (of the cache's
     * arena), fitted to whole pages and of a class the large slot takes,
     * filled in the large slot if that is empty; false otherwise.
     */
    boolean keepLargeFilled(Allocation holder) {
        int sizeIndex = holder.sizeIndex;
        if (largeKeptFilled || largeChunk != null || sizeIndex < cachedClasses || sizeIndex > largestLargeClass
                || holder.requested <= fittedAbove) {
            return false;
        }
        if (largeKept != holder) {
            largeKept = holder; // (usually the same holder, back in its slot: no store, no write barrier)
        }
        largeKeptFilled = true;
        holder.kept = true;
        return true;
    }

    /** The size of what the large slot holds: an element of its class, or a run (which may be fitted to whole pages). */
    private int runBytes() {
        return Chunk.isSubpage(largeHandle) ? sizes.size(largeSizeIndex) : Chunk.runPages(largeHandle) * sizes.pageSize();
    }

    /**
     * A kept holder for a request of {@code requested} bytes above the
     * stacked sizes, taken out of its slot (the caller counts it): the
     * dedicated slot's or an extra region's when the request gets a region
     * and that region fits it, the large slot's when it reserves just what
     * the request would; null otherwise. The caller has established that no
     * limit applies and that no flush is asked for.
     */
    Allocation takeFilled(int requested) {
        if (requested > dedicatedAbove) {
            Allocation kept = dedicatedKeptFilled ? takeDedicatedKept(requested) : null;
            return kept != null || extraRegionCount == 0 ? kept : takeExtraRegion(requested);
        }
        return largeKeptFilled ? takeLargeKept(requested) : null;
    }

    /**
     * The large slot's kept holder if it reserves just what a request of
     * {@code requested} bytes would (a run of its whole pages, the request
     * being fitted); null otherwise.
     */
    private Allocation takeLargeKept(int requested) {
        Allocation holder = largeKept;
        if (requested <= fittedAbove || holder.reserved != sizes.pageRound(requested)) {
            return null;
        }
        largeKeptFilled = false;
        largeUsed = true;
        return holder;
    }

    /** Turns the large slot's kept holder, if any, blank into the stash, its run back to the arena. */
    private void unkeepLarge() {
        if (largeKeptFilled) {
            largeKeptFilled = false;
            Allocation holder = largeKept;
            Chunk chunk = holder.chunk;
            long handle = holder.handle;
            holder.clear();
            stash.stash(holder);
            chunk.arena.free(chunk, handle);
        }
    }

    /** Gives the large slot's run, if any, back to its arena, the cache's. */
    private void releaseLarge() {
        if (largeChunk != null) {
            Chunk chunk = largeChunk;
            largeChunk = null;
            largeSizeIndex = -1;
            chunk.arena.free(chunk, largeHandle);
        }
    }

    // ---- the dedicated slot -----------------------------------------------------------------

    /**
     * Takes the dedicated region in the slot if it fits a request of
     * {@code pages} bytes ({@link DedicatedRegions#fits}); null otherwise.
     */
    Chunk takeDedicated(int pages) {
        Chunk chunk = dedicatedSlot;
        if (chunk == null || !DedicatedRegions.fits(chunk.chunkSize(), pages)) {
            return null;
        }
        dedicatedSlot = null;
        dedicatedUsed = true;
        return chunk;
    }

    /**
     * Keeps a released dedicated region of up to {@link #LIMIT}, and no larger
     * than a chunk, in the slot if the slot is free in both forms.
     */
    boolean keepDedicated(Chunk chunk) {
        // one region per slot, in either form: not beside a holder kept filled there
        if (dedicatedSlot != null || dedicatedKeptFilled || !slotTakes(chunk)) {
            return false;
        }
        dedicatedSlot = chunk;
        return true;
    }

    /** Whether the dedicated slot may keep {@code region}: up to {@link #LIMIT} and a chunk. */
    private boolean slotTakes(Chunk region) {
        int size = region.chunkSize();
        return size <= LIMIT && size <= sizes.chunkSize();
    }

    /**
     * Keeps a released holder of a dedicated region the slot may keep (see
     * {@link #keepDedicated}) filled in the dedicated slot, if that is empty
     * (else among the {@link #extraRegions} if there is room); false
     * otherwise. The region stays counted as in the slot.
     */
    boolean keepDedicatedFilled(Allocation holder) {
        if (!slotTakes(holder.chunk)) {
            return false;
        }
        if (dedicatedSlot == null && !dedicatedKeptFilled) {
            if (dedicatedKept != holder) {
                dedicatedKept = holder; // (usually the same holder, back in its slot: no store, no write barrier)
            }
            dedicatedKeptFilled = true;
        } else if (extraRegions != null && extraRegionCount < extraRegions.length) {
            extraRegions[extraRegionCount++] = holder;
        } else {
            return false;
        }
        holder.kept = true;
        return true;
    }

    /**
     * One of the {@link #extraRegions}, the newest whose region fits the
     * pages of a request of {@code requested} bytes; null when none does.
     */
    private Allocation takeExtraRegion(int requested) {
        int pages = sizes.pageRound(requested);
        for (int i = extraRegionCount - 1; i >= 0; i--) {
            Allocation holder = extraRegions[i];
            if (DedicatedRegions.fits(holder.reserved, pages)) {
                int last = --extraRegionCount;
                extraRegions[i] = extraRegions[last];
                extraRegions[last] = null;
                dedicatedUsed = true;
                return holder;
            }
        }
        return null;
    }

    /**
     * The dedicated slot's kept holder if its region fits the pages of a
     * request of {@code requested} bytes (see {@link DedicatedRegions#fits});
     * null otherwise.
     */
    private Allocation takeDedicatedKept(int requested) {
        Allocation holder = dedicatedKept;
        if (!DedicatedRegions.fits(holder.reserved, sizes.pageRound(requested))) {
            return null;
        }
        dedicatedKeptFilled = false;
        dedicatedUsed = true;
        return holder;
    }

    /**
     * The dedicated regions parked here, as {@code {count, bytes}}: the
     * slot's, in either form, and the {@link #extraRegions}. Exact from the
     * owner (or the lock holder); as of a moment from others.
     */
    long[] parkedRegions() {
        long count = 0;
        long bytes = 0;
        Chunk chunk = dedicatedSlot;
        Allocation kept = dedicatedKept; // read by other threads while the owner (or a lock holder) keeps one
        if (chunk != null) {
            count = 1;
            bytes = chunk.chunkSize();
        } else if (dedicatedKeptFilled && kept != null) {
            count = 1;
            bytes = kept.reserved;
        }
        Allocation[] extra = extraRegions;
        if (extra != null) {
            for (int i = Math.min(extraRegionCount, extra.length) - 1; i >= 0; i--) {
                Allocation holder = extra[i]; // null while another thread moves the last one into its place
                if (holder != null) {
                    count++;
                    bytes += holder.reserved;
                }
            }
        }
        return new long[] {count, bytes};
    }

    private void releaseDedicated() {
        if (dedicatedKeptFilled) {
            dedicatedKeptFilled = false;
            unkeepRegion(dedicatedKept);
        }
        while (extraRegionCount > 0) {
            int last = --extraRegionCount;
            Allocation holder = extraRegions[last];
            extraRegions[last] = null;
            unkeepRegion(holder);
        }
        Chunk chunk = dedicatedSlot;
        if (chunk != null) {
            dedicatedSlot = null;
            dedicated.giveBack(chunk); // idle for any thread, and for decay and trim
        }
    }

    /** A kept holder of a dedicated region goes blank into the stash; its region goes as a slotted one would. */
    private void unkeepRegion(Allocation holder) {
        Chunk region = holder.chunk;
        holder.clear();
        stash.stash(holder);
        dedicated.giveBack(region);
    }

    // ---- both slots -------------------------------------------------------------------------

    /** Gives up everything the slots hold (a flush). */
    void flush() {
        unkeepLarge();
        releaseLarge();
        releaseDedicated();
    }

    /** Gives up what the slots held unused since the previous sweep. */
    void sweep() {
        if (!largeUsed) {
            unkeepLarge();
            releaseLarge();
        }
        largeUsed = false;
        if (!dedicatedUsed) {
            releaseDedicated();
        }
        dedicatedUsed = false;
    }

    /** Bytes the large slot holds, in either form; the dedicated slot's are counted as live (see {@link DedicatedRegions}). */
    long cachedBytes() {
        long bytes = largeChunk == null ? 0 : runBytes();
        if (largeKeptFilled) {
            bytes += largeKept.reserved;
        }
        return bytes;
    }
}
