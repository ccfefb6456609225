package io.slabwise.netty;

import io.netty.buffer.ByteBufAllocator;
import io.slabwise.Allocation;
import io.slabwise.Allocator;

import static io.slabwise.netty.SlabwiseDirectByteBuf.ENGINE;

/**
 * Makes the {@link SlabwiseDirectByteBuf}s an allocator hands out: with
 * native access where {@link NativeAccess#AVAILABLE} allows it and the
 * allocator wants it, a new object per allocation, or, for a recycling
 * allocator, the object that came back with the holder from the thread's
 * stash.
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
                                          boolean nativeAccess) {
        Allocation a = new Allocation();
        if (!source.allocate(capacity, a)) {
            return null;
        }
        return newInstance(allocator, source, a, maxCapacity, nativeAccess);
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
                                                 int maxCapacity, boolean recycle, boolean nativeAccess,
                                                 boolean returnNullAtLimit) {
        Allocation a = ENGINE.allocateStashed(general.category(), capacity, returnNullAtLimit);
        if (a == null) {
            return null;
        }
        if (!recycle) {
            return newInstance(allocator, general, a, maxCapacity, nativeAccess);
        }
        SlabwiseDirectByteBuf buf = (SlabwiseDirectByteBuf) ENGINE.attachment(a);
        if (buf == null) {
            buf = newRecycled(nativeAccess); // a new holder, or one whose object moved to another allocation
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
                                      int maxCapacity, boolean nativeAccess) {
        return newInstance(allocator, growSource, allocation, maxCapacity, nativeAccess);
    }

    /** A new buffer object to be recycled: native access only where {@link NativeAccess#AVAILABLE} allows it. */
    private static SlabwiseDirectByteBuf newRecycled(boolean nativeAccess) {
        return nativeAccess && NativeAccess.AVAILABLE ? new SlabwiseUnsafeDirectByteBuf() : new SlabwiseDirectByteBuf();
    }

    /** A new buffer object, never recycled, over {@code a}: native access only where {@link NativeAccess#AVAILABLE} allows it. */
    private static SlabwiseDirectByteBuf newInstance(ByteBufAllocator allocator, Allocator source, Allocation a,
                                                     int maxCapacity, boolean nativeAccess) {
        return nativeAccess && NativeAccess.AVAILABLE
                ? new SlabwiseUnsafeDirectByteBuf(allocator, source, a, maxCapacity)
                : new SlabwiseDirectByteBuf(allocator, source, a, maxCapacity);
    }
}
