package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The block pool: fixed-size blocks (1 MiB by default) for large payloads such
 * as the entries of an LRU block cache. A payload is stored as a sequence of
 * whole blocks plus a tail, so the chunks that hold blocks never see variable
 * sizes and cannot fragment externally.
 *
 * <pre>
 *  payload of 2.3 MiB:  [ block 1 MiB ][ block 1 MiB ][ tail: run of whole pages ][ last partial page ]
 *                          from block chunks           from the general pool, same category
 *  block chunk (4 MiB):  [ b0 | b1 | b2 | b3 ]   a bitmap of free blocks
 * </pre>
 *
 * <h2>The tail</h2>
 * The part of a payload after its last whole block is served by the general
 * pool in the same category: its whole pages as a run of exactly that many
 * pages, and the remaining bytes (under a page) from a size class, rounded up
 * by at most 12.5% of less than a page. A payload therefore reserves at most
 * about 1 KiB more than it asked for: under 2% at 64 KiB, under 0.02% at 8 MiB.
 *
 * <h2>Threads</h2>
 * Block chunks are spread over stripes, each with its own lock; a thread takes
 * blocks from the stripe chosen by its id, and a block goes back to the stripe
 * of its chunk, from whatever thread releases it. No lock is global. A chunk
 * whose blocks are all free goes back to the pool, except one per stripe, kept
 * for reuse.
 */
public final class BlockPool implements Releaser {

