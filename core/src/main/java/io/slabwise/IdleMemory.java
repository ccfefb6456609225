package io.slabwise;

import java.util.Collection;

/**
 * Idle memory and its way back to the operating system: the periodic decay,
 * {@code trim()}, and the reclaiming done before a refusal at the ceiling or
 * after the pool is closed.
 *
 * <pre>
 *                  ┌─ dead threads' caches ──────────┐
 *  reclaim ───────▶├─ this thread's cache ───────────┼──▶ arenas ──▶ idle chunks ──▶ chunk source
 *                  ├─ other threads: asked to flush  │
 *                  └─ cache allocators' spare chunks ┘    block pools' idle blocks ──▶ chunk source
 * </pre>
 *
 * <ul>
 *   <li><b>decay</b> (every second, on the pool's {@link Scheduler}): chunks
 *       and blocks idle for longer than {@code idleChunkDecay}, measured on the
 *       pool's {@link Ticker}, go back; {@code minIdleChunks} stay.</li>
 *   <li><b>trim</b>: everything idle goes back now, but {@code minIdleChunks}.</li>
 *   <li><b>reclaim</b> (at the ceiling, after close): everything idle, no
 *       chunk kept.</li>
 * </ul>
 * No thread is ever stopped: live threads give their caches back at their
 * next operation. Any thread.
 */
final class IdleMemory {

    private final Arena[] arenas;
    private final ThreadCaches threadCaches;
    private final PoolConfig config;
    private final Collection<SequentialAllocator> sequentialAllocators;
    private final Collection<BlockPool> blockPools;

    IdleMemory(Arena[] arenas, ThreadCaches threadCaches, PoolConfig config,
               Collection<SequentialAllocator> sequentialAllocators, Collection<BlockPool> blockPools) {
        this.arenas = arenas;
        this.threadCaches = threadCaches;
        this.config = config;
        this.sequentialAllocators = sequentialAllocators;
        this.blockPools = blockPools;
    }

    /**
     * Gives back chunks and blocks idle for longer than the decay time,
     * keeping {@code minIdleChunks} chunks, and reclaims dead threads' caches.
     *
     * @return the number of chunks and blocks given back
     */
    int decay() {
        threadCaches.reclaimDead();
        long decayNanos = config.idleChunkDecay().toNanos();
        int released = trimArenas(decayNanos, config.minIdleChunks());
        for (BlockPool blocks : blockPools) {
            released += blocks.releaseIdleBlocks(decayNanos);
        }
        return released;
    }

    /**
     * Gives back what is idle now: dead threads' caches and this thread's, the
     * cache allocators' spare and empty open chunks, idle blocks, and idle
     * chunks but {@code minIdleChunks}; asks live threads to flush theirs.
     *
     * @return the number of chunks and idle blocks given back to the operating system
     */
    int trim() {
        reclaimCaches();
        int released = releaseCacheAllocatorsIdle();
        return released + trimArenas(0, config.minIdleChunks());
    }

    /** Takes back everything idle, keeping nothing: before a refusal at the ceiling, and after close. */
    void reclaimAll() {
        reclaimCaches();
        releaseCacheAllocatorsIdle();
        for (Arena arena : arenas) {
            arena.trim(0, 0);
        }
    }

    private int trimArenas(long idleNanos, int keep) {
        int released = 0;
        for (Arena arena : arenas) {
            released += arena.trim(idleNanos, keep);
            keep = Math.max(0, keep - arena.idleChunkCount());
        }
        return released;
    }

    /**
     * Flushes the caches of dead threads and this thread's cache into their
     * arenas, and asks every other live thread to flush its own at its next
     * operation (no thread is stopped).
     */
    private void reclaimCaches() {
        threadCaches.reclaimDead();
        threadCaches.requestFlushAll();
        ThreadCache own = threadCaches.own();
        if (own != null) {
            own.flush();
        }
    }

    /**
     * Gives back the sequential allocators' empty open chunks and spare chunks
     * (to their arenas) and the block pools' idle blocks (to the OS); returns
     * how many idle blocks.
     */
    private int releaseCacheAllocatorsIdle() {
        int released = 0;
        for (SequentialAllocator sequential : sequentialAllocators) {
            sequential.retireEmptyOpenChunks(); // open chunks with no live slice: to the spare or the arena
            sequential.releaseSpare(); // to its arena, whose trim counts it when it leaves
        }
        for (BlockPool blocks : blockPools) {
            released += blocks.releaseIdleBlocks(0);
        }
        return released;
    }
}
