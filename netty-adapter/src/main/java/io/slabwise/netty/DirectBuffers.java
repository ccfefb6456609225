package io.slabwise.netty;

import io.netty.buffer.ByteBufAllocator;
import io.slabwise.Allocation;
import io.slabwise.Allocator;

import static io.slabwise.netty.SlabwiseDirectByteBuf.ENGINE;

/**
 * Makes the {@link SlabwiseDirectByteBuf}s an allocator hands out, of the
 * class its {@link DirectBufferKind} names: a new object per allocation, or,
 * for a recycling allocator, the object that came back with the holder from
 * the thread's stash.
 */
final class DirectBuffers {

    private DirectBuffers() {
    }

    /**
     * Allocates a buffer of {@code capacity} bytes from {@code source}, any
     * allocator (a sequential one, say); the caller has validated the
     * capacities. Returns null when the source refused at a limit under
     * {@link io.slabwise.LimitPolicy#RETURN_NULL}. The buffer object is never
     * recycled: only the general pool's holders come from a stash.
     */
    static SlabwiseDirectByteBuf allocate(ByteBufAllocator allocator, Allocator source, int capacity, int maxCapacity,
                                          DirectBufferKind kind) {
        Allocation a = new Allocation();
        if (!source.allocate(capacity, a)) {
            return null;
        }
        return newInstance(allocator, source, a, maxCapacity, kind);
    }

    /**
     * Allocates a buffer of {@code capacity} bytes from {@code general}, the
     * general pool of one category: the hot path. Returns null when refused
     * at a limit under {@link io.slabwise.LimitPolicy#RETURN_NULL}, or
     * whatever the policy (and without waiting) with {@code returnNullAtLimit}.
     * The holder comes from the thread's stash; a new buffer object is then
     * the only object the allocation makes, and with {@code recycle} the
     * object that came with the holder is reused and nothing is made.
     */
    static SlabwiseDirectByteBuf allocateGeneral(ByteBufAllocator allocator, Allocator general, int capacity,
                                                 int maxCapacity, boolean recycle, DirectBufferKind kind,
                                                 boolean returnNullAtLimit) {
        Allocation a = ENGINE.allocateStashed(general.category(), capacity, returnNullAtLimit);
        if (a == null) {
            return null;
        }
        if (!recycle) {
            return newInstance(allocator, general, a, maxCapacity, kind);
        }
        SlabwiseDirectByteBuf buf = (SlabwiseDirectByteBuf) ENGINE.attachment(a);
        if (buf == null) {
            buf = newRecycled(kind); // a new holder, or one whose object moved to another allocation
            ENGINE.attach(a, buf);
        }
        buf.reuse(a, allocator, general, maxCapacity);
        return buf;
    }

    /**
     * A buffer over an allocation made elsewhere (a block of a block pool, say),
     * taking ownership of it; {@code growSource} serves it if it must grow.
     */
    static SlabwiseDirectByteBuf wrap(ByteBufAllocator allocator, Allocator growSource, Allocation allocation,
                                      int maxCapacity, DirectBufferKind kind) {
        return newInstance(allocator, growSource, allocation, maxCapacity, kind);
    }

    /** A new buffer object of {@code kind} to be recycled. */
    private static SlabwiseDirectByteBuf newRecycled(DirectBufferKind kind) {
        if (kind == DirectBufferKind.NATIVE) {
            return new SlabwiseUnsafeDirectByteBuf();
        }
        return kind == DirectBufferKind.NIO ? new SlabwiseDirectByteBuf() : new SlabwiseNoAddressDirectByteBuf();
    }

    /** A new buffer object of {@code kind}, never recycled, over {@code a}. */
    private static SlabwiseDirectByteBuf newInstance(ByteBufAllocator allocator, Allocator source, Allocation a,
                                                     int maxCapacity, DirectBufferKind kind) {
        if (kind == DirectBufferKind.NATIVE) {
            return new SlabwiseUnsafeDirectByteBuf(allocator, source, a, maxCapacity);
        }
        return kind == DirectBufferKind.NIO
                ? new SlabwiseDirectByteBuf(allocator, source, a, maxCapacity)
                : new SlabwiseNoAddressDirectByteBuf(allocator, source, a, maxCapacity);
    }
}
