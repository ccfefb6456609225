package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The block pool: fixed-size blocks (1 MiB by default) for large payloads such
 * as the entries of an LRU block cache. A payload is stored as whole blocks,
 * then whole sub-blocks (1/16 of a block, 64 KiB by default), then a small
 * remainder. Chunks are cut into blocks only, and some blocks into
 * sub-blocks, so every slot has one of two fixed sizes and any free slot fits
 * the next request of its size; a block whose sub-blocks are all free is a
 * whole block again.
 *
 * <pre>
 *  payload of 2.3 MiB:  [ block 1 MiB ][ block 1 MiB ][ sub 64 KiB ] x4 [ pages ][ last partial page ]
 *                                                                       remainder &lt; 64 KiB, from the
 *                                                                       general pool, same category
 *  chunk (4 MiB):  [ b0 | b1 | b2 | b3 ]          a bitmap of free blocks per chunk
 *  block b2:       [ s0 | s1 | ... | s15 ]        a bitmap of free sub-blocks per block
 * </pre>
 *
 * <h2>What a payload reserves</h2>
 * Blocks and sub-blocks exactly. The remainder (under a sub-block) comes from
 * the general pool in two parts: its whole pages as one run, and its last
 * partial page as one small element. With sub-blocks of up to 128 KiB (blocks
 * of up to 2 MiB) every run of fewer pages than a sub-block is a size class of
 * its own, so the run is exact, and only the small element is rounded up, by
 * less than 512 bytes (one eighth of the 4-8 KiB group): a payload reserves
 * less than 512 bytes more than it asked for, under 1% from 64 KiB up. With
 * larger sub-blocks the run is rounded to its size class too.
 *
 * <h2>Threads</h2>
 * Chunks (and blocks cut into sub-blocks) are spread over stripes, each with
 * its own lock; a thread takes slots from the stripe chosen by its id, and a
 * slot goes back to the stripe of its region, from whatever thread releases
 * it. A sub-block stripe's lock may take a block stripe's lock, never the
 * other way round. No lock is global. A region whose slots are all free goes
 * back at once (a chunk to the pool, which keeps idle chunks for reuse; a
 * block to the blocks); a new slot is taken from the fullest region that has
 * one, so lightly used regions can empty out.
 */
public final class BlockPool implements Releaser {

    /** How many sub-blocks make a block. */
    static final int SUB_BLOCKS_PER_BLOCK = 16;

    private final MemoryPool pool;
    private final Category category;
    private final SlotSize blocks;
    private final SlotSize subBlocks;

    BlockPool(MemoryPool pool, Category category, int blockSize, int stripes) {
        int chunkSize = pool.chunkSize();
        if (blockSize < PoolConfig.PAGE_SIZE || blockSize > chunkSize || Integer.bitCount(blockSize) != 1) {
            throw new IllegalArgumentException("block size must be a power of two from " + PoolConfig.PAGE_SIZE
                    + " to the chunk size " + chunkSize + ": " + blockSize);
        }
        if (stripes < 1 || stripes > 1024) {
            throw new IllegalArgumentException("stripes must be from 1 to 1024: " + stripes);
        }
        this.pool = pool;
        this.category = category;
        this.blocks = new SlotSize(blockSize, chunkSize, stripes, null);
        int subBlockSize = Math.max(PoolConfig.PAGE_SIZE, blockSize / SUB_BLOCKS_PER_BLOCK);
        // sub-blocks are cut from blocks, so a block whose sub-blocks are all free is a block again
        this.subBlocks = new SlotSize(subBlockSize, blockSize, stripes, blocks);
    }

    /** The category payloads are accounted to. */
    public Category category() {
        return category;
    }

    /** The size of one block. */
    public int blockSize() {
        return blocks.slotSize;
    }

    /** The size of one sub-block. */
    public int subBlockSize() {
        return subBlocks.slotSize;
    }

    /** The general pool of this category: where remainders come from, and where a part that must grow moves to. */
    public Allocator generalAllocator() {
        return category.allocator;
    }

    /**
     * Allocates the parts of a payload of {@code size} bytes: whole blocks,
     * whole sub-blocks, then the remainder's whole pages and its last partial
     * page. The returned allocations are live and each must be freed with
     * {@link MemoryPool#free}; together they hold exactly {@code size} bytes of
     * requested capacity. At a limit the category's policy applies to the
     * payload as a whole: no part is kept unless all could be had.
     *
     * @return the parts, or null at a limit under {@link LimitPolicy#RETURN_NULL}
     * @throws IllegalArgumentException when {@code size} is not positive
     * @throws MemoryLimitException     at a limit under {@link LimitPolicy#FAIL}, or when a wait timed out
     */
    public List<Allocation> allocate(int size) {
        if (size <= 0) {
            throw new IllegalArgumentException("block pool '" + category + "': payload size must be positive: " + size);
        }
        PayloadAttempt attempt = new PayloadAttempt();
        int refusal = pool.mustQueue(category) ? MemoryPool.Attempt.QUEUED : attempt.tryOnce(category, size, null);
        if (refusal == MemoryPool.Attempt.DONE || pool.atLimit(attempt, category, size, new Allocation(), refusal)) {
            return attempt.parts;
        }
        return null;
    }

