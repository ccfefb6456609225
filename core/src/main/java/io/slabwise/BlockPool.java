package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The block pool: fixed-size blocks (1 MiB by default) for large payloads such
 * as the entries of an LRU block cache. A payload is stored as whole blocks,
 * then whole sub-blocks (1/16 of a block, 64 KiB by default), then mini-blocks
 * (1/32 of a sub-block, 2 KiB by default) for the rest, the last one partly
 * used. Each block is a region of its own from the pool's chunk source (not a
 * part of a chunk), some blocks are cut into sub-blocks and some sub-blocks
 * into mini-blocks, so every slot has one of three fixed sizes, any free slot
 * fits the next request of its size, and a region whose slots are all free is
 * a whole slot of the size above again. A free block can go back to the
 * operating system on its own: the pool keeps up to {@code maxIdleBlocks} of
 * them for reuse (they go back after the pool's idle decay time, on
 * {@link #trim()}, or when the pool nears its ceiling) and frees the rest.
 * Nothing comes from the general pool, whose size classes and thread caches
 * would hold memory of their own around the remainders.
 *
 * <pre>
 *  payload of 2.3 MiB:  [ block 1 MiB ][ block 1 MiB ][ sub 64 KiB ] x4 [ mini 2 KiB ] x26 [ last mini, partly used ]
 *  block (1 MiB region): whole, or cut:   [ s0 | s1 | ... | s15 ]   a bitmap of free sub-blocks per block
 *  sub-block s7:        [ m0 | m1 | ... | m31 ]        a bitmap of free mini-blocks per sub-block
 * </pre>
 *
 * <h2>What a payload reserves</h2>
 * Its blocks, sub-blocks and mini-blocks: less than one mini-block (2 KiB)
 * more than it asked for, under 3.2% from 64 KiB up and under 0.2% from 1 MiB
 * up. The parts are not contiguous: a payload is a list of parts (in the Netty
 * adapter a composite buffer), at most 15 sub-blocks and 32 mini-blocks after
 * its blocks.
 *
 * <h2>Threads</h2>
 * Blocks (whole or cut smaller) and cut sub-blocks are spread over stripes,
 * each with its own lock; a thread takes slots from the stripe chosen by its
 * id (a compaction's move, from the stripe of the payload it moves), and a
 * slot goes back to the stripe of its region, from whatever thread releases
 * it. A smaller size's stripe lock may take a larger size's, never
 * the other way round. No lock is global. A region whose slots are all free
 * goes back at once (a block to the idle blocks, a cut block or sub-block to
 * the size above); idle blocks are a lock-free deque; a new slot is taken from the fullest
 * region that has one (regions are kept in lists by free count, so that is
 * found without a scan), so lightly used regions can empty out.
 */
public final class BlockPool {

    /** How many sub-blocks make a block. */
    static final int SUB_BLOCKS_PER_BLOCK = 16;
    /** How many mini-blocks make a sub-block. */
    static final int MINI_BLOCKS_PER_SUB_BLOCK = 32;
    /** The most stripes a block pool may have. */
    static final int MAX_STRIPES = 1024;

    private final Admission admission;
    private final WholeChunks chunks;
    /** Times how long blocks stay idle. */
    private final Ticker ticker;
    /** Takes slots back; private, so that no caller can release a slot twice. */
    private final Releaser releaser = new SlotReleaser();
    private final Category category;
    private final SlotSize blocks;
    private final SlotSize subBlocks;
    private final SlotSize miniBlocks;
    private final int maxIdleBlocks;
    /** Free blocks kept for reuse, most recently freed first; no lock. */
    private final ConcurrentLinkedDeque<SlotRegion> idleBlocks = new ConcurrentLinkedDeque<>();
    private final AtomicInteger idleBlockCount = new AtomicInteger();

    BlockPool(Admission admission, WholeChunks chunks, Ticker ticker, Category category, int blockSize, int stripes,
              int maxIdleBlocks) {
        int chunkSize = chunks.chunkSize();
        checkArguments(chunkSize, blockSize, stripes);
        if (maxIdleBlocks < 0) {
            throw new IllegalArgumentException("idle blocks kept must not be negative: " + maxIdleBlocks);
        }
        this.admission = admission;
        this.chunks = chunks;
        this.ticker = ticker;
        this.category = category;
        this.maxIdleBlocks = maxIdleBlocks;
        this.blocks = new SlotSize(blockSize, blockSize, stripes, null); // a block is a region of its own
        int subBlockSize = Math.max(PoolConfig.PAGE_SIZE, blockSize / SUB_BLOCKS_PER_BLOCK);
        // sub-blocks are cut from blocks, so a block whose sub-blocks are all free is a block again
        this.subBlocks = new SlotSize(subBlockSize, blockSize, stripes, blocks);
        this.miniBlocks = new SlotSize(subBlockSize / MINI_BLOCKS_PER_SUB_BLOCK, subBlockSize, stripes, subBlocks);
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

    /** The size of one mini-block. */
    public int miniBlockSize() {
        return miniBlocks.slotSize;
    }

    /** The general pool of this category: where a part that must grow moves to. */
    public Allocator generalAllocator() {
        return category.allocator;
    }

    /** Checks the arguments of a block pool before anything is made for it. */
    static void checkArguments(int chunkSize, int blockSize, int stripes) {
        if (blockSize < PoolConfig.PAGE_SIZE || blockSize > chunkSize || Integer.bitCount(blockSize) != 1) {
            throw new IllegalArgumentException("block size must be a power of two from " + PoolConfig.PAGE_SIZE
                    + " to the chunk size " + chunkSize + ": " + blockSize);
        }
        if (stripes < 1 || stripes > MAX_STRIPES) {
            throw new IllegalArgumentException("stripes must be from 1 to " + MAX_STRIPES + ": " + stripes);
        }
    }

    /**
     * Allocates the parts of a payload of {@code size} bytes: whole blocks,
     * whole sub-blocks, then mini-blocks, the last one holding what is left.
     * The returned allocations are live and each must be freed with
     * {@link MemoryPool#free}; together they hold exactly {@code size} bytes
     * of requested capacity. At a limit the category's policy applies to the
     * payload as a whole: no part is kept unless all could be had.
     *
     * @return the parts, or null at a limit under {@link LimitPolicy#RETURN_NULL}
     * @throws IllegalArgumentException when {@code size} is not positive
     * @throws MemoryLimitException     at a limit under {@link LimitPolicy#FAIL}, or when a wait timed out
     */
    public List<Allocation> allocate(int size) {
        return allocate(size, false);
    }

    /**
     * Like {@link #allocate}, but never waits: null at a limit whatever the
     * category's policy. For a cache that makes room by evicting its own
     * entries and tries again, which it cannot do while waiting.
     *
     * @throws IllegalArgumentException when {@code size} is not positive
     */
    public List<Allocation> tryAllocate(int size) {
        return allocate(size, true);
    }

    private List<Allocation> allocate(int size, boolean neverWait) {
        admission.checkOpen();
        if (size <= 0) {
            throw new IllegalArgumentException("block pool '" + category + "': payload size must be positive: " + size);
        }
        PayloadAttempt attempt = new PayloadAttempt(callerStripe());
        return admission.admit(attempt, category, size, null, neverWait) ? attempt.parts : null;
    }

    /** How a payload of {@code size} bytes is cut: whole blocks, whole sub-blocks, then mini-blocks for the remainder. */
    private final class Shape {
        final int wholeBlocks;
        final int wholeSubBlocks;
        final int remainder;
        final int minis;

        Shape(int size) {
            wholeBlocks = size / blocks.slotSize;
            int rest = size - wholeBlocks * blocks.slotSize;
            wholeSubBlocks = rest / subBlocks.slotSize;
            remainder = rest - wholeSubBlocks * subBlocks.slotSize;
            minis = (remainder + miniBlocks.slotSize - 1) / miniBlocks.slotSize;
        }
    }

    /** All the parts of one payload, or none of them, from one stripe. */
    private final class PayloadAttempt implements Attempt {
        /** The index of the stripes the parts come from. */
        private final int stripe;
        List<Allocation> parts;

        PayloadAttempt(int stripe) {
            this.stripe = stripe;
        }

        /** Its blocks, sub-blocks and mini-blocks. */
        @Override
        public long leastReserved(int size) {
            Shape shape = new Shape(size);
            return (long) shape.wholeBlocks * blocks.slotSize + (long) shape.wholeSubBlocks * subBlocks.slotSize
                    + (long) shape.minis * miniBlocks.slotSize;
        }

        /** Its blocks, and the blocks its sub-blocks (and the sub-block its mini-blocks are cut from) come from. */
        @Override
        public long leastCommitted(int size) {
            Shape shape = new Shape(size);
            int subBlocksPerBlock = blocks.slotSize / subBlocks.slotSize;
            int cutSubBlocks = shape.wholeSubBlocks + (shape.minis > 0 ? 1 : 0);
            return (long) (shape.wholeBlocks + (cutSubBlocks + subBlocksPerBlock - 1) / subBlocksPerBlock) * blocks.slotSize;
        }

        @Override
        public int tryOnce(Category c, int size, Allocation unused) {
            Shape shape = new Shape(size);
            int wholeBlocks = shape.wholeBlocks;
            int wholeSubBlocks = shape.wholeSubBlocks;
            int remainder = shape.remainder;
            int minis = shape.minis;
            List<Allocation> taken = new ArrayList<>(wholeBlocks + wholeSubBlocks + minis);
            int result = DONE;
            try {
                for (int i = 0; i < wholeBlocks && result == DONE; i++) {
                    result = take(blocks, blocks.slotSize, wholeBlocks - i, taken);
                }
                for (int i = 0; i < wholeSubBlocks && result == DONE; i++) {
                    result = take(subBlocks, subBlocks.slotSize, wholeSubBlocks - i, taken);
                }
                for (int i = 0; i < minis && result == DONE; i++) {
                    result = take(miniBlocks, Math.min(miniBlocks.slotSize, remainder - i * miniBlocks.slotSize),
                            minis - i, taken);
                }
            } catch (RuntimeException | Error e) {
                taken.forEach(BlockPool.this::untake);
                throw e;
            }
            if (result != DONE) {
                taken.forEach(BlockPool.this::untake); // never handed out: neither an allocation nor a release
                return result;
            }
            for (Allocation part : taken) {
                count(part);
            }
            parts = taken;
            return DONE;
        }

        private int take(SlotSize slots, int requested, int want, List<Allocation> taken) {
            Allocation part = new Allocation();
            int result = trySlot(slots, requested, want, stripe, part);
            if (result == DONE) {
                taken.add(part);
            }
            return result;
        }
    }

    /** Takes one whole block into {@code out}; the limit policy of the category applies. */
    public boolean allocateBlock(Allocation out) {
        admission.checkOpen();
        out.checkNotLive();
        return admission.admit((c, size, o) -> {
            int result = trySlot(blocks, blocks.slotSize, 1, callerStripe(), o);
            if (result == Attempt.DONE) {
                count(o);
            }
            return result;
        }, category, blocks.slotSize, out);
    }

    /** The index of the stripes the calling thread takes slots from: chosen by its id, so threads rarely share one. */
    private int callerStripe() {
        return (int) (Thread.currentThread().getId() % blocks.stripes.length);
    }

    /**
     * Takes a slot into {@code out} within the category's quota, not counted
     * yet: {@link #count} once the request is whole, or {@link #untake}.
     */
    private int trySlot(SlotSize slots, int requested, int want, int stripe, Allocation out) {
        if (!category.admit(slots.slotSize)) {
            return Attempt.QUOTA;
        }
        try {
            slots.take(requested, want, stripe, out);
            return Attempt.DONE;
        } catch (CeilingReached e) {
            category.release(slots.slotSize);
            return Attempt.CEILING;
        } catch (RuntimeException | Error e) { // the chunk source failed: the quota is as it was
            category.release(slots.slotSize);
            throw e;
        }
    }

    /** Counts a slot taken by {@link #trySlot} as an allocation of the calling thread. */
    private void count(Allocation slot) {
        chunks.countCarved(category, slot.requested, slot.reserved, slot);
    }

    /**
     * Gives back a slot taken by {@link #trySlot} and never counted, of a
     * payload refused part-way: its region and quota are as before the take,
     * so nobody waiting is woken.
     */
    private void untake(Allocation slot) {
        releaser.release(slot);
        category.release(slot.reserved);
        slot.clear();
    }

    /** Takes a released slot back into its region, from any thread. */
    private static final class SlotReleaser implements Releaser {
        @Override
        public void release(Allocation allocation) {
            SlotToken token = (SlotToken) allocation.releaserToken;
            token.region.owner().put(token.region, token.slot);
        }

        @Override
        public boolean resizeInPlace(Allocation allocation, int newRequested) {
            return newRequested > 0 && newRequested <= allocation.reserved; // at 0 it moves: no slot or slice pinned by an empty buffer
        }

        @Override
        public boolean allocateForMove(Allocation from, Allocation to) {
            return false; // a payload moves whole: see allocateForMove(int)
        }
    }

    /**
     * The parts of a new payload of {@code size} bytes for a compaction's
     * move of a payload of this pool, {@code leaving} one of its parts: as
     * {@link #allocate}, but from the stripe of {@code leaving}, where the
     * compaction counted room for them (whatever stripe the compacting thread
     * uses), null at a limit whatever the category's policy (never waits),
     * and never in a block being evacuated.
     */
    List<Allocation> allocateForMove(int size, Allocation leaving) {
        PayloadAttempt attempt = new PayloadAttempt(((SlotToken) leaving.releaserToken).region.stripe.index);
        return admission.tryAdmit(attempt, category, size, null) ? attempt.parts : null;
    }

    /**
     * Adds to {@code out} the blocks cut into sub-blocks whose sub-blocks in
     * use hold at most {@code maxUsedBytes} (a sub-block cut into mini-blocks
     * counts whole), for a compaction to choose from. Moved payloads take
     * their sub-blocks and mini-blocks from other blocks of the same stripe
     * ({@link #allocateForMove}), so an evacuated block empties and goes back
     * to the operating system; each stripe is the destination of its blocks,
     * with its free sub-blocks as the room the moves can use.
     */
    void sparseBlocks(long maxUsedBytes, List<CompactionChoice.Victim> out) {
        for (Stripe stripe : subBlocks.stripes) {
            synchronized (stripe) {
                CompactionChoice.Destination destination = new CompactionChoice.Destination(blocks.slotSize,
                        stripe.freeSlots * subBlocks.slotSize);
                for (SlotRegion head : stripe.byFree) {
                    for (SlotRegion region = head; region != null; region = region.next) {
                        long used = (long) (subBlocks.slotsPerRegion - region.free()) * subBlocks.slotSize;
                        if (used > 0 && used <= maxUsedBytes) {
                            out.add(CompactionChoice.Victim.block(region, region.memory.chunk, used, destination, category));
                        }
                    }
                }
            }
        }
    }

    /** Gives every idle block back to the operating system; returns how many. */
    public int trim() {
        return releaseIdleBlocks(0);
    }

    /** Gives back the idle blocks that have been idle for at least {@code idleNanos}; returns how many. */
    int releaseIdleBlocks(long idleNanos) {
        long now = ticker.read();
        int released = 0;
        for (SlotRegion block : idleBlocks) {
            if (now - block.idleSinceNanos >= idleNanos && idleBlocks.removeFirstOccurrence(block)) {
                idleBlockCount.decrementAndGet();
                chunks.releaseBlockRegion(block.memory);
                released++;
            }
        }
        return released;
    }

    /** An idle block to reuse, or null. */
    private SlotRegion reuseIdleBlock() {
        SlotRegion block = idleBlocks.pollFirst();
        if (block != null) {
            idleBlockCount.decrementAndGet();
        }
        return block;
    }

    /** Keeps a block that was emptied for reuse; false when enough are kept already. */
    private boolean keepIdleBlock(SlotRegion block) {
        if (idleBlockCount.incrementAndGet() > maxIdleBlocks) {
            idleBlockCount.decrementAndGet();
            return false;
        }
        block.idleSinceNanos = ticker.read();
        idleBlocks.offerFirst(block);
        return true;
    }

    /** A snapshot: blocks held and idle; blocks, sub-blocks and mini-blocks in use and free. */
    public BlockStats stats() {
        // smaller sizes first: a region cut smaller counts as a slot in use of the size above
        long[] m = miniBlocks.counts();
        long[] s = subBlocks.counts();
        long[] b = blocks.counts();
        int idle = idleBlockCount.get();
        return new BlockStats(category.name(), blocks.slotSize, subBlocks.slotSize, miniBlocks.slotSize,
                b[0] + idle, Math.max(0, b[1] - s[0]), idle, Math.max(0, s[1] - m[0]), s[2], m[1], m[2]);
    }

    @Override
    public String toString() {
        return "blocks(" + category + ", blockSize=" + blocks.slotSize + ", subBlockSize=" + subBlocks.slotSize
                + ", miniBlockSize=" + miniBlocks.slotSize + ')';
    }

    /** Where a slot came from. */
    private record SlotToken(SlotRegion region, int slot) {
    }

    /** Whether {@code allocation} is a part of a block pool payload. */
    static boolean isPart(Allocation allocation) {
        return allocation.releaserToken instanceof SlotToken;
    }

    /** The block pool of a payload part (see {@link #isPart}). */
    static BlockPool poolOf(Allocation part) {
        return ((SlotToken) part.releaserToken).region.owner().pool();
    }

    /**
     * The regions of one slot size, spread over stripes. Without a
     * {@code parent} a region is a block of its own from the chunk source
     * (holding one slot, the block); with one it is one slot of the parent
     * size (a block cut into sub-blocks, a sub-block cut into mini-blocks).
     */
    private final class SlotSize {
        final int slotSize;
        final int slotsPerRegion;
        final Stripe[] stripes;
        final SlotSize parent;

        /** The pool these slots belong to. */
        BlockPool pool() {
            return BlockPool.this;
        }

        SlotSize(int slotSize, int regionSize, int stripeCount, SlotSize parent) {
            this.slotSize = slotSize;
            this.slotsPerRegion = regionSize / slotSize;
            this.parent = parent;
            this.stripes = new Stripe[stripeCount];
            for (int i = 0; i < stripeCount; i++) {
                stripes[i] = new Stripe(this, i);
            }
        }

        /**
         * Takes a slot of stripe {@code stripe} as a buffer's memory of
         * {@code requested} bytes in the pool's category, not counted yet (see {@link #trySlot}).
         */
        void take(int requested, int want, int stripe, Allocation out) {
            takeSlot(want, stripe, out, category, requested, slotSize);
            out.releaser = releaser;
        }

        /** Takes a slot of this size, of stripe {@code stripe}, as the region of a child size: not accounted, not a buffer. */
        void takeRegion(int want, int stripe, Allocation out) {
            takeSlot(want, stripe, out, null, 0, 0);
        }

        private void takeSlot(int want, int stripeIndex, Allocation out, Category category, int requested, int reserved) {
            Stripe stripe = stripes[stripeIndex];
            SlotRegion region;
            int slot;
            synchronized (stripe) {
                region = stripe.regionFor(want);
                if (region == null) {
                    region = parent == null ? reuseIdleBlock() : null;
                    if (region != null) {
                        region.stripe = stripe;
                    } else {
                        region = new SlotRegion(stripe);
                        acquireRegion(stripeIndex, region.memory);
                    }
                    stripe.add(region);
                }
                stripe.unlink(region);
                slot = region.takeSlot();
                stripe.link(region);
            }
            stripe.live.incrementAndGet();
            Allocation memory = region.memory;
            out.chunk = memory.chunk;
            out.handle = memory.handle;
            out.place(-1, (int) (memory.offset() + (long) slot * slotSize), category, requested, reserved);
            out.releaserToken = new SlotToken(region, slot);
        }

        private void acquireRegion(int stripe, Allocation region) {
            if (parent == null) {
                chunks.acquireBlockRegion(slotSize, region);
            } else {
                parent.takeRegion(1, stripe, region); // the same stripe of the size above: a payload's parts share one
            }
        }

        /** Gives back a region all of whose slots are free: a block is kept idle or freed, a smaller one is put back. */
        private void releaseRegion(SlotRegion region) {
            Allocation memory = region.memory;
            if (parent == null) {
                // a block a compaction emptied goes back to the operating system, not to the idle blocks
                boolean evacuated = chunks.evacuateBlock(memory.chunk, false);
                if (evacuated || !keepIdleBlock(region)) {
                    chunks.releaseBlockRegion(memory);
                }
            } else {
                SlotToken token = (SlotToken) memory.releaserToken;
                parent.put(token.region, token.slot);
                memory.clear();
            }
        }

        void put(SlotRegion region, int slot) {
            Stripe stripe = region.stripe;
            boolean empty;
            synchronized (stripe) {
                stripe.unlink(region);
                region.put(slot);
                empty = region.free() == slotsPerRegion;
                if (empty) {
                    stripe.remove();
                } else {
                    stripe.link(region);
                }
            }
            stripe.live.decrementAndGet();
            if (empty) {
                releaseRegion(region);
            }
        }

        /** {regions held (idle blocks not counted), slots in use, free slots in those regions}. */
        long[] counts() {
            long[] counts = new long[3];
            for (Stripe stripe : stripes) {
                synchronized (stripe) {
                    counts[0] += stripe.regions;
                    counts[1] += (long) stripe.regions * slotsPerRegion - stripe.freeSlots;
                    counts[2] += stripe.freeSlots;
                }
            }
            return counts;
        }
    }

    /**
     * A stripe: its regions of one slot size, guarded by the stripe's monitor,
     * in doubly linked lists by their number of free slots.
     */
    private final class Stripe {
        final SlotSize size;
        /** Its place among its size's stripes: the same for the stripes of every size a thread takes slots from. */
        final int index;
        /** The regions with {@code i} free slots, linked through {@link SlotRegion#next}. */
        final SlotRegion[] byFree;
        final AtomicLong live = new AtomicLong();
        int regions;
        long freeSlots;

        Stripe(SlotSize size, int index) {
            this.size = size;
            this.index = index;
            this.byFree = new SlotRegion[size.slotsPerRegion + 1];
        }

        /**
         * The region to take the next of {@code want} slots from: the one with
         * the fewest free slots that has all of them (so a payload's slots
         * tend to share a region and to leave it together), else the fullest
         * that has one (so small holes are filled and other regions can
         * empty out); null when no region has a free slot.
         */
        SlotRegion regionFor(int want) {
            for (int free = Math.min(want, byFree.length - 1); free < byFree.length; free++) {
                SlotRegion region = usable(byFree[free]);
                if (region != null) {
                    return region;
                }
            }
            for (int free = 1; free < want && free < byFree.length; free++) {
                SlotRegion region = usable(byFree[free]);
                if (region != null) {
                    return region;
                }
            }
            return null;
        }

        /** The first region from {@code head} on that is not in a block being evacuated; null if none. */
        private SlotRegion usable(SlotRegion head) {
            SlotRegion region = head;
            while (region != null && region.memory.chunk.evacuating) {
                region = region.next; // only while a compaction runs
            }
            return region;
        }

        /** Starts holding a new region, all of it free. */
        void add(SlotRegion region) {
            regions++;
            link(region);
        }

        /** Stops holding a region, already taken out of its list. */
        void remove() {
            regions--;
        }

        /** Puts a region in the list of its free count; {@link #freeSlots} counts it from now. */
        void link(SlotRegion region) {
            ListNode.pushFront(byFree, region.free(), region);
            freeSlots += region.free();
        }

        /** Takes a region out of its list, before its free count changes. */
        void unlink(SlotRegion region) {
            ListNode.remove(byFree, region.free(), region);
            freeSlots -= region.free();
        }
    }

    /**
     * A region cut into slots of one size (a block, a block cut into
     * sub-blocks or a sub-block cut into mini-blocks); guarded by its
     * stripe's monitor. An idle block is in no stripe until it is reused.
     */
    private final class SlotRegion extends Bitmap<SlotRegion> implements Compaction.Evacuable {
        Stripe stripe;
        final Allocation memory = new Allocation();
        /** When the block became idle, in {@link Ticker} nanoseconds. */
        long idleSinceNanos;

        SlotRegion(Stripe stripe) {
            super(stripe.size.slotsPerRegion); // which slots are taken
            this.stripe = stripe;
        }

        SlotSize owner() {
            return stripe.size;
        }

        /** Marks the block a region of sub-blocks cuts, chosen by a compaction; false when the region emptied meanwhile. */
        @Override
        public boolean startEvacuation(CompactionChoice.Victim victim) {
            chunks.evacuateBlock(victim.chunk, true);
            if (!memory.isLive()) { // emptied meanwhile
                chunks.evacuateBlock(victim.chunk, false);
                return false;
            }
            return true;
        }

        /** Unmarks the block; true when the region emptied (its block went back then). */
        @Override
        public boolean endEvacuation(CompactionChoice.Victim victim) {
            chunks.evacuateBlock(victim.chunk, false); // no change when it emptied: then it went back already
            return !memory.isLive();
        }

        /** Takes the lowest free slot; the caller has checked there is one. */
        int takeSlot() {
            int slot = take();
            if (slot < 0) {
                throw new IllegalStateException("slot region has no free slot");
            }
            return slot;
        }

        void put(int slot) {
            if (!release(slot)) {
                throw new IllegalStateException("slot " + slot + " of a " + stripe.size.slotSize + "-byte slot region is already free");
            }
        }
    }
}
