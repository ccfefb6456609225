package io.slabwise.internal;

import io.slabwise.Allocation;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;

/**
 * What Slabwise's own Netty adapter needs of the engine beyond its public API:
 * the direct buffer of the whole chunk an allocation lies in, so a
 * {@code ByteBuf} can read and write its bytes with absolute NIO calls and no
 * garbage. Not an API: the module exports this package to
 * {@code io.slabwise.netty} only. Writing outside
 * {@code [offset, offset + reservedBytes)} of that buffer would reach other
 * allocations' memory, which is why the public {@link Allocation#buffer()} is
 * a view of the allocation alone.
 */
public final class EngineAccess {

    private static final MethodHandle CHUNK_MEMORY = lookUp();

    private EngineAccess() {
    }

    private static MethodHandle lookUp() {
        try {
            // same module as Allocation: a private look-up into its package is always allowed
            return MethodHandles.privateLookupIn(Allocation.class, MethodHandles.lookup())
                    .findVirtual(Allocation.class, "chunkMemory", MethodType.methodType(ByteBuffer.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The direct buffer of the whole chunk (or huge region) that holds {@code allocation}, which must be live. */
    public static ByteBuffer chunkMemory(Allocation allocation) {
        try {
            return (ByteBuffer) CHUNK_MEMORY.invokeExact(allocation);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
