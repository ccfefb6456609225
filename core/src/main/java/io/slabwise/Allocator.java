package io.slabwise;

/**
 * Something that hands out pool memory for one {@link Category}: the general
 * pool ({@link MemoryPool#allocator(String)}), a {@link SequentialAllocator},
 * or the block parts of a {@link BlockPool}. Buffers keep the allocator they
 * came from, so that a buffer that must grow moves within the same strategy
 * and category.
 *
 * <p>Memory from any allocator is freed with {@link #free} (or
 * {@link MemoryPool#free}) and resized with {@link MemoryPool#resizeInPlace}.
 *
 * <p>Implementations are safe to use from any thread; memory may be freed on a
 * thread other than the one that allocated it.
 */
public interface Allocator {

    /** The category this allocator accounts its memory to. */
    Category category();

    /**
     * Allocates {@code requested} bytes into {@code out}, which must not be live.
     * At the pool's ceiling or the category's quota, the category's
     * {@link LimitPolicy} applies.
     *
     * @return true when {@code out} was filled; false only under {@link LimitPolicy#RETURN_NULL}
     * @throws IllegalArgumentException when the size is not one this allocator serves
     * @throws MemoryLimitException     at a limit under {@link LimitPolicy#FAIL}, or when a wait timed out
     */
    boolean allocate(int requested, Allocation out);

    /**
     * Whether {@link #allocate} takes a request of {@code requested} bytes
     * rather than throwing {@code IllegalArgumentException} for its size: a
     * {@link SequentialAllocator} takes 1 to {@link SequentialAllocator#maxRequest()}
     * bytes. A buffer that must grow or shrink to a size its allocator does not
     * serve moves to its category's general pool instead.
     */
    default boolean serves(int requested) {
        return requested >= 0;
    }

    /**
     * Gives back the memory {@code allocation} holds, into the pool it came
     * from, as {@link MemoryPool#free} does: any allocator of a category may
     * free memory of any other (a buffer that outgrew a sequential allocator
     * holds memory of its category's general pool). {@code allocation} is
     * cleared and may be reused.
     *
     * @throws IllegalStateException when it holds no live memory (a double free)
     */
    default void free(Allocation allocation) {
        Category category = allocation.category();
        if (category == null) {
            throw new IllegalStateException("double free: the allocation holds no live memory");
        }
        category.allocator.free(allocation);
    }
}
