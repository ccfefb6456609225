package io.slabwise;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * The pool's thread caches: which thread uses which cache, the binding of
 * platform threads to arenas, the reclaiming of dead threads' caches, and
 * the reading of every thread's counters into one snapshot.
 *
 * <pre>
 *  platform thread ──slot by thread id, owner checked─┬─▶ its ThreadCache ──▶ least-bound arena in use
 *                  ──else ThreadLocal (weak)──────────┘
 *  virtual thread  ──thread id % arenas──▶ SharedCache of that arena (its stacks under a try-lock),
 *                   or the next one free when another thread holds it
 *
 *  live caches ──owner died──▶ dying (its buffers still live) ──all released──▶ folded into retired counts
 * </pre>
 *
 * <h2>Arenas in use</h2>
 * While the arenas hold less than {@link PoolConfig#arenaSpreadBytes()} of
 * chunks, every platform thread binds to the first arena; one more arena comes
 * into use per such amount, and a thread of a crowded arena moves to the new
 * one at its next new chunk or cache sweep ({@link #moveTarget}). A pool that
 * stays small thus commits one arena's chunks, not a chunk or more per arena.
 *
 * <h2>Locks</h2>
 * No allocation or release takes a lock here once its thread has a cache.
 * The array of live caches is copied on write under {@code registryLock}
 * (a thread's first allocation, reclaiming); readers take it as it stands.
 * Moving a cache to the dying list, flushing it and folding it into the
 * retired counts happen under {@code foldLock}, which a snapshot holds while
 * it reads, so no cache is counted twice or missed, and a reclaim returns
 * only once every dead cache found so far, by it or another, is flushed. An
 * allocating thread that finds dead caches to reclaim (when its arena grew)
 * only tries that lock, and leaves the work for later when a reader holds
 * it: it never waits for a reader.
 */
final class ThreadCaches {

    private final MemoryLimit limit;
    private final Arena[] arenas;
    private final PoolConfig config;
    /** The pool's {@code fittedAbove}: requests above it reserve runs of whole pages. */
    private final int fittedAbove;
    /** The pool's {@code dedicatedAbove}: requests above it get regions of their own. */
    private final int dedicatedAbove;
    /** The pool's idle dedicated regions, where a cache's dedicated slot goes when it is flushed. */
    final DedicatedRegions dedicated;
    /** This pool's cache on each platform thread, held weakly: a thread's map never keeps the pool alive. */
    private final ThreadLocal<WeakReference<ThreadCache>> caches = new ThreadLocal<>();
    /**
     * Platform threads' caches by thread id, direct-mapped: the calling
     * thread finds its cache with one array read and an owner check, without
     * the hashing of a {@link ThreadLocal}. A slot belongs to the first thread
     * that binds while it is free (or held by a dead thread's cache); a
     * thread whose id maps to a taken slot uses the thread-local alone.
     * Written under {@link #registryLock}; read without it, a stale slot
     * failing the owner check.
     */
    private final ThreadCache[] byId = new ThreadCache[BY_ID];
    private static final int BY_ID = 256;
    /** The caches virtual threads share, one per arena. */
    private final SharedCache[] shared;
    /**
     * The fewest arenas virtual threads spread over: one per carrier thread
     * of the virtual-thread scheduler, at most every arena. Fewer, and the
     * carriers would take turns at one shared cache's try-lock and one
     * arena's monitor, each going past the cache whenever another holds it.
     */
    private final int virtualArenas;
    /** New threads between two reclaims of dead threads' caches started by a new thread. */
    private static final int RECLAIM_EVERY = 64;

    private final Object registryLock = new Object();
    /**
     * How many arenas, the first ones, take threads: one while the arenas hold
     * fewer than {@link PoolConfig#arenaSpreadBytes()} of chunks, one more per
     * such amount, never fewer than before. Written under {@link #registryLock}.
     */
    private volatile int arenasInUse;
    /** Threads bound since a new thread last reclaimed dead caches; guarded by {@link #registryLock}. */
    private int bindsSinceReclaim;
    /** New chunks taken since {@link #reclaimDeadOnGrowth} last looked for dead caches. */
    private final AtomicInteger growthsSinceReclaim = new AtomicInteger();
    private final ReentrantLock foldLock = new ReentrantLock();
    /** Every live cache, the shared ones first; replaced whole under {@link #registryLock}. */
    private volatile ThreadCache[] live;
    /** Caches of dead threads whose allocations are not all released; guarded by {@link #foldLock}. */
    private final List<ThreadCache> dying = new ArrayList<>();
    /** The size of {@link #dying} as of the last reclaim, for {@link #reclaimDeadLookingAt}'s look without the lock. */
    private volatile int dyingCount;
    /** Where the decay's next look for dead threads starts among the live caches (the decay's thread only). */
    private int lookFrom;
    /** Counters of caches whose threads died and whose allocations were all released; guarded by {@link #foldLock}. */
    private final long[] retired = new long[ThreadCounters.COUNTERS];

    ThreadCaches(MemoryLimit limit, Arena[] arenas, PoolConfig config, DedicatedRegions dedicated, int fittedAbove,
                 int dedicatedAbove) {
        this.limit = limit;
        this.fittedAbove = fittedAbove;
        this.dedicatedAbove = dedicatedAbove;
        this.arenas = arenas;
        this.config = config;
        this.dedicated = dedicated;
        this.shared = new SharedCache[arenas.length];
        for (int i = 0; i < arenas.length; i++) {
            shared[i] = new SharedCache(this, limit, arenas[i], config.ticker(), config.maxCachedSize(),
                    config.maxCachedBytesPerClass(), config.maxCachedEntriesPerClass());
        }
        this.live = Arrays.copyOf(shared, shared.length, ThreadCache[].class); // own caches join it later
        this.arenasInUse = config.arenaSpreadBytes() == 0 ? arenas.length : 1;
        this.virtualArenas = Math.min(arenas.length, VirtualThreads.carriers());
    }

    /** The calling thread's cache, made and bound to an arena on its first use. */
    ThreadCache current() {
        Thread thread = Thread.currentThread();
        ThreadCache mapped = byId[slotOf(thread)];
        if (mapped != null && mapped.isOwner(thread)) {
            return mapped; // the common case: one array read
        }
        if (VirtualThreads.SUPPORTED && VirtualThreads.isVirtual(thread)) {
            // no per-thread state for virtual threads: they share a cache per arena, chosen by thread id among the
            // arenas in use (one per carrier at least), so that a small pool commits the chunks of a few arenas
            return sharedFor(thread);
        }
        WeakReference<ThreadCache> ref = caches.get();
        ThreadCache cache = ref != null ? ref.get() : null;
        return cache != null ? cache : bind(thread);
    }

    /**
     * The shared cache for a virtual thread: its thread id's among the
     * arenas virtual threads use, or, when another thread holds that one,
     * the next one found free (a carrier that finds its cache taken goes to
     * another rather than past every cache to an arena's monitor).
     */
    private SharedCache sharedFor(Thread thread) {
        int spread = Math.max(arenasInUse, virtualArenas);
        int first = (int) ((idOf(thread) & Long.MAX_VALUE) % spread);
        SharedCache cache = shared[first];
        for (int i = 1; i < spread && cache.isBusy(); i++) {
            SharedCache next = shared[(first + i) % spread];
            if (!next.isBusy()) {
                return next;
            }
        }
        return cache;
    }

    /** The cache the virtual threads bound to arena {@code index} share. */
    SharedCache shared(int index) {
        return shared[index];
    }

    /** The calling thread's own cache, or null when it has none. */
    ThreadCache own() {
        WeakReference<ThreadCache> ref = caches.get();
        return ref == null ? null : ref.get();
    }

    /** Whether the pool's {@code close()} began (see {@link SharedCache#unlockShared()}). */
    boolean isClosed() {
        return limit.isClosed(); // set before the close asks the shared caches to flush
    }

    /** The calling thread forgets its cache of this pool (the cache stays registered until its thread dies). */
    void forgetOwn() {
        caches.remove();
        Thread thread = Thread.currentThread();
        synchronized (registryLock) {
            int slot = slotOf(thread);
            if (byId[slot] != null && byId[slot].isOwner(thread)) {
                byId[slot] = null;
            }
        }
    }

    private static int slotOf(Thread thread) {
        return (int) idOf(thread) & (BY_ID - 1);
    }

    /**
     * A thread's id, which picks its slot in {@code byId}: unique for the life
     * of the JVM unless a {@code Thread} subclass overrides {@code getId()}.
     * Only the slot depends on it; whose cache a slot holds is decided by the
     * thread itself ({@link ThreadCache#isOwner}).
     */
    @SuppressWarnings("deprecation") // Thread.getId: threadId() is Java 19+
    static long idOf(Thread thread) {
        return thread.getId();
    }

    /**
     * Binds the calling platform thread to the arena with the fewest bound
     * threads and gives it a cache. The choice and the count change together
     * under the registry's lock, so threads that start at once spread over the
     * arenas instead of all picking the same least-used one.
     */
    private ThreadCache bind(Thread thread) {
        ThreadCache cache;
        boolean reclaim;
        synchronized (registryLock) {
            // where threads come and go, dead ones' caches go back at least once every RECLAIM_EVERY new threads
            reclaim = ++bindsSinceReclaim >= RECLAIM_EVERY;
            if (reclaim) {
                bindsSinceReclaim = 0;
            }
            Arena arena = leastBoundInUse();
            arena.boundThreads.incrementAndGet();
            cache = new ThreadCache(this, limit, arena, thread, config.maxCachedSize(),
                    config.maxCachedBytesPerClass(), config.maxCachedEntriesPerClass());
            ThreadCache[] grown = Arrays.copyOf(live, live.length + 1);
            grown[grown.length - 1] = cache;
            live = grown;
            int slot = slotOf(thread);
            if (byId[slot] == null || byId[slot].isOwnerDead()) {
                byId[slot] = cache;
            }
        }
        caches.set(new WeakReference<>(cache));
        if (reclaim) {
            tryReclaimDead();
        }
        return cache;
    }

    /** Requests above this many bytes reserve a run of whole pages rather than their size class (see {@link MemoryPool}). */
    int fittedAbove() {
        return fittedAbove;
    }

    /** Requests above this many bytes get a region of their own (see {@link MemoryPool}). */
    int dedicatedAbove() {
        return dedicatedAbove;
    }

    /**
     * What follows when {@code cache}'s arena took a new chunk, seen by the
     * cache after it allocated from that arena ({@link Arena#takeGrowth()}):
     * dead threads' caches are looked for ({@link #reclaimDeadOnGrowth()});
     * then a thread's own cache moves to a less crowded arena if its arena is
     * crowded ({@link ThreadCache#moveIfCrowded()}), and for a shared cache,
     * since virtual threads are never bound, another arena comes into use if
     * the arenas now hold enough. The cache's owner, or the shared cache's
     * user.
     */
    void arenaGrew(ThreadCache cache) {
        reclaimDeadOnGrowth();
        if (cache instanceof SharedCache) {
            countArenasInUse(); // virtual threads choose among the arenas in use
        } else {
            cache.moveIfCrowded();
        }
    }

    /** Takes another arena into use if the arenas now hold enough (see {@link #arenasInUse}). */
    private void countArenasInUse() {
        if (arenasInUse < arenas.length) {
            synchronized (registryLock) {
                leastBoundInUse();
            }
        }
    }

    /** The arena in use with the fewest bound threads, the first of them on a tie; under {@link #registryLock}. */
    private Arena leastBoundInUse() {
        int inUse = arenasInUse;
        if (inUse < arenas.length) {
            long held = 0;
            for (Arena arena : arenas) {
                held += arena.heldBytes;
            }
            long spread = config.arenaSpreadBytes();
            long wanted = 1 + held / spread;
            if (wanted > inUse) {
                inUse = (int) Math.min(arenas.length, wanted);
                arenasInUse = inUse;
            }
        }
        Arena least = arenas[0];
        for (int i = 1; i < inUse; i++) {
            if (arenas[i].boundThreads.get() < least.boundThreads.get()) {
                least = arenas[i];
            }
        }
        return least;
    }

    /**
     * The arena a platform thread bound to {@code from} should move to, with
     * the binding counts already moved; null when it should stay. A thread
     * moves when an arena in use has at least two threads fewer than its own
     * (another arena came into use as the pool grew, or threads died).
     * The caller, the cache's owner, gives its cache back to {@code from}.
     */
    Arena moveTarget(Arena from) {
        if (arenas.length == 1) {
            return null;
        }
        synchronized (registryLock) {
            Arena least = leastBoundInUse();
            if (least.boundThreads.get() + 1 < from.boundThreads.get()) {
                from.boundThreads.decrementAndGet();
                least.boundThreads.incrementAndGet();
                return least;
            }
            return null;
        }
    }

    /**
     * Flushes the calling thread's cache into its arena now, and asks every
     * other live thread to flush its own at its next operation (no thread is
     * stopped); the shared caches flush now, if free.
     */
    void flushOwnAndRequestOthers() {
        requestFlushAll();
        flushOwn();
    }

    /**
     * Asks every live thread to flush its cache at its next operation; the
     * shared caches flush now, if free. A cache already asked is only read,
     * not written again: in a run of refusals at the ceiling, each of which
     * asks, the owners' cache lines are not taken from them over and over.
     */
    void requestFlushAll() {
        for (ThreadCache cache : live) {
            if (!cache.flushRequested) {
                cache.requestFlush();
            }
        }
        flushShared();
    }

    /**
     * Flushes the calling thread's own cache and the shared caches (one per
     * arena, each if free) now; no other thread's cache is looked at, so the
     * cost is of the arenas, not of the threads.
     */
    void flushOwnAndShared() {
        flushOwn();
        flushShared();
    }

    private void flushOwn() {
        ThreadCache own = own();
        if (own != null) {
            own.flush();
        }
    }

    private void flushShared() {
        for (SharedCache cache : shared) {
            cache.flushShared();
        }
    }

    /**
     * The dedicated regions parked in threads' slots and in the pool's recent
     * cell, which the pool's counters count as live, as {@code {count, bytes}};
     * exact for the calling thread's own slot and for dead threads', as of a
     * moment for the others'.
     */
    long[] parkedDedicated() {
        long count = 0;
        long bytes = 0;
        for (ThreadCache cache : live) {
            long[] parked = cache.parkedRegions();
            count += parked[0];
            bytes += parked[1];
        }
        long cell = dedicated.parkedBytes();
        return new long[] {cell > 0 ? count + 1 : count, bytes + cell};
    }

    /** Whether {@code thread}'s cache holds its slot of the look-up by thread id; for tests. */
    boolean holdsIdSlot(Thread thread) {
        ThreadCache cache = byId[slotOf(thread)];
        return cache != null && cache.isOwner(thread);
    }

    /** Caches of platform threads registered now (live, or dead and not yet reclaimed); for tests. */
    int platformCaches() {
        return live.length - shared.length;
    }

    /**
     * Flushes the caches of threads that have died back into their arenas,
     * drops their stacks, and folds the counters of those whose allocations
     * are all released into the retired counts. Waits for a reclaim under
     * way on another thread, so that on return every cache found dead so far
     * is flushed. Returns how many caches this call found dead.
     */
    int reclaimDead() {
        foldLock.lock();
        return reclaimDeadLocked();
    }

    /**
     * The decay's look for dead threads: at most {@code max} live caches, from
     * where the last look stopped, so that a tick costs the same with ten
     * threads or ten thousand; {@link #reclaimDead()} when one of them died,
     * else only the fold of dying caches (O(dying)). With at most {@code max}
     * caches every tick looks at them all; with more, a dead thread's cache
     * is found within (caches / max) ticks, and before that by the pool's
     * figures ({@link #reclaimDeadIfAny()}) or a new chunk
     * ({@link #reclaimDeadOnGrowth()}). The decay's thread only.
     *
     * @return how many caches were found dead
     */
    int reclaimDeadLookingAt(int max) {
        ThreadCache[] current = live;
        int n = current.length;
        int start = n == 0 ? 0 : lookFrom % n;
        int looks = Math.min(max, n);
        lookFrom = start + looks;
        for (int i = 0; i < looks; i++) {
            if (current[(start + i) % n].isOwnerDead()) {
                return reclaimDead();
            }
        }
        if (dyingCount > 0) {
            foldLock.lock();
            try {
                foldDying();
            } finally {
                foldLock.unlock();
            }
        }
        return 0;
    }

    /**
     * {@link #tryReclaimDead()} if a registered cache's thread has died, found
     * by a scan that allocates nothing; for the pool's figures, so that they
     * never count memory only a dead thread's cache held.
     */
    int reclaimDeadIfAny() {
        for (ThreadCache cache : live) {
            if (cache.isOwnerDead()) {
                return tryReclaimDead();
            }
        }
        return 0;
    }

    /**
     * {@link #tryReclaimDead()} for an allocation whose arena took a new
     * chunk (memory a dead thread's cache holds could have served it), at
     * most once per as many new chunks as there are live caches: the look
     * walks every live cache, so what it costs per new chunk stays the same
     * however many threads there are. The decay thread looks about once a
     * second whatever happens.
     */
    private void reclaimDeadOnGrowth() {
        if (growthsSinceReclaim.incrementAndGet() >= live.length) {
            growthsSinceReclaim.set(0);
            tryReclaimDead();
        }
    }

    /** {@link #reclaimDead()} unless a snapshot is being read; then nothing, at once (allocation paths). */
    int tryReclaimDead() {
        return foldLock.tryLock() ? reclaimDeadLocked() : 0;
    }

    /**
     * Folds the counters of dying caches none of whose allocations is live any
     * more into the retired counts: a dead thread's counters still change
     * while other threads release what it allocated; once nothing of it is
     * live, they are final. Under {@link #foldLock}; O(dying caches).
     */
    private void foldDying() {
        for (int i = dying.size() - 1; i >= 0; i--) {
            ThreadCache cache = dying.get(i);
            if (cache.counters.liveAllocations() == 0) {
                cache.counters.addAll(retired);
                dying.set(i, dying.get(dying.size() - 1));
                dying.remove(dying.size() - 1);
            }
        }
        dyingCount = dying.size();
    }

    /** Called with {@link #foldLock} held; releases it. */
    private int reclaimDeadLocked() {
        List<ThreadCache> dead = new ArrayList<>();
        try {
            synchronized (registryLock) {
                ThreadCache[] current = live;
                List<ThreadCache> stay = new ArrayList<>(current.length);
                for (ThreadCache cache : current) {
                    (cache.isOwnerDead() ? dead : stay).add(cache);
                }
                if (!dead.isEmpty()) {
                    live = stay.toArray(new ThreadCache[0]);
                    dying.addAll(dead);
                    for (int i = 0; i < byId.length; i++) {
                        if (byId[i] != null && byId[i].isOwnerDead()) {
                            byId[i] = null; // a dead thread's cache is reachable from its allocations only
                        }
                    }
                }
            }
            foldDying();
            // flushed under the lock too: a reclaim that finds no dead cache left (a trim's, a close's) then
            // returns only once the caches another reclaim took out of the live ones are back in their arenas
            for (ThreadCache cache : dead) {
                cache.retire();
                cache.arena.boundThreads.decrementAndGet();
            }
        } finally {
            foldLock.unlock();
        }
        return dead.size();
    }

    /**
     * Reads every thread's counters for the first {@code categories}
     * categories, without stopping any thread: the allocation side of every
     * cache, then {@code committed}, then the release side (see
     * {@link ThreadCounters} for why that order never counts memory twice).
     */
    Snapshot snapshot(int categories, LongSupplier committed) {
        long[] totals = new long[ThreadCounters.COUNTERS];
        long committedNow;
        foldLock.lock();
        try {
            ThreadCache[] current = live;
            List<ThreadCache> dead = new ArrayList<>(dying);
            for (ThreadCache cache : current) {
                cache.counters.addSide(totals, categories, 0);
            }
            for (ThreadCache cache : dead) {
                cache.counters.addSide(totals, categories, 0);
            }
            committedNow = committed.getAsLong();
            for (ThreadCache cache : current) {
                cache.counters.addSide(totals, categories, ThreadCounters.OUT);
            }
            for (ThreadCache cache : dead) {
                cache.counters.addSide(totals, categories, ThreadCounters.OUT);
            }
            for (int i = 0; i < categories * ThreadCounters.FIELDS; i++) {
                totals[i] += retired[i];
            }
        } finally {
            foldLock.unlock();
        }
        return new Snapshot(totals, categories, committedNow);
    }

    /**
     * Every thread's counters added up, per category, and the committed bytes
     * read between the two passes: requested &lt;= reserved &lt;= committed holds
     * in every category and in total.
     */
    static final class Snapshot {
        private final long[] requested;
        private final long[] reserved;
        private final long[] allocations;
        private final long[] releases;
        private final long[] carved;
        final long committed;

        Snapshot(long[] totals, int categories, long committed) {
            this.committed = committed;
            requested = new long[categories];
            reserved = new long[categories];
            allocations = new long[categories];
            releases = new long[categories];
            carved = new long[categories];
            for (int c = 0; c < categories; c++) {
                int base = c * ThreadCounters.FIELDS;
                // a release seen without its allocation only lowers a figure; never below 0
                long res = Math.max(0, totals[base + ThreadCounters.RESERVED_IN] - totals[base + ThreadCounters.RESERVED_OUT]);
                reserved[c] = res;
                requested[c] = clamp(totals[base + ThreadCounters.REQUESTED_IN] - totals[base + ThreadCounters.REQUESTED_OUT], res);
                carved[c] = clamp(totals[base + ThreadCounters.CARVED_IN] - totals[base + ThreadCounters.CARVED_OUT], res);
                allocations[c] = totals[base + ThreadCounters.ALLOCATIONS];
                releases[c] = Math.min(totals[base + ThreadCounters.RELEASES], allocations[c]);
            }
        }

        private static long clamp(long value, long max) {
            return Math.max(0, Math.min(value, max));
        }

        long requested(int category) {
            return requested[category];
        }

        long reserved(int category) {
            return reserved[category];
        }

        long allocations(int category) {
            return allocations[category];
        }

        /** Reserved bytes of the category carved by sequential allocators and block pools; the rest is the general pool's. */
        long carved(int category) {
            return category < carved.length ? carved[category] : 0;
        }

        long releases(int category) {
            return releases[category];
        }

        long totalRequested() {
            return Arrays.stream(requested).sum();
        }

        long totalReserved() {
            return Arrays.stream(reserved).sum();
        }

        long totalAllocations() {
            return Arrays.stream(allocations).sum();
        }

        long totalReleases() {
            return Arrays.stream(releases).sum();
        }

        long totalCarved() {
            return Arrays.stream(carved).sum();
        }
    }
}
