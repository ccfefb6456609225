package io.slabwise;

import java.util.Collection;
import java.util.concurrent.atomic.AtomicLong;

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
 *                                                          idle dedicated regions ──▶ chunk source
 * </pre>
 *
 * <ul>
 *   <li><b>decay</b> (every second, on the pool's {@link Scheduler}): chunks,
 *       dedicated regions and blocks idle for longer than {@code idleChunkDecay}, measured on the
 *       pool's {@link Ticker}, go back; {@code minIdleChunks} stay.</li>
 *   <li><b>trim</b>: everything idle goes back now, but {@code minIdleChunks}.</li>
 *   <li><b>reclaim</b> (at the ceiling, after close): everything idle, no
 *       chunk kept.</li>
 * </ul>
 * No thread is ever stopped: live threads give their caches back at their
 * next operation.
 *
 * <p>Where regions given back to malloc may stay resident (glibc without
 * {@code MALLOC_MMAP_THRESHOLD_}), decay, trim and the reclaim after close
 * end with a {@link NativeHeap#trim()} when any such region went back since
 * the last one.
 *
 * <p>Each of the three is reported to JDK Flight Recorder as an
 * {@code io.slabwise.Trim} event with the regions and bytes it gave back
 * (decay and reclaim only when they gave something back; see
 * {@link PoolEvents}). Any thread.
 */
final class IdleMemory {

    /**
     * Live thread caches a decay tick looks at for dead threads (see
     * {@link ThreadCaches#reclaimDeadLookingAt}): every one with up to this
     * many threads, a share of them per tick with more.
     */
    static final int DECAY_LOOKS = 64;

    private final Arena[] arenas;
    private final ThreadCaches threadCaches;
    private final CommittedMemory committed;
    private final DedicatedRegions dedicated;
    private final PoolConfig config;
    private final Collection<SequentialAllocator> sequentialAllocators;
    private final Collection<BlockPool> blockPools;
    private final AtomicLong nativeHeapTrims = new AtomicLong();

    IdleMemory(Arena[] arenas, ThreadCaches threadCaches, CommittedMemory committed, DedicatedRegions dedicated,
               PoolConfig config, Collection<SequentialAllocator> sequentialAllocators, Collection<BlockPool> blockPools) {
        this.arenas = arenas;
        this.threadCaches = threadCaches;
        this.committed = committed;
        this.dedicated = dedicated;
        this.config = config;
        this.sequentialAllocators = sequentialAllocators;
        this.blockPools = blockPools;
    }

    /**
     * Gives back chunks, dedicated regions and blocks idle for longer than the
     * decay time, keeping {@code minIdleChunks} chunks, and reclaims dead
     * threads' caches (looking at {@link #DECAY_LOOKS} live caches a tick).
     *
     * @return the number of chunks, dedicated regions and blocks given back
     */
    int decay() {
        PoolEvents.Trim event = PoolEvents.beginTrim();
        GivenBack given = new GivenBack();
        threadCaches.reclaimDeadLookingAt(DECAY_LOOKS);
        long decayNanos = config.idleChunkDecay().toNanos();
        trimArenas(decayNanos, config.minIdleChunks(), given);
        given.regions(dedicated.release(decayNanos));
        for (BlockPool blocks : blockPools) {
            given.blocks(blocks, blocks.releaseIdleBlocks(decayNanos));
        }
        given.trimNativeHeap();
        return given.report(event, PoolEvents.BY_DECAY);
    }

    /**
     * Gives back what is idle now: dead threads' caches and this thread's, the
     * cache allocators' spare and empty open chunks, idle blocks, idle
     * dedicated regions, and idle chunks but {@code minIdleChunks}; asks live
     * threads to flush theirs.
     *
     * @return the number of chunks, dedicated regions and idle blocks given back to the operating system
     */
    int trim() {
        PoolEvents.Trim event = PoolEvents.beginTrim();
        GivenBack given = new GivenBack();
        reclaimCaches();
        releaseCacheAllocatorsIdle(given);
        trimArenas(0, config.minIdleChunks(), given);
        given.regions(dedicated.release(0));
        given.trimNativeHeap();
        return given.report(event, PoolEvents.BY_TRIM);
    }

    /**
     * Takes back everything idle, keeping nothing: before a refusal at the
     * ceiling, and after close, where {@code closing} also trims the native
     * heap (at the ceiling the memory is about to be taken again, and the
     * allocating thread should not wait for a trim).
     */
    void reclaimAll(boolean closing) {
        PoolEvents.Trim event = PoolEvents.beginTrim();
        GivenBack given = new GivenBack();
        reclaimCaches();
        giveBackAllIdle(given);
        if (closing) {
            given.trimNativeHeap();
        }
        given.report(event, PoolEvents.BY_RECLAIM);
    }

    /**
     * After close, on every release: gives back what the release left idle,
     * at a cost of the arenas and cache allocators, never of the threads. The
     * releasing thread's own cache and the shared caches (one per arena) are
     * flushed first: a release that read the pool open may have cached its
     * memory there after the close's flush (a cache bound after the close's
     * flush request, or a shared cache whose holder was descheduled past the
     * close's 20 ms of tries). Other live threads' caches answer the close's
     * request at their next operation, and dead threads' go back on the
     * decay, which runs on after close until nothing is committed.
     */
    void reclaimAfterClose() {
        PoolEvents.Trim event = PoolEvents.beginTrim();
        GivenBack given = new GivenBack();
        threadCaches.flushOwnAndShared();
        giveBackAllIdle(given);
        given.report(event, PoolEvents.BY_RECLAIM);
    }

    /**
     * Gives back everything idle now, keeping no idle chunk: the cache
     * allocators' idle memory, every arena's empty chunks and the idle
     * dedicated regions, counted in {@code given}.
     */
    private void giveBackAllIdle(GivenBack given) {
        releaseCacheAllocatorsIdle(given);
        for (Arena arena : arenas) {
            given.regions(arena.trim(0, 0));
        }
        given.regions(dedicated.release(0));
    }

    /**
     * Asks glibc to trim malloc's arenas if regions went back to malloc since
     * the last trim (see {@link NativeHeap}).
     *
     * @return the resident bytes given back by the trim's own report; -1 when no trim was made
     */
    long trimNativeHeap() {
        if (!committed.takeFreedToMalloc()) {
            return -1;
        }
        long given = NativeHeap.trim();
        if (given >= 0) {
            nativeHeapTrims.incrementAndGet();
        }
        return given;
    }

    /** Native heap trims this pool asked for that were made. */
    long nativeHeapTrims() {
        return nativeHeapTrims.get();
    }

    private void trimArenas(long idleNanos, int keep, GivenBack given) {
        for (Arena arena : arenas) {
            given.regions(arena.trim(idleNanos, keep));
            keep = Math.max(0, keep - arena.idleChunkCount());
        }
    }

    /** What one trim, decay or reclaim gave back to the chunk source. */
    private final class GivenBack {
        private int regions;
        private long bytes;
        /** Resident bytes a native heap trim gave back; -1 when none was made. */
        private long nativeTrimmed = -1;

        /** Chunks or dedicated regions given back, as {@code {regions, bytes}}. */
        void regions(long[] countAndBytes) {
            regions += (int) countAndBytes[0];
            bytes += countAndBytes[1];
        }

        void blocks(BlockPool pool, int count) {
            regions += count;
            bytes += (long) count * pool.blockSize();
        }

        /**
         * Asks glibc to trim malloc's arenas when regions went back to malloc
         * since the last trim, by this call or any other path (see {@link NativeHeap}).
         */
        void trimNativeHeap() {
            nativeTrimmed = IdleMemory.this.trimNativeHeap();
        }

        /** Reports to JDK Flight Recorder; returns the regions given back. */
        int report(PoolEvents.Trim event, String cause) {
            PoolEvents.endTrim(event, cause, regions, bytes, committed.committed(), nativeTrimmed);
            return regions;
        }
    }

    /**
     * Flushes the caches of dead threads and this thread's cache into their
     * arenas, and asks every other live thread to flush its own at its next
     * operation (no thread is stopped).
     */
    private void reclaimCaches() {
        threadCaches.reclaimDead();
        threadCaches.flushOwnAndRequestOthers();
    }

    /**
     * Gives back the sequential allocators' empty open chunks and spare chunks
     * (to their arenas) and the block pools' idle blocks (to the OS), counting
     * the idle blocks in {@code given}.
     */
    private void releaseCacheAllocatorsIdle(GivenBack given) {
        for (SequentialAllocator sequential : sequentialAllocators) {
            sequential.retireEmptyOpenChunks(); // open chunks with no live slice: to the spare or the arena
            sequential.releaseSpare(); // to its arena, whose trim counts it when it leaves
        }
        for (BlockPool blocks : blockPools) {
            given.blocks(blocks, blocks.releaseIdleBlocks(0));
        }
    }
}
