package io.slabwise.internal;

import io.slabwise.Allocation;
import io.slabwise.Allocator;
import io.slabwise.Category;
import io.slabwise.MemoryLimitException;

import java.nio.ByteBuffer;

/**
 * What Slabwise's own Netty adapter needs of the engine beyond its public API,
 * as a typed interface the engine implements (the JDK's shared-secrets
 * pattern): the engine registers its {@link Engine} when its
 * {@link Allocation} class is initialized, and the adapter keeps it in a
 * static final field, so each call is a direct call the JIT inlines. Not an
 * API: the module exports this package to {@code io.slabwise.netty} only.
 */
public final class EngineAccess {

    /** Set once, by the engine, when {@link Allocation} is initialized. */
    private static volatile Engine engine;

    private EngineAccess() {
    }

    /**
     * The engine's side, implemented in {@code io.slabwise} alone.
     *
     * <ul>
     *   <li>{@link #chunkMemory}: the direct buffer of the whole chunk an
     *       allocation lies in, so a {@code ByteBuf} can read and write its
     *       bytes with absolute NIO calls and no garbage. Writing outside
     *       {@code [offset, offset + reservedBytes)} of that buffer would
     *       reach other allocations' memory, which is why the public
     *       {@link Allocation#buffer()} is a view of the allocation alone.</li>
     *   <li>{@link #allocateStashed}: an allocation in a holder that the
     *       calling thread's cache keeps for reuse. The holder must never be
     *       seen outside the buffer that owns it, and the buffer must drop it
     *       when it frees it: a holder freed on the thread that allocated it
     *       serves that thread's next allocation (a virtual thread's, the
     *       next allocation of any virtual thread of its arena).</li>
     *   <li>{@link #attachment} and {@link #attach}: an object kept with a
     *       stashed holder across its reuses; the adapter's recycling mode
     *       keeps the buffer object there, so a buffer released on its
     *       allocating thread is reused with its holder. Whoever parts a
     *       buffer from its holder must detach it first.</li>
     *   <li>{@link #isBlockPart}: whether an allocation is a block pool
     *       payload's part, for relocation, which moves such parts only as a
     *       whole payload.</li>
     *   <li>{@link #resizeInPlace}, {@link #generalAllocator} and
     *       {@link #limitException}: the pool's own answers, reached from the
     *       allocation's category without a look-up of its pool.</li>
     * </ul>
     */
    public interface Engine {

        /** The direct buffer of the whole chunk (or huge region) that holds {@code allocation}, which must be live. */
        ByteBuffer chunkMemory(Allocation allocation);

        /**
         * Allocates {@code requested} bytes of {@code category}'s general pool
         * in a holder from the calling thread's stash. Null when refused at a
         * limit under {@link io.slabwise.LimitPolicy#RETURN_NULL}, or whatever
         * the policy with {@code returnNullAtLimit}; otherwise as
         * {@link io.slabwise.MemoryPool#allocate(Category, int, Allocation)}.
         */
        Allocation allocateStashed(Category category, int requested, boolean returnNullAtLimit);

        /** The object kept with {@code allocation}'s holder, or null. */
        Object attachment(Allocation allocation);

        /** Keeps {@code attachment} (or nothing, for null) with {@code allocation}'s holder across its reuses. */
        void attach(Allocation allocation, Object attachment);

        /** Whether {@code allocation} is a part of a block pool's payload (such parts move only as a whole payload). */
        boolean isBlockPart(Allocation allocation);

        /** {@link io.slabwise.MemoryPool#resizeInPlace} of the pool {@code allocation} (live) came from. */
        boolean resizeInPlace(Allocation allocation, int newRequested);

        /** The general pool of {@code category}: {@link io.slabwise.MemoryPool#allocator(Category)}. */
        Allocator generalAllocator(Category category);

        /** {@link io.slabwise.MemoryPool#limitException} of {@code category}'s pool. */
        MemoryLimitException limitException(Category category, int requested);
    }

    /**
     * The engine; initializes it first when nothing has yet. Callers keep it
     * in a static final field.
     */
    public static Engine engine() {
        Engine registered = engine;
        if (registered == null) {
            try {
                Class.forName(Allocation.class.getName(), true, Allocation.class.getClassLoader()); // registers it
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            registered = engine;
        }
        if (registered == null) {
            throw new IllegalStateException("the Slabwise engine did not register its access");
        }
        return registered;
    }

    /**
     * Registers the engine; called once, by the engine itself.
     *
     * @throws IllegalStateException when an engine is registered already
     */
    public static synchronized void register(Engine access) {
        if (engine != null) {
            throw new IllegalStateException("the Slabwise engine's access is registered already");
        }
        engine = access;
    }
}