    /** All the parts of one payload, or none of them. */
    private final class PayloadAttempt implements MemoryPool.Attempt {
        List<Allocation> parts;

        @Override
        public int tryOnce(Category c, int size, Allocation unused) {
            int wholeBlocks = size / blocks.slotSize;
            int rest = size - wholeBlocks * blocks.slotSize;
            int wholeSubBlocks = rest / subBlocks.slotSize;
            int remainder = rest - wholeSubBlocks * subBlocks.slotSize;
            int remainderPages = remainder & -PoolConfig.PAGE_SIZE; // an exact run (see the class comment)
            int lastPartialPage = remainder - remainderPages;        // one small element
            List<Allocation> taken = new ArrayList<>(wholeBlocks + wholeSubBlocks + 2);
            int result = DONE;
            try {
                for (int i = 0; i < wholeBlocks && result == DONE; i++) {
                    result = take(blocks, taken);
                }
                for (int i = 0; i < wholeSubBlocks && result == DONE; i++) {
                    result = take(subBlocks, taken);
                }
                if (result == DONE && remainderPages > 0) {
                    result = takeGeneral(remainderPages, taken);
                }
                if (result == DONE && lastPartialPage > 0) {
                    result = takeGeneral(lastPartialPage, taken);
                }
            } catch (RuntimeException | Error e) {
                taken.forEach(pool::free);
                throw e;
            }
            if (result != DONE) {
                taken.forEach(pool::free);
                return result;
            }
            parts = taken;
            return DONE;
        }

        private int takeGeneral(int requested, List<Allocation> taken) {
            Allocation part = new Allocation();
            int result = pool.tryAllocate(category, requested, part);
            if (result == DONE) {
                taken.add(part);
            }
            return result;
        }

        private int take(SlotSize slots, List<Allocation> taken) {
            Allocation part = new Allocation();
            int result = trySlot(slots, part);
            if (result == DONE) {
                taken.add(part);
            }
            return result;
        }
    }

    /** Takes one whole block into {@code out}; the limit policy of the category applies. */
    public boolean allocateBlock(Allocation out) {
        MemoryPool.checkNotLive(out);
        MemoryPool.Attempt attempt = (c, size, o) -> trySlot(blocks, o);
        int refusal = pool.mustQueue(category) ? MemoryPool.Attempt.QUEUED : trySlot(blocks, out);
        return refusal == MemoryPool.Attempt.DONE || pool.atLimit(attempt, category, blocks.slotSize, out, refusal);
    }

    private int trySlot(SlotSize slots, Allocation out) {
        if (!category.admit(slots.slotSize)) {
            return MemoryPool.Attempt.QUOTA;
        }
        try {
            slots.take(out);
            return MemoryPool.Attempt.DONE;
        } catch (MemoryPool.CeilingReached e) {
            category.release(slots.slotSize);
            return MemoryPool.Attempt.CEILING;
        }
    }

    @Override
    public void release(Allocation allocation) {
        SlotToken token = (SlotToken) allocation.releaserToken;
        token.chunk.owner().put(token.chunk, token.slot);
    }

    @Override
    public boolean resizeInPlace(Allocation allocation, int newRequested) {
        return newRequested > 0 && newRequested <= allocation.reserved;
    }

    /** Gives every chunk with no slot in use back to the pool; returns how many. */
    public int trim() {
        return subBlocks.trim() + blocks.trim();
    }

    /** A snapshot: chunks held, blocks and sub-blocks in use and free. */
    public BlockStats stats() {
        long[] s = subBlocks.counts(); // read first: a block cut into sub-blocks counts as used below
        long[] b = blocks.counts();
        return new BlockStats(category.name(), blocks.slotSize, subBlocks.slotSize, pool.chunkSize(),
                (int) b[0], Math.max(0, b[1] - s[0]), b[2], s[1], s[2]);
    }

    @Override
    public String toString() {
        return "blocks(" + category + ", blockSize=" + blocks.slotSize + ", subBlockSize=" + subBlocks.slotSize + ')';
    }

    /** Where a slot came from. */
    private record SlotToken(SlotChunk chunk, int slot) {
    }

    /**
     * The regions of one slot size, spread over stripes. A region is a whole
     * pool chunk, or, when {@code parent} is given, one slot of the parent
     * size (a block cut into sub-blocks).
     */
    private final class SlotSize {
        final int slotSize;
        final int slotsPerChunk;
        final Stripe[] stripes;
        final SlotSize parent;

        SlotSize(int slotSize, int regionSize, int stripeCount, SlotSize parent) {
            this.slotSize = slotSize;
            this.slotsPerChunk = regionSize / slotSize;
            this.parent = parent;
            this.stripes = new Stripe[stripeCount];
            for (int i = 0; i < stripeCount; i++) {
                stripes[i] = new Stripe(this);
            }
        }

