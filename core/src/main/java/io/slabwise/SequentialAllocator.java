package io.slabwise;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

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
 * If the current chunk's free tail is at most {@code maxTailWaste} bytes (1/16
 * of the chunk), the chunk is retired, its tail given up, and a new chunk
 * becomes current. If the tail is larger, the current chunk stays and this one
 * request is served by the general pool in the same category (size classes,
 * at most 12.5% rounding), so a large record never wastes a large tail.
 * Requests larger than {@code maxSliceSize} (a quarter of a chunk) go to the
 * general pool the same way, and requests larger than a chunk take the pool's
 * huge path.
 *
 * <h2>The waste bound</h2>
 * At most one partly filled chunk per stripe, at most {@code maxTailWaste}
 * given up per retired chunk, plus retired chunks pinned by slices that are
 * still live. {@link #stats()} shows how many chunks are pinned and by how few
 * live bytes.
 *
 * <h2>Chunk life cycle and threads</h2>
 * Each chunk counts its live slices plus one reference held while it is a
 * stripe's current chunk. Whoever drops the count to zero (the last release,
 * from any thread, or the retirement) recycles it: one is kept as a spare
 * (reused before any new chunk is taken), and the others go back to the pool. Carving happens under the stripe's lock; stripes are
 * chosen by thread, so threads rarely share one. No lock is global.
 */
public final class SequentialAllocator implements Allocator, Releaser, MemoryPool.Attempt {

    /** Slices are rounded up to a multiple of this many bytes. */
    public static final int ALIGNMENT = 8;
    /** Empty chunks kept for reuse; more go back to the pool, which keeps its own idle chunks. */
    private static final int MAX_SPARES = 1;

    private final MemoryPool pool;
    private final Category category;
    private final Stripe[] stripes;
    private final int chunkSize;
    private final int maxSliceSize;
    private final int maxTailWaste;
    private final int maxRequest;
    private final ConcurrentLinkedQueue<SlabChunk> spares = new ConcurrentLinkedQueue<>();
    private final AtomicInteger spareCount = new AtomicInteger();
    private final AtomicInteger chunksHeld = new AtomicInteger();
    private final AtomicLong liveBytes = new AtomicLong();
    private final AtomicLong wastedTailBytes = new AtomicLong();
    private final AtomicLong slicesCarved = new AtomicLong();
    private final AtomicLong fallbackAllocations = new AtomicLong();

