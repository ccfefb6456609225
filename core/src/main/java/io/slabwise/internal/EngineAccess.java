package io.slabwise.internal;

import io.slabwise.Allocation;
import io.slabwise.Category;
import io.slabwise.MemoryPool;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * What Slabwise's own Netty adapter needs of the engine beyond its public API.
 * Not an API: the module exports this package to {@code io.slabwise.netty}
 * only.
 *
 * <ul>
 *   <li>{@link #chunkMemory}: the direct buffer of the whole chunk an
 *       allocation lies in, so a {@code ByteBuf} can read and write its bytes
 *       with absolute NIO calls and no garbage. Writing outside
 *       {@code [offset, offset + reservedBytes)} of that buffer would reach
 *       other allocations' memory, which is why the public
 *       {@link Allocation#buffer()} is a view of the allocation alone.</li>
 *   <li>{@link #allocateStashed}: an allocation in a holder that the calling
 *       thread's cache keeps for reuse. The holder must never be seen outside
 *       the buffer that owns it, and the buffer must drop it when it frees it
 *       with {@link MemoryPool#free}: a holder freed on the thread that
 *       allocated it serves that thread's next allocation (a virtual
 *       thread's, the next allocation of any virtual thread of its
 *       arena).</li>
 *   <li>{@link #isBlockPart}: whether an allocation is a block pool
 *       payload's part, for relocation, which moves such parts only as a
 *       whole payload.</li>
 *   <li>{@link #attachment} and {@link #attach}: an object kept with a
 *       stashed holder across its reuses; the adapter's recycling mode keeps
 *       the buffer object there, so a buffer released on its allocating
 *       thread is reused with its holder. Whoever parts a buffer from its
 *       holder must detach it first. A virtual thread's holder, with what
 *       is attached to it, is reused by the next virtual thread of its arena
 *       (see {@code SharedCache}).</li>
 * </ul>
 */
public final class EngineAccess {

    private static final MethodHandle CHUNK_MEMORY;
    private static final MethodHandle ALLOCATE_STASHED;
    private static final VarHandle ATTACHMENT;
    private static final MethodHandle IS_BLOCK_PART;

    static {
        try {
            // same module as Allocation and MemoryPool: a private look-up into their package is always allowed
            MethodHandles.Lookup engine = MethodHandles.privateLookupIn(Allocation.class, MethodHandles.lookup());
            CHUNK_MEMORY = engine.findVirtual(Allocation.class, "chunkMemory", MethodType.methodType(ByteBuffer.class));
            ALLOCATE_STASHED = engine.findVirtual(MemoryPool.class, "allocateStashed",
                    MethodType.methodType(Allocation.class, Category.class, int.class, boolean.class));
            ATTACHMENT = engine.findVarHandle(Allocation.class, "attachment", Object.class);
            IS_BLOCK_PART = engine.findStatic(engine.findClass("io.slabwise.BlockPool"), "isPart",
                    MethodType.methodType(boolean.class, Allocation.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private EngineAccess() {
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

    /**
     * Allocates {@code requested} bytes of the general pool for
     * {@code category}, one of {@code pool}'s, in a holder from the calling
     * thread's stash. Null when refused at a limit under
     * {@link io.slabwise.LimitPolicy#RETURN_NULL}, or whatever the policy with
     * {@code returnNullAtLimit}; otherwise as {@link MemoryPool#allocate(Category, int, Allocation)}.
     */
    public static Allocation allocateStashed(MemoryPool pool, Category category, int requested, boolean returnNullAtLimit) {
        try {
            return (Allocation) ALLOCATE_STASHED.invokeExact(pool, category, requested, returnNullAtLimit);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Whether {@code allocation} is a part of a block pool's payload (such parts move only as a whole payload). */
    public static boolean isBlockPart(Allocation allocation) {
        try {
            return (boolean) IS_BLOCK_PART.invokeExact(allocation);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The object kept with {@code allocation}'s holder, or null. */
    public static Object attachment(Allocation allocation) {
        return ATTACHMENT.get(allocation);
    }

    /** Keeps {@code attachment} (or nothing, for null) with {@code allocation}'s holder across its reuses. */
    public static void attach(Allocation allocation, Object attachment) {
        ATTACHMENT.set(allocation, attachment);
    }
}