        /** Takes a slot as a buffer's memory, accounted to the pool's category. */
        void take(Allocation out) {
            takeRegion(out);
            out.category = category;
            out.requested = slotSize;
            out.reserved = slotSize;
            out.releaser = BlockPool.this;
            pool.countAllocation(category, slotSize, slotSize, out);
        }

        /** Takes a slot of this size as the region of a child size: not accounted, not a buffer. */
        void takeRegion(Allocation out) {
            Stripe stripe = stripes[(int) (Thread.currentThread().getId() % stripes.length)];
            SlotChunk chunk;
            int slot;
            synchronized (stripe) {
                chunk = stripe.fullestWithFreeSlot();
                if (chunk == null) {
                    chunk = new SlotChunk(stripe);
                    acquireRegion(chunk.memory);
                    stripe.chunks.add(chunk);
                }
                slot = chunk.take();
            }
            stripe.live.incrementAndGet();
            fill(out, chunk, slot);
        }

        private void acquireRegion(Allocation region) {
            if (parent == null) {
                pool.acquireChunk(region);
            } else {
                parent.takeRegion(region);
            }
        }

        private void releaseRegion(Allocation region) {
            if (parent == null) {
                pool.releaseChunk(region);
            } else {
                SlotToken token = (SlotToken) region.releaserToken;
                parent.put(token.chunk, token.slot);
                region.clear();
            }
        }

        private void fill(Allocation out, SlotChunk chunk, int slot) {
            Allocation memory = chunk.memory;
            long offset = (long) slot * slotSize;
            out.chunk = memory.chunk;
            out.handle = memory.handle;
            out.sizeIndex = -1;
            out.offset = (int) (memory.offset + offset);
            out.address = memory.address + offset;
            out.releaserToken = new SlotToken(chunk, slot);
        }

        void put(SlotChunk chunk, int slot) {
            Stripe stripe = chunk.stripe;
            boolean empty;
            synchronized (stripe) {
                chunk.put(slot);
                empty = chunk.free == slotsPerChunk;
                if (empty) {
                    stripe.chunks.remove(chunk);
                }
            }
            stripe.live.decrementAndGet();
            if (empty) {
                releaseRegion(chunk.memory);
            }
        }

        int trim() {
            int released = 0;
            for (Stripe stripe : stripes) {
                List<SlotChunk> empty = new ArrayList<>();
                synchronized (stripe) {
                    stripe.chunks.removeIf(c -> {
                        if (c.free == slotsPerChunk) {
                            empty.add(c);
                            return true;
                        }
                        return false;
                    });
                }
                for (SlotChunk c : empty) {
                    releaseRegion(c.memory);
                    released++;
                }
            }
            return released;
        }

        /** {chunks, slots in use, free slots in the chunks held}. */
        long[] counts() {
            long[] counts = new long[3];
            for (Stripe stripe : stripes) {
                synchronized (stripe) {
                    counts[0] += stripe.chunks.size();
                    for (SlotChunk c : stripe.chunks) {
                        counts[1] += slotsPerChunk - c.free;
                        counts[2] += c.free;
                    }
                }
            }
            return counts;
        }
    }

    /** A stripe: its chunks of one slot size, guarded by the stripe's monitor. */
    private final class Stripe {
        final SlotSize size;
        final List<SlotChunk> chunks = new ArrayList<>();
        final AtomicLong live = new AtomicLong();

        Stripe(SlotSize size) {
            this.size = size;
        }

        /** The chunk with the fewest free slots that still has one, so other chunks can empty out. */
        SlotChunk fullestWithFreeSlot() {
            SlotChunk best = null;
            for (SlotChunk c : chunks) {
                if (c.free > 0 && (best == null || c.free < best.free)) {
                    best = c;
                }
            }
            return best;
        }
    }

    /** A pool chunk cut into slots of one size; guarded by its stripe's monitor. */
    private final class SlotChunk {
        final Stripe stripe;
        final Allocation memory = new Allocation();
        final long[] used;
        int free;

        SlotChunk(Stripe stripe) {
            this.stripe = stripe;
            this.free = stripe.size.slotsPerChunk;
            this.used = new long[(free + 63) >>> 6];
        }

        SlotSize owner() {
            return stripe.size;
        }

        int take() {
            for (int w = 0; w < used.length; w++) {
                long bits = used[w];
                if (bits != -1L) {
                    int bit = Long.numberOfTrailingZeros(~bits);
                    int slot = (w << 6) + bit;
                    if (slot < stripe.size.slotsPerChunk) {
                        used[w] = bits | (1L << bit);
                        free--;
                        return slot;
                    }
                }
            }
            throw new IllegalStateException("slot chunk has no free slot");
        }

        void put(int slot) {
            long mask = 1L << (slot & 63);
            if ((used[slot >>> 6] & mask) == 0) {
                throw new IllegalStateException("slot " + slot + " of a " + stripe.size.slotSize + "-byte slot chunk is already free");
            }
            used[slot >>> 6] &= ~mask;
            free++;
        }
    }
}
