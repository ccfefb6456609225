package io.slabwise;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The sequential allocator (FIFO slab): slices carved out of whole chunks by
 * bumping an offset, for data that is freed roughly in the order it was
 * written, such as a log cache.
 *
 * <pre>
 *  stripe's current chunk  [ s1 | s2 | s3 | s4 | .......... free tail .......... ]
 *                                                ^ bump offset
 *  retired chunks          [ s-old (live) | released | released | ... ]  pinned until its last slice goes
 * </pre>
 *
 * <h2>What is reserved</h2>
 * A slice reserves its size rounded up to {@link #ALIGNMENT} bytes, no size
 * class: internal fragmentation is at most 7 bytes a slice.
 *
 * <h2>When a slice does not fit the current chunk</h2>
 * Each stripe has a current chunk and, at times, an overflow chunk. If the
 * current chunk's free tail is at most {@code maxTailWaste} bytes (1/256 of
 * the chunk, 16 KiB of a 4 MiB chunk), the chunk is retired, its tail given
 * up, and the overflow chunk (or a new one) becomes current. If the tail is
 * larger, the current chunk stays open for the smaller records that follow,
 * and this record is carved from the overflow chunk instead, so a large record
 * rarely wastes a large tail. When the record fits neither chunk, the one
 * with the smaller tail is retired (that tail is smaller than the record) and
 * a new overflow chunk takes the record. Requests larger than
 * {@code maxSliceSize} (a quarter of a chunk) go to the general pool in the
 * same category, and requests larger than a chunk take the pool's huge path.
 *
 * <h2>The waste bound</h2>
 * At most two partly filled chunks per stripe and one empty spare chunk, plus
 * retired chunks pinned by slices that are still live. A retired chunk gives
 * up at most {@code maxTailWaste} bytes, or less than the record that fitted
 * neither open chunk (so less than a quarter of a chunk), which happens to few
 * chunks: in the simulator's log-cache workload (records of 100 B to 1 MiB)
 * the tails given up came to 0.35% of the bytes carved. {@link #stats()} shows
 * those bytes, and how many chunks are pinned by how few live bytes.
 *
 * <h2>Chunk life cycle and threads</h2>
 * A chunk is in use while it is a stripe's current or overflow chunk, or
 * while any slice carved from it is live. Whoever ends the last of those (the
 * last release, from any thread, or the retirement) recycles the chunk: the
 * allocator keeps one emptied chunk as its spare, taken before any other, and
 * gives the others back to the pool, which keeps idle chunks for reuse
 * ({@code maxIdleChunksPerArena}). Under FIFO release a current chunk and an
 * overflow chunk tend to empty together and to be replaced together; the spare
 * and the arena's idle chunk between them absorb that, so an emptied chunk is
 * reused before a new one is taken from the OS. {@link #trim()} gives the
 * spare back. Carving happens under the stripe's lock; stripes are chosen by
 * thread, so threads rarely share one. No lock is global.
 *
 * <h2>What a slice costs</h2>
 * Carving changes only fields guarded by the stripe's lock: the chunk's offset
 * and slice count, and the stripe's running totals of slices and bytes carved.
 * A release, from any thread, makes one atomic add to its chunk's state (bytes
 * released and slices outstanding, packed in one word, see {@link SlabChunk})
 * and one to this allocator's released bytes. Live bytes are the carved bytes
 * less the released ones, summed when {@link #stats()} is taken.
 */
public final class SequentialAllocator implements Allocator {

    /** Slices are rounded up to a multiple of this many bytes. */
    public static final int ALIGNMENT = 8;
    /** The most stripes an allocator may have. */
    static final int MAX_STRIPES = 1024;

    private final Admission admission;
    private final WholeChunks chunks;
    private final Category category;
    /** Takes slices back and decides resizes; private, so that no caller can release a slice twice. */
    private final Releaser releaser = new SliceReleaser();
    /** One try at carving a slice, as admission retries it at a limit. */
    private final Attempt attempt = new Attempt() {
        @Override
        public int tryOnce(Category c, int requested, Allocation out) {
            return SequentialAllocator.this.tryOnce(c, requested, out);
        }

        /** A slice's 8-byte multiple, or what the general pool reserves for a request too large for a slice. */
        @Override
        public long leastReserved(int requested) {
            int reserved = sliceBytes(requested);
            return reserved > maxSliceSize ? chunks.generalPoolReserves(requested) : reserved;
        }
    };
    private final Stripe[] stripes;
    private final int chunkSize;
    private final int maxSliceSize;
    private final int maxTailWaste;
    private final int maxRequest;
    /** Chunks held: open, pinned and the spare. */
    private final AtomicInteger chunksHeld = new AtomicInteger();
    /** An emptied chunk kept for the next chunk this allocator needs; null when there is none. */
    private final AtomicReference<SlabChunk> spare = new AtomicReference<>();
    /** Bytes of slices released since the start; live bytes are the stripes' carved bytes less these. */
    private final AtomicLong releasedBytes = new AtomicLong();
    private final AtomicLong wastedTailBytes = new AtomicLong();
    private final AtomicLong fallbackAllocations = new AtomicLong();
    /** Retired chunks whose slices are not all released yet: what a compaction may evacuate. */
    private final Set<SlabChunk> pinned = ConcurrentHashMap.newKeySet();

    SequentialAllocator(Admission admission, WholeChunks chunks, Category category, int stripes, int maxRequest) {
        checkArguments(stripes, maxRequest);
        this.admission = admission;
        this.chunks = chunks;
        this.category = category;
        this.chunkSize = chunks.chunkSize();
        this.maxSliceSize = chunkSize / 4;
        this.maxTailWaste = chunkSize / 256;
        this.maxRequest = maxRequest;
        this.stripes = new Stripe[stripes];
        for (int i = 0; i < stripes; i++) {
            this.stripes[i] = new Stripe();
        }
    }

    /** Checks the arguments of a sequential allocator before anything is made for it. */
    static void checkArguments(int stripes, int maxRequest) {
        if (stripes < 1 || stripes > MAX_STRIPES) {
            throw new IllegalArgumentException("stripes must be from 1 to " + MAX_STRIPES + ": " + stripes);
        }
        if (maxRequest < 1) {
            throw new IllegalArgumentException("the largest request must be positive: " + maxRequest);
        }
    }

    @Override
    public Category category() {
        return category;
    }

    /** The largest request this allocator accepts. */
    public int maxRequest() {
        return maxRequest;
    }

    /** Requests of 1 to {@link #maxRequest()} bytes; an empty one has nothing to carve. */
    @Override
    public boolean serves(int requested) {
        return requested >= 1 && requested <= maxRequest;
    }

    @Override
    public boolean allocate(int requested, Allocation out) {
        checkRequest(requested, out);
        return admission.admit(attempt, category, requested, out);
    }

    /**
     * Like {@link #allocate}, but never waits: false at a limit whatever the
     * category's policy. For a cache that makes room by evicting its own
     * entries and tries again, which it cannot do while waiting.
     *
     * @throws IllegalArgumentException as {@link #allocate}
     * @throws IllegalStateException    when the pool is closed
     */
    public boolean tryAllocate(int requested, Allocation out) {
        checkRequest(requested, out);
        return admission.tryAdmit(attempt, category, requested, out);
    }

    private void checkRequest(int requested, Allocation out) {
        admission.checkOpen();
        if (requested <= 0 || requested > maxRequest) {
            throw new IllegalArgumentException("sequential allocator '" + category + "': size must be from 1 to "
                    + maxRequest + " bytes: " + requested);
        }
        out.checkNotLive();
    }

    /** What a slice of {@code requested} bytes reserves: its size rounded up to {@link #ALIGNMENT}. */
    private static int sliceBytes(int requested) {
        return (requested + ALIGNMENT - 1) & -ALIGNMENT;
    }

    /** One try: a slice, or the general pool for requests larger than a quarter chunk. */
    private int tryOnce(Category c, int requested, Allocation out) {
        int reserved = sliceBytes(requested);
        if (reserved > maxSliceSize) {
            return fallback(requested, out);
        }
        if (!category.admit(reserved)) {
            return Attempt.QUOTA;
        }
        try {
            carve(requested, reserved, out);
        } catch (CeilingReached e) {
            category.release(reserved);
            return Attempt.CEILING;
        } catch (RuntimeException | Error e) { // the chunk source failed: the quota is as it was
            category.release(reserved);
            throw e;
        }
        return Attempt.DONE;
    }

    /** Carves a slice from the calling thread's stripe. */
    private void carve(int requested, int reserved, Allocation out) {
        Stripe stripe = stripes[(int) (Thread.currentThread().getId() % stripes.length)];
        SlabChunk slab;
        int offset;
        synchronized (stripe) {
            slab = chunkWithRoom(stripe, reserved);
            offset = slab.carved;
            slab.carved += reserved;
            slab.slices++;
            stripe.slicesCarved++;
            stripe.carvedBytes += reserved;
        }
        Allocation memory = slab.memory;
        out.chunk = memory.chunk;
        out.handle = memory.handle;
        out.place(-1, memory.offset() + offset, category, requested, reserved);
        out.releaser = releaser;
        out.releaserToken = slab;
        chunks.countCarved(category, requested, reserved, out);
    }

    /**
     * The chunk of the stripe to carve {@code reserved} bytes from (at most
     * {@code maxSliceSize}), retiring and opening chunks as the class comment
     * describes. Called under the stripe's lock.
     */
    private SlabChunk chunkWithRoom(Stripe stripe, int reserved) {
        if (stripe.current == null) {
            stripe.current = stripe.overflow != null ? stripe.overflow : takeChunk();
            stripe.overflow = null;
        }
        SlabChunk current = stripe.current;
        int room = chunkSize - current.carved;
        if (room >= reserved) {
            return current;
        }
        if (room <= maxTailWaste) {
            stripe.current = null;
            retire(current);
            return chunkWithRoom(stripe, reserved);
        }
        SlabChunk overflow = stripe.overflow;
        if (overflow == null) {
            overflow = takeChunk();
            stripe.overflow = overflow;
        }
        room = chunkSize - overflow.carved;
        if (room >= reserved) {
            return overflow;
        }
        // neither chunk has room: give up the smaller tail (less than the request)
        if (room <= chunkSize - current.carved) {
            retire(overflow);
        } else {
            retire(current);
            stripe.current = overflow;
        }
        stripe.overflow = null; // until the new one is taken: that may hit the ceiling
        overflow = takeChunk();
        stripe.overflow = overflow;
        return overflow;
    }

    /**
     * Ends the carving of a chunk that is no longer a stripe's current or
     * overflow chunk: no slice is carved from it again. Its tail counts as
     * given up while slices in it are live; an empty one goes back whole.
     */
    private void retire(SlabChunk slab) {
        if (slab.liveBytes() > 0) {
            wastedTailBytes.addAndGet(chunkSize - slab.carved);
        }
        pinned.add(slab); // before closing: the last release may come at once and take it out again
        slab.close();
    }

    private int fallback(int requested, Allocation out) {
        int result = chunks.tryGeneralPool(category, requested, out);
        if (result == Attempt.DONE) {
            fallbackAllocations.incrementAndGet();
        }
        return result;
    }

    private SlabChunk takeChunk() {
        SlabChunk slab = spare.getAndSet(null);
        if (slab != null) {
            slab.reopen();
            return slab;
        }
        slab = new SlabChunk();
        chunks.acquireChunk(slab.memory);
        chunksHeld.incrementAndGet();
        return slab;
    }

    /** Takes a released slice back into its chunk, from any thread. */
    private final class SliceReleaser implements Releaser {
        @Override
        public void release(Allocation allocation) {
            int reserved = allocation.reserved;
            releasedBytes.addAndGet(reserved);
            ((SlabChunk) allocation.releaserToken).release(reserved);
        }

        @Override
        public boolean resizeInPlace(Allocation allocation, int newRequested) {
            return newRequested > 0 && newRequested <= allocation.reserved; // at 0 it moves: no slot or slice pinned by an empty buffer
        }

        @Override
        public boolean allocateForMove(Allocation from, Allocation to) {
            return SequentialAllocator.this.allocateForMove(from.requested, to);
        }
    }

    /** Called by whoever dropped a chunk's count to zero: it becomes the spare, or goes back to the pool. */
    private void recycle(SlabChunk slab) {
        pinned.remove(slab);
        // a chunk a compaction emptied goes back (its arena gives it to the chunk source), never to the spare
        if (!slab.memory.chunk.evacuating && spare.compareAndSet(null, slab)) {
            return;
        }
        chunksHeld.decrementAndGet();
        chunks.releaseChunk(slab.memory);
    }

    /**
     * Gives the spare chunk back to the pool and retires the current and
     * overflow chunks of all stripes; each of those goes back to the pool as
     * soon as its last slice is released (at once if it has none).
     *
     * @return the number of chunks retired, plus one if a spare was given back
     */
    public int trim() {
        int retired = 0;
        for (Stripe stripe : stripes) {
            SlabChunk current;
            SlabChunk overflow;
            synchronized (stripe) {
                current = stripe.current;
                overflow = stripe.overflow;
                stripe.current = null;
                stripe.overflow = null;
            }
            for (SlabChunk slab : new SlabChunk[] {current, overflow}) {
                if (slab != null) {
                    retire(slab);
                    retired++;
                }
            }
        }
        // after the retirements, which may have made a chunk the spare
        return retired + releaseSpare();
    }

    /**
     * Retires the current and overflow chunks that hold no live slice, so
     * that they go back to the pool (or become the spare); chunks with live
     * slices stay open. Returns how many were retired.
     */
    int retireEmptyOpenChunks() {
        int retired = 0;
        for (Stripe stripe : stripes) {
            synchronized (stripe) {
                if (stripe.overflow != null && stripe.overflow.liveBytes() == 0) {
                    retire(stripe.overflow);
                    stripe.overflow = null;
                    retired++;
                }
                if (stripe.current != null && stripe.current.liveBytes() == 0) {
                    retire(stripe.current);
                    stripe.current = stripe.overflow;
                    stripe.overflow = null;
                    retired++;
                }
            }
        }
        return retired;
    }

    /** Gives the spare chunk, if there is one, back to the pool; returns how many (0 or 1). */
    int releaseSpare() {
        SlabChunk idle = spare.getAndSet(null);
        if (idle == null) {
            return 0;
        }
        chunksHeld.decrementAndGet();
        chunks.releaseChunk(idle.memory);
        return 1;
    }

    /**
     * Adds to {@code out} the pinned chunks (retired, with slices still live)
     * whose live slices hold at most {@code maxLiveBytes}, for a compaction to
     * choose from; slices carved from the stripes' open chunks never come from
     * a pinned chunk, so what a move carves lands elsewhere.
     */
    void sparsePinnedChunks(long maxLiveBytes, CompactionChoice.Destination destination, List<CompactionChoice.Victim> out) {
        for (SlabChunk slab : pinned) {
            Chunk chunk = slab.memory.chunk; // null once it went back to its arena
            long live = slab.liveBytes();
            if (chunk != null && live <= maxLiveBytes) {
                out.add(CompactionChoice.Victim.pinnedSlab(slab, chunk, live, destination, category));
            }
        }
    }

    /**
     * Bytes a compaction's moves can carve without a new chunk: the room left
     * in the open chunks of the calling thread's stripe, which carves them.
     */
    long roomForMoves() {
        Stripe stripe = stripes[(int) (Thread.currentThread().getId() % stripes.length)];
        synchronized (stripe) {
            long room = 0;
            for (SlabChunk slab : new SlabChunk[] {stripe.current, stripe.overflow}) {
                if (slab != null) {
                    room += chunkSize - slab.carved;
                }
            }
            return room;
        }
    }

    /**
     * Carves a slice for a compaction's move of a slice of this allocator:
     * never waits at a limit (false instead), never from a pinned chunk.
     */
    boolean allocateForMove(int requested, Allocation out) {
        return admission.tryAdmit(attempt, category, requested, out);
    }

    /**
     * A snapshot of this allocator's chunks and slices. While other threads
     * carve and release, the figures are read one after the other, not at one
     * instant; live bytes never count a release without its slice.
     */
    public SequentialStats stats() {
        // released bytes first: every slice they include was carved before, so it shows in the carved bytes read next
        long released = releasedBytes.get();
        long carved = 0;
        long slices = 0;
        int open = 0;
        long openLive = 0;
        for (Stripe stripe : stripes) {
            synchronized (stripe) {
                carved += stripe.carvedBytes;
                slices += stripe.slicesCarved;
                for (SlabChunk slab : new SlabChunk[] {stripe.current, stripe.overflow}) {
                    if (slab != null) {
                        open++;
                        openLive += slab.liveBytes();
                    }
                }
            }
        }
        int spares = spare.get() != null ? 1 : 0;
        int held = chunksHeld.get();
        long live = carved - released;
        int pinned = Math.max(0, held - open - spares);
        return new SequentialStats(category.name(), chunkSize, held, open, pinned, spares, live,
                Math.max(0, live - openLive), wastedTailBytes.get(), slices, fallbackAllocations.get());
    }

    @Override
    public String toString() {
        return "sequential(" + category + ", stripes=" + stripes.length + ')';
    }

    /** A stripe: its current and overflow chunks and its running totals, guarded by the stripe's monitor. */
    private static final class Stripe {
        SlabChunk current;
        SlabChunk overflow;
        /** Slices carved by this stripe since the start. */
        long slicesCarved;
        /** Bytes of those slices (their reserved sizes). */
        long carvedBytes;
    }

    /**
     * A whole pool chunk being carved into slices.
     *
     * <p>Its {@link #state} packs two counts in one word, so that a release
     * changes both with one atomic add: the high 32 bits hold the bytes
     * released since the chunk was opened, the low 32 bits the slices still
     * to be released, offset by {@link #OPEN} while the chunk is open. The
     * offset keeps the low count positive while slices are carved without
     * touching the state; retirement replaces it by the number of slices
     * carved, and whoever brings the low count to zero recycles the chunk.
     * The low count never goes below zero, so a change to it never borrows
     * from the high bits.
     */
    private final class SlabChunk implements Compaction.Evacuable {
        /** Added to the low count while the chunk is open; more than the slices a chunk can hold. */
        static final long OPEN = 1L << 30;

        final Allocation memory = new Allocation();
        /** Bytes carved so far; guarded by the stripe that holds the chunk open. */
        int carved;
        /** Slices carved so far; guarded likewise. */
        int slices;
        /** Released bytes (high 32 bits) and slices outstanding plus {@link #OPEN} while open (low 32 bits). */
        final AtomicLong state = new AtomicLong(OPEN);

        /** Counts the release of a slice of {@code reserved} bytes; any thread. */
        void release(int reserved) {
            long after = state.addAndGet(((long) reserved << 32) - 1);
            if ((int) after == 0) {
                recycle(this);
            }
        }

        /** Ends the carving: from now on the chunk lives only while its slices do. */
        void close() {
            long after = state.addAndGet(slices - OPEN);
            if ((int) after == 0) {
                recycle(this);
            }
        }

        /**
         * Bytes of live slices; read under the lock of the stripe that holds
         * the chunk open, or by any thread once it is retired (then its carved
         * bytes no longer change).
         */
        long liveBytes() {
            return carved - (state.get() >>> 32);
        }

        /**
         * Whether the chunk is a stripe's current or overflow chunk now; any
         * thread, a moment's view. While open the low count is {@link #OPEN}
         * less the releases so far, which are fewer than the slices a chunk
         * holds (a chunk of 256 MiB holds at most 2^25 slices of 8 bytes), so
         * it stays above half of {@code OPEN}; once closed it is below.
         */
        boolean isOpen() {
            return (int) state.get() >= OPEN / 2;
        }

        /** Marks the chunk, chosen by a compaction while pinned; false when it was recycled meanwhile. */
        @Override
        public boolean startEvacuation(CompactionChoice.Victim victim) {
            Chunk chunk = victim.chunk;
            // marked through its arena, which counts it in its region group too
            if (!pinned.contains(this) || !chunk.arena.startEvacuation(chunk, false, Long.MAX_VALUE, true)) {
                return false;
            }
            if (!pinned.contains(this)) { // recycled meanwhile, as the spare: nothing to move
                chunk.arena.endEvacuation(chunk);
                return false;
            }
            return true;
        }

        /** Unmarks the chunk; true when it emptied and was not taken again meanwhile as a stripe's chunk (from the spare). */
        @Override
        public boolean endEvacuation(CompactionChoice.Victim victim) {
            boolean emptied = !pinned.contains(this) && !isOpen();
            victim.chunk.arena.endEvacuation(victim.chunk); // a chunk that emptied went back to its arena, and from there out
            return emptied;
        }

        /** Makes an emptied chunk (the spare) a fresh open chunk; under the lock of the stripe that opens it. */
        void reopen() {
            carved = 0;
            slices = 0;
            state.set(OPEN);
        }
    }
}
