package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.slabwise.Allocation;
import io.slabwise.Allocator;
import io.slabwise.BlockPool;
import io.slabwise.BlockStats;

import java.util.List;

/**
 * Netty buffers from a block pool: a payload becomes a {@link CompositeByteBuf}
 * of fixed-size blocks (1 MiB by default), then sub-blocks (64 KiB) and
 * mini-blocks (2 KiB) for the tail, so the memory behind an LRU block cache
 * never sees variable sizes. See {@link BlockPool}.
 *
 * <p>The composite has exactly the requested capacity, writer index 0, and
 * releases every block when its reference count drops to zero. Thread-safe.
 */
public final class BlockByteBufAllocator {

    private final SlabwiseAllocator parent;
    private final CategoryByteBufAllocator view;
    private final BlockPool blocks;

    BlockByteBufAllocator(SlabwiseAllocator parent, CategoryByteBufAllocator view, BlockPool blocks) {
        this.parent = parent;
        this.view = view;
        this.blocks = blocks;
    }

    /**
     * A composite direct buffer of exactly {@code size} bytes made of blocks.
     *
     * @return the buffer, or null at a limit when the category's policy is {@link io.slabwise.LimitPolicy#RETURN_NULL}
     * @throws IllegalArgumentException when {@code size} is not positive
     * @throws io.slabwise.MemoryLimitException at a limit under {@code FAIL}, or when a wait timed out
     */
    public ByteBuf allocate(int size) {
        return composite(blocks.allocate(size));
    }

    /**
     * Like {@link #allocate(int)}, but never waits: null at a limit whatever
     * the category's policy. For a cache that makes room by evicting its own
     * entries and tries again, which it cannot do while waiting.
     *
     * @throws IllegalArgumentException when {@code size} is not positive
     */
    public ByteBuf tryAllocate(int size) {
        return composite(blocks.tryAllocate(size));
    }

    /** The buffer over a payload's parts, tracked by the leak detector; null for none. */
    private ByteBuf composite(List<Allocation> parts) {
        if (parts == null) {
            return null;
        }
        return SlabwiseAllocator.leakAware(composite(view, blocks.generalAllocator(), parts,
                parent.bufferKind()));
    }

    /**
     * A composite over a payload's parts, taking ownership of them: writer
     * index 0, capacity the parts' requested bytes; a part that must grow
     * moves to {@code growSource}.
     */
    static CompositeByteBuf composite(ByteBufAllocator view, Allocator growSource, List<Allocation> parts,
                                      DirectBufferKind kind) {
        CompositeByteBuf composite = new CompositeByteBuf(view, true, Integer.MAX_VALUE);
        for (Allocation part : parts) {
            ByteBuf component = DirectBuffers.wrap(view, growSource, part, part.requestedBytes(), kind);
            component.writerIndex(component.capacity());
            composite.addComponent(false, component);
        }
        return composite;
    }

    /** The category its buffers are accounted to. */
    public String category() {
        return blocks.category().name();
    }

    /** The size of one block. */
    public int blockSize() {
        return blocks.blockSize();
    }

    /** Blocks, sub-blocks and mini-blocks of this pool, in use, free and idle. */
    public BlockStats stats() {
        return blocks.stats();
    }

    /** Gives the idle blocks back to the operating system; returns how many. */
    public int trim() {
        return blocks.trim();
    }

    @Override
    public String toString() {
        return blocks.toString();
    }
}
