package io.slabwise;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Takes regions from malloc on one thread of the process, so that what glibc
 * keeps of them after they are given back stays in one malloc arena.
 *
 * <p>glibc gives each thread a malloc arena of its own (up to eight per
 * core). Once a freed region has raised its dynamic mmap threshold, a region
 * under a group's size comes from the arena of the thread that asked for it,
 * and when freed, the arena keeps up to its trim threshold (twice the mmap
 * threshold: 8 MiB after a 4 MiB chunk) at its top. {@code malloc_trim} does
 * not trim the top of any arena but the main one (see {@link NativeHeap}). A
 * pool whose regions were taken by its event loops, then a new pool with new
 * threads, left another 8 MiB resident every time: measured with
 * {@code PoolLifetimesResidentMain}, 44 MiB after the first of 20 pool
 * lifetimes, 100 MiB after the eighth. Taking every such region on this one
 * thread keeps it to one arena's top, whichever threads allocate and however
 * many pools come and go.
 *
 * <p>Used by {@link CommittedMemory} only where malloc may keep freed regions
 * ({@link MallocWarning#glibcKeepsFreedChunks()}) and only for regions taken
 * on their own under a group's size: a pool's first few MiB, and every region
 * with {@code -Dslabwise.noRegionGroups=true}. Such a region is taken rarely
 * (it is a chunk or a dedicated region, zeroed by the source), and the hand-off
 * costs a few microseconds beside the zeroing of megabytes.
 *
 * <p>The thread is a daemon named {@code slabwise-malloc}, one per process
 * whatever the number of pools, started at the first such region and kept
 * (a thread that ended would give its arena to whichever thread came next,
 * and its successor might get a new one). The caller waits for its region
 * without giving up on an interrupt, so that a region taken is never lost; the
 * interrupt is kept for the caller to see. What the source throws is thrown
 * to the caller. Any thread.
 */
final class MallocArenaThread {

    private static final ExecutorService THREAD = newThread();

    private MallocArenaThread() {
    }

    private static ExecutorService newThread() {
        return new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread thread = new Thread(task, "slabwise-malloc");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Takes a region of {@code size} bytes from {@code source} on the malloc thread; waits for it. */
    static NativeRegion allocate(ChunkSource source, int size) {
        Future<NativeRegion> region = THREAD.submit(() -> source.allocate(size));
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return region.get();
                } catch (InterruptedException e) {
                    interrupted = true; // the region may be taken already: wait for it rather than lose it
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof RuntimeException runtime) {
                        throw runtime;
                    }
                    if (cause instanceof Error error) {
                        throw error;
                    }
                    throw new IllegalStateException(cause);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
