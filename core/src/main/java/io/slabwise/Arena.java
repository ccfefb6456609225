package io.slabwise;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * A set of chunks shared by a group of threads, guarded by one lock (the arena
 * object's monitor). Thread caches in front of it absorb most allocations and
 * frees; what reaches the arena is a cache miss, a cache overflow, or a free
 * handed over by a thread bound to another arena through {@link RemoteFreeQueue}.
 *
 * <pre>
 *   other arenas' threads ──offer──▶ remoteFrees ──drain (≤ DRAIN_BATCH, under the lock)──┐
 *                                                                                       ▼
 *   thread cache ──miss / refill──▶ ┌──────────────── arena (monitor) ────────────────────┐
 *                ◀──batch─────────  │ subpageHeads[class] ⇄ subpage ⇄ subpage (with room) │
 *                ──overflow/flush─▶ │ chunks: [###4....] [#######.] [........] (idle)     │
 *                                   └────────────┬───────────────────────────▲───────────┘
 *                                     new chunk  │ CommittedMemory.commit     │ decommit: idle past the
 *                                                ▼                            │ decay, or beyond maxIdleChunks
 *                                           chunk source ─────────────────────┘
 * </pre>
 *
 * <h2>Choosing a chunk</h2>
 * A run goes into the <em>oldest</em> chunk (the first taken of those the
 * arena holds) that has a long enough free run; a new chunk is taken only when
 * no chunk fits. New allocations thus pack into a stable set of old chunks
 * while the newest chunks, filled last, hold only what did not fit and drain
 * first, so they become idle and go back to the operating system (the
 * fullest chunk with room, which it replaced, refilled chunks that had begun
 * to drain: 1.25 times the requested bytes committed on a FIFO log cache,
 * against 1.15).
 *
 * <h2>Chunk sizes</h2>
 * An arena's first chunks are small ({@code firstChunkSize}, 256 KiB by
 * default) and each new chunk grows with what the arena holds up to the
 * pool's chunk size ({@link #newChunkSize}); a run always gets a chunk it
 * fits. Chunks of every size live side by side in the oldest-first order, so
 * the small first chunks are the first to be refilled.
 *
 * <h2>Small sizes</h2>
 * For each small size class the arena keeps a doubly linked list of subpages
 * that have a free element. A subpage that becomes empty gives its run back to
 * its chunk unless it is the only subpage of its class.
 *
 * <h2>Idle chunks</h2>
 * A chunk with no allocation left is idle. Up to {@code maxIdleChunks} idle
 * chunks are kept for reuse; the rest go back to the chunk source at once, and
 * {@link #trim} returns every idle chunk.
 */
final class Arena implements Compaction.Evacuable {

    /**
     * The most remote frees a lock holder applies before its own work (an
     * allocation, a free, a refill). It bounds how long other threads' frees
     * keep the lock, however fast they arrive; the rest wait in order for the
     * next holder. A producer that finds the queue full takes the lock itself,
     * and its drain takes the next batch, so the queue always moves. A
     * snapshot or a trim, which must see every free handed over, takes up to
     * the queue's capacity instead: all that a quiet queue holds.
     */
    static final int DRAIN_BATCH = 256;

    /**
     * A new chunk is at most 1/GROWTH of what the arena holds (see
     * {@link #newChunkSize}): with 256 KiB first chunks and 4 MiB chunks,
     * an arena takes 256 KiB chunks up to 4 MiB, 512 KiB ones up to 8 MiB,
     * and so on to whole chunks from 32 MiB.
     */
    static final int GROWTH = 8;

    /** Where chunks come from and go back to. */
    private final CommittedMemory committed;
    /** Times how long chunks stay idle. */
    private final Ticker ticker;
    final int index;
    final SizeClasses sizes;
    private final int pageShift;
    private final int maxIdleChunks;
    /** The size of this arena's first chunks; see {@link #newChunkSize}. */
    private final int firstChunkSize;

    /** Chunks by id; a thread cache reads it without the lock ({@link #chunk}). */
    private final ChunkTable chunksById = new ChunkTable();
    /** The chunks, oldest first, indexed by their longest free run: where a run goes. */
    private final PlacementIndex placement = new PlacementIndex();
    /** The chunks with nothing allocated, in the order they became idle. */
    private final IdleChunks idle = new IdleChunks();
    /** The chunks by band of occupancy, kept as they fill and drain: a compaction looks at the sparse ones only. */
    private final OccupancyBands bands = new OccupancyBands();
    /** Free pages of all chunks, idle ones included. */
    private long freePages;
    /** Carved subpages with no element taken; a trim gives their runs back. */
    private final EmptySubpages emptySubpages = new EmptySubpages();
    /** Per small size class, the bytes of the free elements of its carved subpages: room only its entries fit. */
    private final long[] freeElementBytes;
    /** Bytes of the chunks this arena holds, idle ones included; written under the lock, read by any thread. */
    volatile long heldBytes;
    private final Subpage[] subpageHeads;
    /** Released subpage objects kept per size class to serve new runs of the class. */
    private final SpareSubpages spareSubpages;
    final RemoteFreeQueue remoteFrees;
    /** Where a drain of {@link #remoteFrees} puts each entry: the queue sees a consumer, not the arena. */
    private final LongConsumer remoteFreeSink = this::freeEntry;
    /** Threads whose caches are bound to this arena. */
    final AtomicInteger boundThreads = new AtomicInteger();
    /** The refill under way while {@link #allocateBatch} drains remote frees; class -1 when none. */
    private int refillClass = -1;
    /** The pages of the refilled class when it is a run class, else -1. */
    private int refillRunPages = -1;
    private int[] refillChunkIds;
    private long[] refillHandles;
    private int refillMax;
    private int refillCount;
    /** The handle of the run {@link #allocateRun} carved last; under the lock. */
    private long carvedRunHandle;
    /** Set when the arena took a new chunk; cleared by whoever reacts to growth ({@link #takeGrowth()}). */
    private volatile boolean grew;

    // statistics, written under the lock
    private long usedBytes;
    private long chunksAllocated;
    private long chunksReleased;

    /**
     * An arena whose first chunks are {@code firstChunkSize} bytes and whose
     * later ones grow with it up to the pool's chunk size ({@link #newChunkSize});
     * with the chunk size itself, every chunk is of that size.
     */
    Arena(CommittedMemory committed, int index, SizeClasses sizes, int firstChunkSize, int maxIdleChunks,
          int remoteQueueCapacity, Ticker ticker) {
        this.committed = committed;
        this.firstChunkSize = firstChunkSize;
        this.ticker = ticker;
        this.index = index;
        this.sizes = sizes;
        this.pageShift = Integer.numberOfTrailingZeros(sizes.pageSize());
        this.maxIdleChunks = maxIdleChunks;
        this.subpageHeads = new Subpage[sizes.count()];
        this.spareSubpages = new SpareSubpages(sizes.count());
        this.freeElementBytes = new long[sizes.count()];
        this.remoteFrees = new RemoteFreeQueue(remoteQueueCapacity);
    }

    /**
     * Whether the arena took a new chunk since this was last asked, by any
     * allocation (a thread cache's, a compaction's move, a whole chunk lent):
     * the caller, a thread cache that just allocated from this arena, reacts
     * to it (see {@link ThreadCaches#arenaGrew}). One volatile read when the
     * arena did not grow; two callers that ask at once may both see it.
     */
    boolean takeGrowth() {
        if (!grew) {
            return false;
        }
        grew = false;
        return true;
    }

    /** Allocates one element of size class {@code sizeIndex}; fills {@code out}'s chunk and handle. */
    void allocate(int sizeIndex, Allocation out) {
        allocate(sizeIndex, sizes.size(sizeIndex), out);
    }

    /**
     * Allocates {@code bytes} for a request of class {@code sizeIndex}: an
     * element of a subpage for a small class, else a run of {@code bytes}, a
     * whole number of pages (the class's size, or less for a request the pool
     * fits to whole pages). Fills {@code out}'s chunk and handle.
     */
    synchronized void allocate(int sizeIndex, int bytes, Allocation out) {
        drainRemoteFrees(DRAIN_BATCH);
        if (sizes.isSmall(sizeIndex)) {
            allocateSmall(sizeIndex, out);
        } else {
            out.chunk = allocateRun(bytes >>> pageShift);
            out.handle = carvedRunHandle;
        }
    }

    /**
     * Lends a whole chunk (the allocation of class {@code wholeClass}) to a
     * sequential allocator: fills {@code out}'s chunk and handle and marks the
     * chunk {@link Chunk#lentWhole} in the same step, under the lock, so that
     * no compaction takes it for a general-pool chunk in between.
     */
    synchronized void lendWhole(int wholeClass, Allocation out) {
        allocate(wholeClass, out);
        out.chunk.lentWhole = true;
    }

    /** Takes back a chunk lent with {@link #lendWhole}: unmarked and freed in one step, under the lock. */
    synchronized void takeBackWhole(Chunk chunk, long handle) {
        chunk.lentWhole = false;
        free(chunk, handle);
    }

    /** Carves a run of {@code runPages} pages; returns its chunk and leaves its handle in {@link #carvedRunHandle}. */
    private Chunk allocateRun(int runPages) {
        Chunk chunk = chunkWithRun(runPages);
        carvedRunHandle = takeRun(chunk, runPages);
        addUsed(chunk, (long) runPages << pageShift);
        return chunk;
    }

    /** Carves a run of {@code runPages} from {@code chunk}, which has one, keeping the indexes; returns its handle. */
    private long takeRun(Chunk chunk, int runPages) {
        long handle = chunk.allocateRun(runPages);
        freePages -= runPages;
        placement.update(chunk);
        return handle;
    }

    /** Gives the run at {@code start} back to {@code chunk}, keeping the indexes. */
    private void giveRun(Chunk chunk, int start, int runPages) {
        chunk.freeRun(start, runPages);
        freePages += runPages;
        placement.update(chunk);
    }

    private void allocateSmall(int sizeIndex, Allocation out) {
        Subpage subpage = subpageWithFree(sizeIndex, true);
        out.handle = takeElement(subpage);
        out.chunk = subpage.chunk;
    }

    /**
     * Takes up to {@code max} allocations of a cached size class into
     * {@code chunkIdsOut}/{@code handlesOut} from index 0: a thread cache's
     * refill, one lock for many. Remote frees of the class (among the
     * {@link #DRAIN_BATCH} drained) go straight into the batch, still taken,
     * unless their chunk is being emptied: no subpage emptied and made again,
     * no run merged and split again. Then a small class takes elements of
     * subpages with room (at most one new subpage per refill); a run class
     * takes one new run if the queue gave none.
     *
     * @return how many allocations were taken, at least 1
     */
    synchronized int allocateBatch(int sizeIndex, int[] chunkIdsOut, long[] handlesOut, int max) {
        boolean small = sizes.isSmall(sizeIndex);
        refillClass = sizeIndex;
        int runPages = small ? -1 : sizes.size(sizeIndex) >>> pageShift;
        refillRunPages = runPages;
        refillChunkIds = chunkIdsOut;
        refillHandles = handlesOut;
        refillMax = max;
        refillCount = 0;
        try {
            drainRemoteFrees(DRAIN_BATCH);
        } catch (RuntimeException e) {
            // a broken entry (a double free): what the batch already took goes back, so nothing stays taken for good
            for (int i = 0; i < refillCount; i++) {
                freeLocked(chunksById.get(chunkIdsOut[i]), handlesOut[i]);
            }
            throw e;
        } finally {
            refillClass = -1;
            refillRunPages = -1;
            refillChunkIds = null;
            refillHandles = null;
        }
        int n = refillCount;
        if (!small) {
            if (n == 0) {
                chunkIdsOut[0] = allocateRun(runPages).id;
                handlesOut[0] = carvedRunHandle;
                n = 1;
            }
            return n;
        }
        while (n < max) {
            Subpage subpage = subpageWithFree(sizeIndex, n == 0);
            if (subpage == null) {
                break;
            }
            handlesOut[n] = takeElement(subpage);
            chunkIdsOut[n] = subpage.chunk.id;
            n++;
        }
        return n;
    }

    /**
     * The first subpage of a class with a free element outside the chunks
     * being evacuated; a new one when {@code mayCreate} and there is none.
     */
    private Subpage subpageWithFree(int sizeIndex, boolean mayCreate) {
        Subpage subpage = subpageHeads[sizeIndex];
        while (subpage != null && subpage.chunk.evacuating) { // only while a compaction runs
            Subpage next = subpage.next;
            unlinkSubpage(subpage); // set aside until its chunk's evacuation ends: skipped once, not at every allocation
            subpage = next;
        }
        if (subpage == null && mayCreate) {
            int runPages = sizes.subpageRunPages(sizeIndex);
            Chunk chunk = chunkWithRun(runPages);
            long run = takeRun(chunk, runPages);
            subpage = spareSubpages.take(sizeIndex, chunk, Chunk.runStart(run));
            if (subpage == null) {
                subpage = new Subpage(chunk, Chunk.runStart(run), runPages, sizeIndex, sizes.size(sizeIndex));
            }
            chunk.setSubpage(subpage.runStart, subpage);
            linkSubpage(subpage);
            freeElementBytes[sizeIndex] += (long) subpage.elements() * subpage.elementSize;
        }
        return subpage;
    }

    private long takeElement(Subpage subpage) {
        if (subpage.empty) {
            emptySubpages.remove(subpage);
        }
        long handle = subpage.allocate();
        if (!subpage.hasFree()) {
            unlinkSubpage(subpage);
        }
        addUsed(subpage.chunk, subpage.elementSize);
        freeElementBytes[subpage.sizeIndex] -= subpage.elementSize;
        return handle;
    }

    /**
     * Adds {@code delta} bytes to what {@code chunk} and the arena have handed
     * out, and moves the chunk between bands of occupancy as it crosses one.
     */
    private void addUsed(Chunk chunk, long delta) {
        chunk.usedBytes += delta;
        usedBytes += delta;
        bands.update(chunk);
    }

    /** Frees memory of this arena; the caller holds no arena lock. */
    synchronized void free(Chunk chunk, long handle) {
        drainRemoteFrees(DRAIN_BATCH);
        freeLocked(chunk, handle);
    }

    /**
     * Frees memory of this arena from a thread bound to another arena: through
     * the remote-free queue, or under the lock when the queue is full.
     */
    void freeFromOtherArena(Chunk chunk, long handle) {
        if (!remoteFrees.offer(RemoteFreeQueue.encode(chunk.id, handle))) {
            free(chunk, handle);
        }
    }

    /**
     * Hands a batch gathered by a thread cache over to the remote-free queue,
     * lock-free, for the arena's next lock holder: a producer's next refill of
     * the class takes those entries straight into its cache. What the queue
     * has no room for is freed under the lock. The entries are named as in
     * {@link #freeBatch}.
     */
    void handOverBatch(int[] chunkIds, long[] handles, int from, int to) {
        for (int i = from; i < to; i++) {
            if (!remoteFrees.offer(RemoteFreeQueue.encode(chunkIds[i], handles[i]))) {
                freeBatch(chunkIds, handles, i, to);
                return;
            }
        }
    }

    /** Frees a batch gathered by a thread cache: the chunk of id {@code chunkIds[i]}, {@code handles[i]} for i in [from, to). */
    synchronized void freeBatch(int[] chunkIds, long[] handles, int from, int to) {
        drainRemoteFrees(DRAIN_BATCH);
        for (int i = from; i < to; i++) {
            freeLocked(chunksById.get(chunkIds[i]), handles[i]);
        }
    }

    /** The chunk of id {@code id}, which holds memory that the caller owns; any thread. */
    Chunk chunk(int id) {
        return chunksById.get(id);
    }

    /**
     * Applies up to {@code limit} remote frees in the order they were handed
     * over; the caller holds the lock. Frees beyond the limit, or behind a
     * slot whose producer has not written it yet, stay queued for the next
     * drain. During a refill, memory of the class being refilled goes into the
     * refill batch ({@link #freeEntry}).
     *
     * @return how many frees were applied
     */
    int drainRemoteFrees(int limit) {
        assert Thread.holdsLock(this) : "the remote-free queue's consumer is whoever holds the arena's lock";
        return remoteFrees.drain(remoteFreeSink, limit);
    }

    /**
     * Applies one remote-free entry: the sink of {@link #drainRemoteFrees},
     * under the lock. During a refill, memory of the class being refilled goes
     * into the refill batch instead of back to its subpage or chunk, unless
     * its chunk is being evacuated: a thread cache must take none of that
     * chunk's memory, or the chunk cannot empty.
     */
    private void freeEntry(long entry) {
        Chunk chunk = chunksById.get(RemoteFreeQueue.chunkId(entry));
        int runStart = RemoteFreeQueue.runStart(entry);
        long handle;
        boolean refilled;
        if (RemoteFreeQueue.isSubpage(entry)) {
            Subpage subpage = chunk.subpageAt(runStart);
            handle = Chunk.subpageHandle(runStart, subpage.runPages, RemoteFreeQueue.lowField(entry));
            refilled = subpage.sizeIndex == refillClass;
        } else {
            int runPages = RemoteFreeQueue.lowField(entry);
            handle = Chunk.runHandle(runStart, runPages);
            refilled = runPages == refillRunPages;
        }
        if (refilled && refillCount < refillMax && !chunk.evacuating) {
            addToRefill(chunk, handle); // still taken: straight to the refill
        } else {
            freeLocked(chunk, handle);
        }
    }

    /**
     * Adds a remote free to the refill batch. A handle already in the batch
     * was freed twice; the subpage bitmap, which would have caught that, is
     * not consulted on this path, so the batch checks itself.
     */
    private void addToRefill(Chunk chunk, long handle) {
        for (int i = 0; i < refillCount; i++) {
            if (refillHandles[i] == handle && refillChunkIds[i] == chunk.id) {
                throw new IllegalStateException("memory at handle " + Long.toHexString(handle) + " of chunk " + chunk.id
                        + " was freed twice");
            }
        }
        refillChunkIds[refillCount] = chunk.id;
        refillHandles[refillCount++] = handle;
    }

    private void freeLocked(Chunk chunk, long handle) {
        if (Chunk.isSubpage(handle)) {
            Subpage subpage = chunk.subpageAt(Chunk.runStart(handle));
            subpage.free(Chunk.element(handle));
            addUsed(chunk, -subpage.elementSize);
            freeElementBytes[subpage.sizeIndex] += subpage.elementSize;
            if (!subpage.linked && !chunk.evacuating) {
                linkSubpage(subpage); // it was full; with a single element it is now empty as well
            }
            if (subpage.isEmpty()) {
                if (subpage.prev != null || subpage.next != null) {
                    releaseSubpage(subpage); // an empty subpage goes back unless it is the last of its class
                } else {
                    emptySubpages.add(subpage); // kept, for the class's next allocation or until a trim
                }
            }
            if (chunk.usedBytes == 0) {
                releaseEmptySubpagesOf(chunk); // but those kept must not keep a chunk from going idle
            }
            afterRunFreed(chunk);
        } else {
            int runPages = Chunk.runPages(handle);
            giveRun(chunk, Chunk.runStart(handle), runPages);
            addUsed(chunk, -((long) runPages << pageShift));
            if (chunk.usedBytes == 0) {
                releaseEmptySubpagesOf(chunk);
            }
            afterRunFreed(chunk);
        }
    }

    private void releaseSubpage(Subpage subpage) {
        if (subpage.linked) {
            unlinkSubpage(subpage);
        }
        if (subpage.empty) {
            emptySubpages.remove(subpage);
        }
        Chunk chunk = subpage.chunk;
        freeElementBytes[subpage.sizeIndex] -= (long) subpage.freeElements() * subpage.elementSize;
        chunk.setSubpage(subpage.runStart, null);
        giveRun(chunk, subpage.runStart, subpage.runPages);
        spareSubpages.keep(subpage);
    }



    /** Gives back the runs of every subpage of a chunk that holds nothing; they are all empty. */
    private void releaseEmptySubpagesOf(Chunk chunk) {
        forEachSubpage(chunk, this::releaseSubpage);
    }

    /** Runs {@code action} on every subpage of {@code chunk}, in page order; the action may release the subpage. */
    private static void forEachSubpage(Chunk chunk, Consumer<Subpage> action) {
        for (int page = 0; page < chunk.pages && chunk.subpageCount > 0; ) {
            Subpage subpage = chunk.subpageAt(page);
            if (subpage != null) {
                page += subpage.runPages;
                action.accept(subpage);
            } else {
                page++;
            }
        }
    }

    private void afterRunFreed(Chunk chunk) {
        if (chunk.isEmpty()) {
            idle.add(chunk, ticker.read());
            if (chunk.evacuating || idle.count() > maxIdleChunks) { // a chunk being evacuated was emptied to go back
                releaseChunk(chunk);
            }
        }
    }

    /**
     * The oldest chunk with a free run of {@code runPages} that is not being
     * evacuated (found in O(log chunks), see {@link PlacementIndex}); a new
     * chunk if none has one.
     */
    private Chunk chunkWithRun(int runPages) {
        Chunk best = placement.oldestWithRun(runPages);
        if (best == null) {
            best = newChunk(runPages);
        } else if (best.idle) {
            idle.remove(best);
        }
        return best;
    }

    /**
     * The size of the next chunk, one that holds a run of {@code runPages}:
     * the largest power of two at most 1/{@link #GROWTH} of the bytes the
     * arena holds, from {@link #firstChunkSize} up to the pool's chunk size.
     * A small arena thus grows by small steps and a large one by whole
     * chunks, and what its newest chunk leaves unused stays a small share of
     * what it holds (a pool of a few MiB of buffers does not commit a 4 MiB
     * chunk per step). When the ceiling has no room for that size,
     * {@link #newChunk} takes the smallest chunk that holds the run instead.
     */
    private int newChunkSize(int runPages) {
        long share = Math.min(sizes.chunkSize(), heldBytes / GROWTH);
        return chunkSizeFor(Math.max(firstChunkSize, (int) Long.highestOneBit(share)), runPages);
    }

    /** {@code size}, doubled until it holds a run of {@code runPages}, at most the pool's chunk size. */
    private int chunkSizeFor(int size, int runPages) {
        long needed = (long) runPages << pageShift;
        while (size < needed) {
            size <<= 1;
        }
        return Math.min(size, sizes.chunkSize());
    }

    private Chunk newChunk(int runPages) {
        int size = newChunkSize(runPages);
        NativeRegion region;
        try {
            region = committed.commit(size, CommittedMemory.RegionKind.CHUNK);
        } catch (CeilingReached e) {
            // near the ceiling a smaller chunk may still fit: the smallest that holds the run
            int smallest = chunkSizeFor(firstChunkSize, runPages);
            if (smallest >= size) {
                throw e;
            }
            region = committed.commit(smallest, CommittedMemory.RegionKind.CHUNK);
        }
        Chunk chunk = new Chunk(this, region, chunksById.nextId(), pageShift);
        chunksById.put(chunk);
        placement.add(chunk);
        bands.add(chunk);
        freePages += chunk.pages;
        heldBytes += chunk.chunkSize();
        chunksAllocated++;
        grew = true;
        return chunk;
    }

    private void releaseChunk(Chunk chunk) {
        if (chunk.evacuating) {
            committed.evacuating(chunk.region, false); // while the region is still held, to find its group
        }
        placement.remove(chunk);
        idle.remove(chunk);
        bands.remove(chunk);
        freePages -= chunk.freePages;
        heldBytes -= chunk.chunkSize();
        chunksById.remove(chunk);
        chunksReleased++;
        committed.decommit(chunk.region);
    }

    /**
     * Returns idle chunks to the chunk source: those idle for at least
     * {@code idleNanos} and those beyond {@code maxIdleChunks}, keeping the
     * {@code keep} most recently idle ones.
     * Empty subpages give their runs back first, so their chunks can go too.
     * The chunks given back are the longest idle ones, so the walk starts at
     * the oldest idle chunk and stops at the first that stays: it visits what
     * it gives back and one more, never the chunks in use.
     *
     * @return the chunks given back and their bytes, as {@code {chunks, bytes}}
     */
    synchronized long[] trim(long idleNanos, int keep) {
        drainRemoteFrees(remoteFrees.capacity()); // all a quiet queue holds, so frees handed over can make chunks idle
        releaseEmptySubpages();
        long now = ticker.read();
        long[] released = new long[2];
        // rank: how many chunks became idle after this one; the keep most recent stay, and beyond
        // maxIdleChunks they go whatever their age (empty subpages released above may add some)
        for (int rank = idle.count() - 1; rank >= keep; rank--) {
            Chunk chunk = idle.oldest();
            if (now - chunk.idleSinceNanos < idleNanos && rank < maxIdleChunks) {
                break; // every chunk after it became idle later and ranks lower
            }
            releaseChunk(chunk);
            released[0]++;
            released[1] += chunk.chunkSize();
        }
        return released;
    }

    /**
     * Adds to {@code out}, for a compaction to choose from, the chunks that
     * hold something but at most {@code maxOccupancy} of their size, after
     * the remote frees; never one lent whole to a sequential allocator. Idle
     * chunks too with {@code idleToo}: with region groups, an idle chunk
     * kept for reuse would keep its group from emptying.
     *
     * @return the bytes of the free pages of all this arena's chunks, idle ones included: the room a move can
     *         count on. Free elements of subpages are left out: only an entry of their size class fits one, so
     *         counting them would choose chunks whose entries then need new memory.
     */
    synchronized long sparseChunks(double maxOccupancy, boolean idleToo, List<Chunk> out) {
        drainRemoteFrees(remoteFrees.capacity());
        bands.forEachAtMost(maxOccupancy, idleToo, chunk -> {
            if (chunk.usedBytes <= maxOccupancy * chunk.chunkSize() && !chunk.lentWhole) {
                out.add(chunk);
            }
        });
        return freePages << pageShift;
    }

    /** Bytes of the free pages of {@code chunk}, one of this arena's: its room that a move can count on. */
    synchronized long freePageBytes(Chunk chunk) {
        return (long) chunk.freePages << pageShift;
    }

    /** Per small size class, the bytes of the free elements of this arena's subpages (a copy). */
    synchronized long[] freeElementBytes() {
        return freeElementBytes.clone();
    }

    /**
     * Per small size class, the bytes of {@code chunk}'s subpage elements taken
     * ({@code taken}) and free ({@code free}), added to the arrays; returns
     * whether it has any subpage. Walks the chunk's pages: for a compaction's
     * victims only.
     */
    synchronized boolean elementBytesByClass(Chunk chunk, long[] taken, long[] free) {
        if (chunk.subpageCount == 0) {
            return false;
        }
        forEachSubpage(chunk, subpage -> {
            int elements = subpage.freeElements();
            taken[subpage.sizeIndex] += (long) (subpage.elements() - elements) * subpage.elementSize;
            free[subpage.sizeIndex] += (long) elements * subpage.elementSize;
        });
        return true;
    }

    /** Bytes of {@code chunk}, one of this arena's, handed out now. */
    synchronized long usedBytes(Chunk chunk) {
        return chunk.usedBytes;
    }

    /**
     * Starts evacuating {@code chunk}, unless it went back meanwhile, holds
     * more than {@code maxUsedBytes} now (it may have been emptied and lent
     * whole to a sequential allocator since it was chosen), is lent whole or
     * not against {@code lentWhole} (only the sequential allocator that holds
     * a chunk evacuates it), or emptied and {@code idleToo} is false; returns
     * whether it did. An idle chunk evacuated takes no new memory and goes
     * back at the end.
     */
    synchronized boolean startEvacuation(Chunk chunk, boolean idleToo, long maxUsedBytes, boolean lentWhole) {
        if (!chunksById.holds(chunk) || chunk.evacuating || (chunk.isEmpty() && !idleToo)
                || chunk.usedBytes > maxUsedBytes || chunk.lentWhole != lentWhole) {
            return false;
        }
        chunk.evacuating = true;
        placement.update(chunk);
        committed.evacuating(chunk.region, true);
        return true;
    }

    /** A general-pool chunk a compaction chose: marked as the victim says, ended as {@link #endEvacuation(Chunk)}. */
    @Override
    public boolean startEvacuation(CompactionChoice.Victim victim) {
        return startEvacuation(victim.chunk, victim.emptyToo, victim.maxUsedBytes, false);
    }

    @Override
    public boolean endEvacuation(CompactionChoice.Victim victim) {
        return endEvacuation(victim.chunk);
    }

    /**
     * Ends the evacuation of {@code chunk}: a chunk it emptied goes back to
     * the chunk source at once (that is what it was emptied for), one still
     * holding memory becomes an ordinary chunk again.
     *
     * @return whether the chunk was emptied (it went back, now or before)
     */
    synchronized boolean endEvacuation(Chunk chunk) {
        drainRemoteFrees(remoteFrees.capacity());
        if (!chunksById.holds(chunk)) {
            chunk.evacuating = false;
            return true; // released already: it emptied while being evacuated
        }
        if (chunk.isEmpty()) {
            releaseChunk(chunk);
            chunk.evacuating = false;
            return true;
        }
        if (chunk.evacuating) {
            committed.evacuating(chunk.region, false);
            chunk.evacuating = false;
            placement.update(chunk);
            relinkSubpages(chunk);
        }
        return false;
    }

    /** Lists again the subpages with room of a chunk whose evacuation ended: they were set aside meanwhile. */
    private void relinkSubpages(Chunk chunk) {
        forEachSubpage(chunk, subpage -> {
            if (!subpage.linked && subpage.hasFree()) {
                linkSubpage(subpage);
            }
        });
    }

    /** Chunks with nothing allocated. */
    synchronized int idleChunkCount() {
        return idle.count();
    }

    /**
     * Gives the runs of subpages with no element in use back to their chunks,
     * the last of each class included; those of chunks being evacuated stay
     * until the evacuation ends. Visits the empty subpages only.
     */
    private void releaseEmptySubpages() {
        emptySubpages.forEach(subpage -> {
            if (subpage.linked) { // not set aside by an evacuation
                Chunk chunk = subpage.chunk;
                releaseSubpage(subpage); // (which may keep it as a spare, naming no chunk)
                if (chunk.isEmpty()) {
                    idle.add(chunk, ticker.read());
                }
            }
        });
    }

    private void linkSubpage(Subpage subpage) {
        ListNode.pushFront(subpageHeads, subpage.sizeIndex, subpage);
    }

    private void unlinkSubpage(Subpage subpage) {
        ListNode.remove(subpageHeads, subpage.sizeIndex, subpage);
    }

    /**
     * A consistent view of this arena, taken under its lock: its counters
     * and chunks per band of occupancy, kept as they change, so the view
     * costs the same for ten chunks or a hundred thousand.
     */
    synchronized ArenaSnapshot snapshot() {
        drainRemoteFrees(remoteFrees.capacity()); // all a quiet queue holds, so the snapshot counts every free handed over
        return new ArenaSnapshot(index, boundThreads.get(), placement.size(), idle.count(), usedBytes,
                heldBytes, chunksAllocated, chunksReleased, bands.counts());
    }

    /**
     * For every chunk, oldest first, the percentage of its bytes handed out,
     * rounded down but at least 1 when anything is (so that a pinned chunk
     * never looks idle). Walks every chunk under the lock: for an operator's
     * report, never for a path that runs per allocation or per second.
     */
    synchronized int[] chunkUsePercent() {
        drainRemoteFrees(remoteFrees.capacity());
        int[] usedPercent = new int[placement.size()];
        int[] i = {0};
        placement.forEach(chunk -> usedPercent[i[0]++] =
                chunk.usedBytes == 0 ? 0 : (int) Math.max(1, chunk.usedBytes * 100 / chunk.chunkSize()));
        return usedPercent;
    }

    /** Runs {@code action} on every chunk, oldest first, under the lock: O(chunks), for compaction, reports and tests. */
    synchronized void forEachChunk(Consumer<Chunk> action) {
        placement.forEach(action);
    }
}
