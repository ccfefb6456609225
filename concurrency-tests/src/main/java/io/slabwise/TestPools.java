package io.slabwise;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * What the tests run on: pools and stand-alone arenas of 64 KiB chunks from a
 * {@link CountingChunkSource}, and a setup thread that is none of the actors.
 */
final class TestPools {

    /** The smallest chunk a pool allows: eight 8 KiB pages. */
    static final int CHUNK_SIZE = 64 * 1024;

    /** The remote-free queue capacity of the tests' arenas: asked for 2, a queue has 4 slots, the fewest it has. */
    static final int REMOTE_QUEUE_CAPACITY = 2;

    /** Where the stand-alone arenas take their chunks from and give them back to; no ceiling. */
    private static final CommittedMemory COMMITTED = new CommittedMemory(new CountingChunkSource(),
            new MemoryLimit(Long.MAX_VALUE));
    private static final SizeClasses SIZES = new SizeClasses(PoolConfig.PAGE_SIZE, CHUNK_SIZE);

    /**
     * The thread that makes the allocations a test needs to be owned by a
     * thread other than its actors (jcstress builds each state on one of the
     * actor threads, which one varies).
     */
    private static final ExecutorService SETUP = Executors.newSingleThreadExecutor(task -> {
        Thread thread = new Thread(task, "slabwise-test-setup");
        thread.setDaemon(true);
        return thread;
    });

    private TestPools() {
    }

    /**
     * A pool for one test state: one arena, no thread caches (so every free
     * reaches its arena at once), {@code idleChunks} empty chunks kept, a
     * remote-free queue of the fewest slots, and no background decay that
     * could trim while a test runs.
     */
    static MemoryPool newPool(CountingChunkSource source, int idleChunks) {
        return new MemoryPool(PoolConfig.builder()
                .chunkSource(source)
                .chunkSize(CHUNK_SIZE)
                .arenas(1)
                .maxCachedSize(0)
                .maxIdleChunksPerArena(idleChunks)
                .remoteFreeQueueCapacity(REMOTE_QUEUE_CAPACITY)
                .scheduler((task, period) -> () -> { })
                .build());
    }

    /**
     * Every thread's counters of {@code pool}, read as {@link MemoryPool#stats()}
     * reads them (allocation sides, committed bytes, release sides) but
     * without the rest of the statistics, which take arena locks and read
     * {@code /proc}: the reader stays as short as the race it checks.
     */
    static ThreadCaches.Snapshot counters(MemoryPool pool) {
        return pool.threadCaches.snapshot(pool.categories().size(), pool::committedBytes);
    }

    /** 1 when {@code pool}'s counters are exact with nothing live (nothing reserved, as many releases as allocations), else 0. */
    static int exactWithNothingLive(MemoryPool pool) {
        ThreadCaches.Snapshot counts = counters(pool);
        return counts.totalReserved() == 0 && counts.totalAllocations() == counts.totalReleases() ? 1 : 0;
    }

    /**
     * The pool's logger, its level raised: a {@code close()} with a live
     * buffer warns, once per sample of a test where the close wins. Held here
     * so that the logger, and its level, are not collected.
     */
    private static final java.util.logging.Logger POOL_LOG = java.util.logging.Logger.getLogger("io.slabwise.MemoryPool");

    /** Silences the warning of a pool closed with live buffers, for the tests that race a release with {@code close()}. */
    static void quietCloseWarnings() {
        POOL_LOG.setLevel(java.util.logging.Level.SEVERE);
    }

    /** Allocates {@code requested} bytes from {@code pool} on the setup thread, which then owns the allocation. */
    static Allocation allocateOnSetupThread(MemoryPool pool, int requested) {
        return allocateOnSetupThread(pool, requested, 1)[0];
    }

    /** Makes {@code count} allocations of {@code requested} bytes from {@code pool} on the setup thread. */
    static Allocation[] allocateOnSetupThread(MemoryPool pool, int requested, int count) {
        return onSetupThread(() -> {
            Allocation[] made = new Allocation[count];
            for (int i = 0; i < count; i++) {
                made[i] = new Allocation();
                pool.allocate(requested, made[i]);
            }
            return made;
        });
    }

    /** Runs {@code work} on the setup thread and returns its result; the caller sees all it wrote. */
    static <T> T onSetupThread(Supplier<T> work) {
        try {
            return SETUP.submit(work::get).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the setup thread worked", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("the setup thread failed", e.getCause());
        }
    }

    /**
     * Checks that a test pool is exact and empty once its actors are done (no
     * bytes requested or reserved, every allocation released), then trims it
     * and checks that every chunk went back to the source. The pool is left
     * to the garbage collector rather than closed: closing takes full
     * statistics, and the source holds no native memory.
     *
     * @return true when the pool was exact and empty and gave every chunk back
     */
    static boolean emptyAfterTrim(MemoryPool pool, CountingChunkSource source) {
        ThreadCaches.Snapshot counts = counters(pool);
        boolean exact = counts.totalRequested() == 0 && counts.totalReserved() == 0
                && counts.totalAllocations() == counts.totalReleases();
        pool.trim();
        return exact && pool.committedBytes() == 0 && source.outstanding() == 0;
    }

    /** A new arena that belongs to no pool, keeps no idle chunk and has a 4-slot remote-free queue. */
    static Arena newArena() {
        return new Arena(COMMITTED, 0, SIZES, SIZES.chunkSize(), 0, REMOTE_QUEUE_CAPACITY, Ticker.system());
    }

    /** Takes {@code size} bytes (a size class) from {@code arena} under its lock, as a thread-cache refill does. */
    static Allocation allocate(Arena arena, int size) {
        int sizeIndex = SizeClasses.indexOf(size);
        if (arena.sizes.size(sizeIndex) != size) {
            throw new IllegalArgumentException(size + " bytes is not a size class");
        }
        Allocation out = new Allocation();
        arena.allocate(sizeIndex, out);
        return out;
    }

    /** Drains {@code arena}'s remote-free queue under its lock, then returns the bytes it has in use. */
    static int drainAndCountUsed(Arena arena) {
        return (int) arena.snapshot().usedBytes();
    }

    /** Drains what is left, gives idle chunks back, and returns how many chunks the arena still holds. */
    static int trimAndCountChunks(Arena arena) {
        arena.trim(0, 0);
        return arena.snapshot().chunks();
    }
}