    SequentialAllocator(MemoryPool pool, Category category, int stripes, int maxRequest) {
        if (stripes < 1 || stripes > 1024) {
            throw new IllegalArgumentException("stripes must be from 1 to 1024: " + stripes);
        }
        if (maxRequest < 1) {
            throw new IllegalArgumentException("the largest request must be positive: " + maxRequest);
        }
        this.pool = pool;
        this.category = category;
        this.chunkSize = pool.chunkSize();
        this.maxSliceSize = chunkSize / 4;
        this.maxTailWaste = chunkSize / 16;
        this.maxRequest = maxRequest;
        this.stripes = new Stripe[stripes];
        for (int i = 0; i < stripes; i++) {
            this.stripes[i] = new Stripe();
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

    @Override
    public boolean allocate(int requested, Allocation out) {
        if (requested <= 0 || requested > maxRequest) {
            throw new IllegalArgumentException("sequential allocator '" + category + "': size must be from 1 to "
                    + maxRequest + " bytes: " + requested);
        }
        MemoryPool.checkNotLive(out);
        int refusal = tryOnce(category, requested, out);
        return refusal == DONE || pool.atLimit(this, category, requested, out, refusal);
    }

    /** One try: a slice, or the general pool for requests that should not be carved. */
    @Override
    public int tryOnce(Category c, int requested, Allocation out) {
        int reserved = (requested + ALIGNMENT - 1) & -ALIGNMENT;
        if (reserved > maxSliceSize) {
            return fallback(requested, out);
        }
        if (!category.admit(reserved)) {
            return QUOTA;
        }
        boolean carved;
        try {
            carved = carve(requested, reserved, out);
        } catch (MemoryPool.CeilingReached e) {
            category.release(reserved);
            return CEILING;
        }
        if (!carved) {
            category.release(reserved);
            return fallback(requested, out);
        }
        return DONE;
    }

    /** Carves a slice from the calling thread's stripe; false when the request should go to the general pool. */
    private boolean carve(int requested, int reserved, Allocation out) {
        Stripe stripe = stripes[(int) (Thread.currentThread().getId() % stripes.length)];
        SlabChunk slab;
        int offset;
        synchronized (stripe) {
            slab = stripe.current;
            if (slab == null || chunkSize - slab.carved < reserved) {
                if (slab != null && chunkSize - slab.carved > maxTailWaste) {
                    return false;
                }
                if (slab != null) {
                    wastedTailBytes.addAndGet(chunkSize - slab.carved);
                    stripe.current = null;
                    slab.unreference();
                }
                slab = takeChunk();
                stripe.current = slab;
            }
            offset = slab.carved;
            slab.carved += reserved;
            slab.refs.incrementAndGet();
        }
        slab.liveBytes.addAndGet(reserved);
        liveBytes.addAndGet(reserved);
        slicesCarved.incrementAndGet();
        Allocation memory = slab.memory;
        out.chunk = memory.chunk;
        out.handle = memory.handle;
        out.sizeIndex = -1;
        out.offset = memory.offset + offset;
        out.address = memory.address + offset;
        out.category = category;
        out.requested = requested;
        out.reserved = reserved;
        out.releaser = this;
        out.releaserToken = slab;
        pool.countAllocation(category, requested, reserved, out);
        return true;
    }

    private int fallback(int requested, Allocation out) {
        int result = pool.tryAllocate(category, requested, out);
        if (result == DONE) {
            fallbackAllocations.incrementAndGet();
        }
        return result;
    }

    private SlabChunk takeChunk() {
        SlabChunk spare = spares.poll();
        if (spare != null) {
            spareCount.decrementAndGet();
            spare.refs.set(1);
            return spare;
        }
        SlabChunk slab = new SlabChunk();
        pool.acquireChunk(slab.memory);
        chunksHeld.incrementAndGet();
        return slab;
    }

    @Override
    public void release(Allocation allocation) {
        SlabChunk slab = (SlabChunk) allocation.releaserToken;
        slab.liveBytes.addAndGet(-allocation.reserved);
        liveBytes.addAndGet(-allocation.reserved);
        slab.unreference();
    }

    @Override
    public boolean resizeInPlace(Allocation allocation, int newRequested) {
        return newRequested > 0 && newRequested <= allocation.reserved;
    }

    /** Called by whoever dropped a chunk's count to zero: keep it as a spare or give it back. */
    private void recycle(SlabChunk slab) {
        slab.carved = 0;
        if (spareCount.incrementAndGet() <= MAX_SPARES) {
            spares.offer(slab);
        } else {
            spareCount.decrementAndGet();
            chunksHeld.decrementAndGet();
            pool.releaseChunk(slab.memory);
        }
    }

    /**
     * Gives every spare chunk back to the pool and retires the current chunks of
     * all stripes (their unused tails go back as soon as their slices do).
     *
     * @return the number of chunks given back now
     */
    public int trim() {
        for (Stripe stripe : stripes) {
            SlabChunk current;
            synchronized (stripe) {
                current = stripe.current;
                stripe.current = null;
            }
            if (current != null) {
                current.unreference();
            }
        }
        int released = 0;
        SlabChunk spare;
        while ((spare = spares.poll()) != null) {
            spareCount.decrementAndGet();
            chunksHeld.decrementAndGet();
            pool.releaseChunk(spare.memory);
            released++;
        }
        return released;
    }

    /** A snapshot of this allocator's chunks and slices. */
    public SequentialStats stats() {
        int current = 0;
        long currentLive = 0;
        for (Stripe stripe : stripes) {
            synchronized (stripe) {
                if (stripe.current != null) {
                    current++;
                    currentLive += stripe.current.liveBytes.get();
                }
            }
        }
        int held = chunksHeld.get();
        int spare = spareCount.get();
        long live = liveBytes.get();
        int pinned = Math.max(0, held - spare - current);
        return new SequentialStats(category.name(), chunkSize, held, current, pinned, spare, live,
                Math.max(0, live - currentLive), wastedTailBytes.get(), slicesCarved.get(), fallbackAllocations.get());
    }

    @Override
    public String toString() {
        return "sequential(" + category + ", stripes=" + stripes.length + ')';
    }

    /** A stripe: its current chunk, guarded by the stripe's monitor. */
    private static final class Stripe {
        SlabChunk current;
    }

    /** A whole pool chunk being carved into slices. */
    private final class SlabChunk {
        final Allocation memory = new Allocation();
        /** Live slices, plus one while the chunk is a stripe's current chunk. */
        final AtomicInteger refs = new AtomicInteger(1);
        final AtomicLong liveBytes = new AtomicLong();
        /** Bytes carved so far; guarded by the stripe that holds the chunk as current. */
        int carved;

        void unreference() {
            if (refs.decrementAndGet() == 0) {
                recycle(this);
            }
        }
    }
}