    private final MemoryPool pool;
    private final Category category;
    private final int blockSize;
    private final int blocksPerChunk;
    private final int pageSize;
    private final Stripe[] stripes;
    private final AtomicLong liveBlocks = new AtomicLong();

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
        this.blockSize = blockSize;
        this.blocksPerChunk = chunkSize / blockSize;
        this.pageSize = PoolConfig.PAGE_SIZE;
        this.stripes = new Stripe[stripes];
        for (int i = 0; i < stripes; i++) {
            this.stripes[i] = new Stripe();
        }
    }

    /** The category payloads are accounted to. */
    public Category category() {
        return category;
    }

    /** The size of one block. */
    public int blockSize() {
        return blockSize;
    }

    /** The general pool of this category: where tails come from, and where a block that must grow moves to. */
    public Allocator generalAllocator() {
        return category.allocator;
    }

    /**
     * Allocates the parts of a payload of {@code size} bytes: whole blocks, then
     * the tail. The returned allocations are live and each must be freed with
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
        int refusal = attempt.tryOnce(category, size, null);
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
            int blocks = size / blockSize;
            int tail = size - blocks * blockSize;
            int tailPages = tail / pageSize;
            int lastBytes = tail - tailPages * pageSize;
            List<Allocation> taken = new ArrayList<>(blocks + 2);
            int result = DONE;
            try {
                for (int i = 0; i < blocks && result == DONE; i++) {
                    Allocation block = new Allocation();
                    result = tryBlock(block);
                    if (result == DONE) {
                        taken.add(block);
                    }
                }
                if (result == DONE && tailPages > 0) {
                    Allocation run = new Allocation();
                    result = pool.tryAllocatePages(category, tailPages, tailPages * pageSize, run);
                    if (result == DONE) {
                        taken.add(run);
                    }
                }
                if (result == DONE && lastBytes > 0) {
                    Allocation last = new Allocation();
                    result = pool.tryAllocate(category, lastBytes, last);
                    if (result == DONE) {
                        taken.add(last);
                    }
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
    }

    /** Takes one whole block into {@code out}; the limit policy of the category applies. */
    public boolean allocateBlock(Allocation out) {
        MemoryPool.checkNotLive(out);
        MemoryPool.Attempt attempt = (c, size, o) -> tryBlock(o);
        int refusal = tryBlock(out);
        return refusal == MemoryPool.Attempt.DONE || pool.atLimit(attempt, category, blockSize, out, refusal);
    }

    private int tryBlock(Allocation out) {
        if (!category.admit(blockSize)) {
            return MemoryPool.Attempt.QUOTA;
        }
        try {
            takeBlock(out);
            return MemoryPool.Attempt.DONE;
        } catch (MemoryPool.CeilingReached e) {
            category.release(blockSize);
            return MemoryPool.Attempt.CEILING;
        }
    }

    private void takeBlock(Allocation out) {
        Stripe stripe = stripes[(int) (Thread.currentThread().getId() % stripes.length)];
        BlockChunk chunk;
        int slot;
        synchronized (stripe) {
            chunk = stripe.fullestWithFreeBlock();
            if (chunk == null) {
                chunk = new BlockChunk(stripe);
                pool.acquireChunk(chunk.memory);
                stripe.chunks.add(chunk);
            } else if (chunk.free == blocksPerChunk) {
                stripe.emptyChunks--;
            }
            slot = chunk.take();
        }
        liveBlocks.incrementAndGet();
        Allocation memory = chunk.memory;
        long offset = (long) slot * blockSize;
        out.chunk = memory.chunk;
        out.handle = memory.handle;
        out.sizeIndex = -1;
        out.offset = (int) (memory.offset + offset);
        out.address = memory.address + offset;
        out.category = category;
        out.requested = blockSize;
        out.reserved = blockSize;
        out.releaser = this;
        out.releaserToken = new BlockToken(chunk, slot);
        pool.countAllocation(category, blockSize, blockSize, out);
    }

    @Override
    public void release(Allocation allocation) {
        BlockToken token = (BlockToken) allocation.releaserToken;
        BlockChunk chunk = token.chunk;
        Stripe stripe = chunk.stripe;
        boolean giveBack = false;
        synchronized (stripe) {
            chunk.put(token.slot);
            if (chunk.free == blocksPerChunk) {
                if (stripe.emptyChunks >= 1) {
                    stripe.chunks.remove(chunk);
                    giveBack = true;
                } else {
                    stripe.emptyChunks++;
                }
            }
        }
        liveBlocks.decrementAndGet();
        if (giveBack) {
            pool.releaseChunk(chunk.memory);
        }
    }

    @Override
    public boolean resizeInPlace(Allocation allocation, int newRequested) {
        return newRequested > 0 && newRequested <= allocation.reserved;
    }

    /** Gives every chunk with no block in use back to the pool; returns how many. */
    public int trim() {
        int released = 0;
        for (Stripe stripe : stripes) {
            List<BlockChunk> empty = new ArrayList<>();
            synchronized (stripe) {
                stripe.chunks.removeIf(c -> {
                    if (c.free == blocksPerChunk) {
                        empty.add(c);
                        return true;
                    }
                    return false;
                });
                stripe.emptyChunks = 0;
            }
            for (BlockChunk c : empty) {
                pool.releaseChunk(c.memory);
                released++;
            }
        }
        return released;
    }

    /** A snapshot: chunks held, blocks in use, blocks free. */
    public BlockStats stats() {
        int chunks = 0;
        int emptyChunks = 0;
        long freeBlocks = 0;
        for (Stripe stripe : stripes) {
            synchronized (stripe) {
                chunks += stripe.chunks.size();
                emptyChunks += stripe.emptyChunks;
                for (BlockChunk c : stripe.chunks) {
                    freeBlocks += c.free;
                }
            }
        }
        return new BlockStats(category.name(), blockSize, pool.chunkSize(), chunks, emptyChunks, liveBlocks.get(), freeBlocks);
    }

    @Override
    public String toString() {
        return "blocks(" + category + ", blockSize=" + blockSize + ')';
    }

    /** Where a block came from. */
    private record BlockToken(BlockChunk chunk, int slot) {
    }

    /** A stripe: its block chunks, guarded by the stripe's monitor. */
    private final class Stripe {
        final List<BlockChunk> chunks = new ArrayList<>();
        int emptyChunks;

        /** The chunk with the fewest free blocks that still has one, so other chunks can empty out. */
        BlockChunk fullestWithFreeBlock() {
            BlockChunk best = null;
            for (BlockChunk c : chunks) {
                if (c.free > 0 && (best == null || c.free < best.free)) {
                    best = c;
                }
            }
            return best;
        }
    }

    /** A pool chunk cut into blocks; guarded by its stripe's monitor. */
    private final class BlockChunk {
        final Stripe stripe;
        final Allocation memory = new Allocation();
        final long[] used = new long[(blocksPerChunk + 63) >>> 6];
        int free = blocksPerChunk;

        BlockChunk(Stripe stripe) {
            this.stripe = stripe;
        }

        int take() {
            for (int w = 0; w < used.length; w++) {
                long bits = used[w];
                if (bits != -1L) {
                    int bit = Long.numberOfTrailingZeros(~bits);
                    int slot = (w << 6) + bit;
                    if (slot < blocksPerChunk) {
                        used[w] = bits | (1L << bit);
                        free--;
                        return slot;
                    }
                }
            }
            throw new IllegalStateException("block chunk has no free block");
        }

        void put(int slot) {
            long mask = 1L << (slot & 63);
            if ((used[slot >>> 6] & mask) == 0) {
                throw new IllegalStateException("block " + slot + " is already free");
            }
            used[slot >>> 6] &= ~mask;
            free++;
        }
    }
}
