package io.slabwise;

/**
 * What an allocation does when it would take the pool over its ceiling
 * ({@code maxMemory}) or its category over its quota, after the pool has
 * reclaimed what it could (idle chunks, caches of dead threads, this thread's
 * cache).
 */
public enum LimitPolicy {

    /** Throw a {@link MemoryLimitException} at once. */
    FAIL,

    /**
     * Return no memory: {@code MemoryPool.allocate} returns false, and the
     * sequential and block allocators return null. Netty's own
     * {@code ByteBufAllocator} methods cannot return null, so they throw as
     * with {@link #FAIL}. ({@code SlabwiseAllocator.tryDirectBuffer} returns
     * null at a limit under every policy, without waiting.)
     */
    RETURN_NULL,

    /**
     * Wait for memory to be released, up to the configured timeout, then throw.
     * Waiting callers are served in arrival order. A thread on which waiting is
     * not allowed (a Netty event loop, which may be the very thread that would
     * release the memory) fails at once instead.
     */
    WAIT
}
