package io.slabwise;

import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The native memory a pool holds from its chunk source: the only place
 * memory is taken or given back, so the ceiling is enforced here and every
 * region still held is known.
 *
 * <pre>
 *  commit(size) ── limit.tryCommit(size) ──no──▶ CeilingReached
 *                        │yes
 *                        ▼
 *                 chunkSource.allocate ──throws──▶ limit.uncommit, rethrow (nothing changed)
 *                        │
 *                        ▼
 *                 regions += region, with its kind ──▶ JFR io.slabwise.ChunkCommitted
 * </pre>
 *
 * <h2>Region groups (the direct source on glibc)</h2>
 * With the built-in direct source (malloc: Java 17, or Java 22+ with mapping
 * off), on glibc without {@code MALLOC_MMAP_THRESHOLD_} in the environment
 * (where malloc may keep freed chunks resident, see {@link MallocWarning}), regions smaller than {@value RegionGroups#GROUP_SIZE} bytes are carved
 * out of {@link RegionGroups groups} of that size, each taken from the source
 * in one piece, so that glibc maps it and unmaps it when the group's last
 * region is given back (see {@link RegionGroups}). A region goes, in this
 * order: into a group that has room (nothing new is committed); on its own,
 * while the pool's regions on their own stay within
 * {@value #ALONE_BUDGET} bytes (a small pool does not take a whole group, and
 * what malloc may keep of them is bounded by that); into a new group; and on
 * its own when the ceiling (or the JVM's direct-memory limit) has no room for
 * a new group but has room for the region. Regions of a group's size or more
 * are always on their own: glibc maps them anyway. {@code -Dslabwise.noRegionGroups=true}
 * puts every region on its own. Regions on their own under a group's size
 * are taken on one thread of the process ({@link MallocArenaThread}), so that
 * what malloc keeps of them stays in one arena; giving one back marks this
 * object ({@link #takeFreedToMalloc()}), and the pool's next trim or decay
 * asks glibc to trim its arenas ({@link NativeHeap}).
 *
 * <p>Committed bytes are what the pool holds from the source: a whole group
 * counts from the moment it is taken (its memory is zeroed, so resident) to the
 * moment it is given back, however few of its regions are in use. The ceiling
 * applies to those bytes, so a new group needs room for all of it. Committed
 * bytes are the limit's atomic counter.
 *
 * <h2>Events</h2>
 * The JFR events are per region, as the pool's code sees them:
 * {@code io.slabwise.ChunkCommitted} when a region is committed and
 * {@code io.slabwise.ChunkReleased} when it is given back, with its size and
 * kind; their {@code committed} field is the pool's committed bytes just
 * after, groups included. So a region that opens a new group shows a jump of a
 * whole group in {@code committed}, one carved from a group with room shows
 * none, and the release of a group's last region shows the group's bytes
 * leaving. Both events are on the slow path only (see {@link PoolEvents}).
 *
 * <p>The memory taken from the source (regions on their own and the groups'
 * backing regions) is what the cleaner of a pool dropped without
 * {@code close()} frees ({@link #reclaimerOnCollection()}); it refers to this
 * object's set and source, never to the pool. Any thread.
 */
final class CommittedMemory {

    private static final System.Logger LOGGER = System.getLogger(CommittedMemory.class.getName());

    /** What a region is for; named in the JFR events. */
    enum RegionKind {
        /** A pooled chunk, carved by an arena. */
        CHUNK,
        /** A dedicated region: one request larger than a chunk, or above the dedicated threshold. */
        HUGE,
        /** A block region of a block pool. */
        BLOCK;

        /** The lowercase name, as the events show it. */
        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * Bytes of the regions a pool with groups may keep on their own (regions
     * smaller than a group): a group's worth, so a pool of a few MiB of chunks
     * (which grow from 256 KiB, see {@link Arena}) commits its chunks and not a
     * 32 MiB group. What malloc keeps of such regions once they are given back
     * is bounded by their one malloc arena and the native heap trim, not by
     * this budget ({@link MallocArenaThread}, {@link NativeHeap}).
     */
    static final long ALONE_BUDGET = 32L * 1024 * 1024;

    private final ChunkSource source;
    private final MemoryLimit limit;
    /** The groups regions are carved from; null when every region is taken on its own. */
    private final RegionGroups groups;
    /** Whether the source's memory counts against the JVM's direct-memory limit, to check before taking a group. */
    private final boolean jvmCounts;
    /** Every region handed out, with its kind and, if carved from a group, where. */
    private final ConcurrentHashMap<NativeRegion, Held> regions = new ConcurrentHashMap<>();
    /** What was taken from the source and not given back yet: regions on their own and the groups' backing regions. */
    private final Set<NativeRegion> fromSource = ConcurrentHashMap.newKeySet();
    /** Bytes of the regions on their own counted against {@link #ALONE_BUDGET}. */
    private final AtomicLong aloneBytes = new AtomicLong();
    /** Bytes of the regions handed out, on their own or carved from groups. */
    private final AtomicLong regionBytes = new AtomicLong();
    /** Whether malloc may keep what this source gives back on its own resident (see {@link NativeHeap}). */
    private final boolean mallocKeepsFreed;
    /** Set when a region on its own went back to malloc since the last {@link #takeFreedToMalloc()}. */
    private final AtomicBoolean freedToMalloc = new AtomicBoolean();
    /** Bytes of chunks and block regions handed out whole to sequential allocators and block pools. */
    final AtomicLong wholeChunkBytes = new AtomicLong();
    /**
     * Bytes and count of dedicated regions (huge requests, and those above the
     * dedicated threshold) live or kept in a thread's slot: a region moves
     * between a buffer and its thread's slot without a count.
     */
    final AtomicLong hugeBytes = new AtomicLong();
    final AtomicLong hugeCount = new AtomicLong();
    /** Bytes of the block regions block pools hold, in use or idle. */
    final AtomicLong blockRegionBytes = new AtomicLong();
    /** Set by {@link #close()}: a region committed from then on is given back at once (see {@link #commit}). */
    private volatile boolean closed;

    /**
     * A region held: its kind and, for a region carved from a group, where.
     *
     * @param carving  where in its group the region is; null for a region on its own
     * @param budgeted whether a region on its own counts against {@link #ALONE_BUDGET}
     */
    private record Held(RegionKind kind, RegionGroups.Carving carving, boolean budgeted) {
    }

    CommittedMemory(ChunkSource source, MemoryLimit limit) {
        this(source, limit, source == DirectChunkSource.INSTANCE && MallocWarning.regionGroupsWanted());
        if (source == DirectChunkSource.INSTANCE) {
            MallocWarning.warnOnce(); // about this source only: a pool over another takes no chunk from malloc here
        }
    }

    /** With region groups or without, whatever the source; for tests. */
    CommittedMemory(ChunkSource source, MemoryLimit limit, boolean grouped) {
        this.source = source;
        this.limit = limit;
        this.groups = grouped ? new RegionGroups() : null;
        this.jvmCounts = source == DirectChunkSource.INSTANCE && DirectChunkSource.countedByJvmLimit();
        this.mallocKeepsFreed = source == DirectChunkSource.INSTANCE && MallocWarning.glibcKeepsFreedChunks();
    }

    /**
     * Whether malloc serves a region of {@code size} bytes from an arena, where
     * it may stay resident once freed: the direct source on glibc without
     * {@code MALLOC_MMAP_THRESHOLD_}, under a group's size (glibc maps and
     * unmaps larger ones itself).
     */
    private boolean fromMallocArena(int size) {
        return mallocKeepsFreed && size < RegionGroups.GROUP_SIZE;
    }

    /**
     * Whether a region on its own went back to malloc, where it may stay
     * resident, since the last call; clears the mark. The pool then asks for
     * a {@link NativeHeap#trim()}.
     */
    boolean takeFreedToMalloc() {
        return freedToMalloc.get() && freedToMalloc.getAndSet(false);
    }

    /** Native memory currently taken from the chunk source. */
    long committed() {
        return limit.committed();
    }

    /**
     * What the pool holds by kind, read one figure after another.
     *
     * @param hugeBytes        bytes of live dedicated regions (huge requests, and those above the dedicated threshold)
     * @param hugeCount        live dedicated regions
     * @param hugeIdleBytes    bytes of idle dedicated regions, kept for reuse
     * @param blockRegionBytes bytes of the block regions block pools hold, in use or idle
     * @param wholeChunkBytes  bytes of chunks and block regions lent whole to the cache allocators
     */
    record Figures(long hugeBytes, long hugeCount, long hugeIdleBytes, long blockRegionBytes, long wholeChunkBytes) {
    }

    /**
     * The figures by kind, for a snapshot, with what the caller read of idle
     * dedicated regions: the idle list's bytes, and the regions parked in
     * threads' slots and the recent cell, which {@link #hugeBytes} and
     * {@link #hugeCount} still count.
     */
    Figures figures(long idleListBytes, long slotCount, long slotBytes) {
        // the slots and the cell are read one after another while regions move between them (a shared cache's
        // flush puts its regions into the cell): one may be seen twice, never more than the counts hold
        long huge = hugeBytes.get();
        long parked = Math.min(slotBytes, huge);
        return new Figures(huge - parked, Math.max(0, hugeCount.get() - slotCount), idleListBytes + parked,
                blockRegionBytes.get(), wholeChunkBytes.get());
    }

    /**
     * Bytes of the regions handed out: {@link #committed()} less the room in
     * groups not carved into regions.
     */
    long regionBytes() {
        return regionBytes.get();
    }

    /** The group {@code region} was carved from; null for a region on its own, or one not held here. */
    RegionGroups.Group groupOf(NativeRegion region) {
        Held held = regions.get(region);
        return held == null || held.carving() == null ? null : held.carving().group();
    }

    /** Units carved from {@code group} now (see {@link RegionGroups#UNIT}). */
    int carvedUnits(RegionGroups.Group group) {
        return groups.carvedUnits(group);
    }

    /**
     * Counts a region a compaction is emptying ({@code on}), or no longer, in
     * its group, so that no new region lands in a group about to empty (see
     * {@link RegionGroups#carve(int, boolean)}); nothing for a region on its
     * own. Once each way, and before the region is given back.
     */
    void evacuating(NativeRegion region, boolean on) {
        Held held = regions.get(region);
        if (held != null && held.carving() != null) {
            groups.evacuating(held.carving(), on);
        }
    }

    /** Whether regions are carved from groups. */
    boolean grouped() {
        return groups != null;
    }

    /** The groups holding at least one region; 0 without groups. */
    int groupCount() {
        return groups == null ? 0 : groups.groupCount();
    }

    /**
     * Commits a region of {@code size} bytes of that kind: carved from a group,
     * or taken from the chunk source on its own (see the class comment).
     * Whatever the chunk source throws leaves the committed bytes as they were.
     *
     * @throws CeilingReached        when that would pass the ceiling
     * @throws IllegalStateException when the pool closed before the region was counted (see {@link #close()})
     */
    NativeRegion commit(int size, RegionKind kind) {
        NativeRegion region = commitRegion(size, kind);
        if (closed) {
            decommit(region);
            throw new IllegalStateException("this pool closed while a " + kind.label() + " of " + size
                    + " bytes was being committed: no new allocations");
        }
        return region;
    }

    /**
     * From now on every {@link #commit} gives its region back and throws: an
     * allocation that passed the pool's open check just before {@code close()}
     * cannot commit memory after close found nothing committed (and stopped
     * the decay that gives a closed pool's memory back). The committed bytes
     * are counted before this flag is read, and close() sets it before it
     * reads them, so one of the two always sees the other.
     */
    void close() {
        closed = true;
    }

    private NativeRegion commitRegion(int size, RegionKind kind) {
        if (groups == null || size >= RegionGroups.GROUP_SIZE) {
            return commitAlone(size, kind, false);
        }
        RegionGroups.Carving carving = groups.carve(size);
        if (carving == null) {
            if (reserveAloneBudget(size)) {
                try {
                    return commitAlone(size, kind, true);
                } catch (RuntimeException | Error e) {
                    aloneBytes.addAndGet(-size);
                    throw e;
                }
            }
            RegionGroups.Group group = newGroup();
            if (group == null) { // no room for a whole group: a group a compaction is emptying, else on its own
                carving = groups.carve(size, true);
                if (carving == null) {
                    return commitAlone(size, kind, false);
                }
            } else {
                carving = groups.carveFromNew(group, size);
            }
        }
        NativeRegion backing = carving.group().backing;
        int offset = (int) carving.offset();
        NativeRegion region = new NativeRegion(backing.buffer().slice(offset, size), backing.address() + offset, size);
        regions.put(region, new Held(kind, carving, false));
        regionBytes.addAndGet(size);
        PoolEvents.chunkCommitted(size, kind, limit.committed());
        return region;
    }

    /** Counts {@code size} bytes against the budget of regions on their own, if they fit. */
    private boolean reserveAloneBudget(int size) {
        while (true) {
            long current = aloneBytes.get();
            if (current + size > ALONE_BUDGET) {
                return false;
            }
            if (aloneBytes.compareAndSet(current, current + size)) {
                return true;
            }
        }
    }

    /** A new group, committed and taken from the source; null when the ceiling or the JVM's limit has no room for it. */
    private RegionGroups.Group newGroup() {
        if (jvmCounts && !JvmDirectMemory.hasRoomFor(RegionGroups.GROUP_SIZE)) {
            return null;
        }
        if (!limit.tryCommit(RegionGroups.GROUP_SIZE)) {
            return null;
        }
        try {
            return new RegionGroups.Group(takeCommitted(RegionGroups.GROUP_SIZE));
        } catch (OutOfMemoryError e) { // the JVM's limit, reached by someone else meanwhile: try the region on its own
            return null;
        }
    }

    /** Takes a region on its own from the chunk source. */
    private NativeRegion commitAlone(int size, RegionKind kind, boolean budgeted) {
        if (!limit.tryCommit(size)) {
            throw CeilingReached.INSTANCE;
        }
        NativeRegion region = takeCommitted(size);
        regions.put(region, new Held(kind, null, budgeted));
        regionBytes.addAndGet(size);
        PoolEvents.chunkCommitted(size, kind, limit.committed());
        return region;
    }

    /**
     * Takes {@code size} bytes from the chunk source, already counted by
     * {@code limit.tryCommit}: whatever fails (the source throws, returns
     * null or returns another size) uncommits them again and is thrown.
     */
    private NativeRegion takeCommitted(int size) {
        NativeRegion region;
        try {
            // what malloc keeps of such a region stays in the arena of the thread that took it
            region = fromMallocArena(size) ? MallocArenaThread.allocate(source, size) : source.allocate(size);
        } catch (RuntimeException | Error e) {
            limit.uncommit(size);
            throw e;
        }
        if (region == null) {
            limit.uncommit(size);
            throw new IllegalStateException("chunk source " + source + " returned null for " + size + " bytes");
        }
        if (region.size() != size) {
            try {
                giveBack(region);
            } finally {
                limit.uncommit(size);
            }
            throw new IllegalStateException("chunk source returned " + region.size() + " bytes for " + size);
        }
        fromSource.add(region);
        return region;
    }

    /**
     * Gives back a region taken with {@link #commit}: to the chunk source if
     * it is on its own; to its group otherwise, and the group to the source
     * when that was its last region. What goes to the source counts as given
     * back even when the source's {@code release} throws (see {@link #giveBack}).
     */
    void decommit(NativeRegion region) {
        Held held = regions.remove(region);
        if (held != null) {
            regionBytes.addAndGet(-region.size());
        }
        RegionKind kind = held != null ? held.kind() : RegionKind.CHUNK;
        if (held != null && held.carving() != null) {
            RegionGroups.Group emptied = groups.free(held.carving());
            if (emptied != null) {
                fromSource.remove(emptied.backing);
                try {
                    giveBack(emptied.backing);
                } finally {
                    limit.uncommit(RegionGroups.GROUP_SIZE);
                }
            } else {
                limit.released(); // room in a group is room for a waiter too
            }
        } else {
            fromSource.remove(region);
            try {
                giveBack(region);
            } finally {
                limit.uncommit(region.size());
                if (fromMallocArena(region.size())) {
                    freedToMalloc.set(true);
                }
                if (held != null && held.budgeted()) {
                    aloneBytes.addAndGet(-region.size());
                }
            }
        }
        PoolEvents.chunkReleased(region.size(), kind, limit.committed());
    }

    /**
     * Hands a region the pool no longer holds to the chunk source, whose
     * {@code release} may be the application's own code. The caller counts
     * the region as given back whatever happens here, and the pool never
     * hands it to the source again: a release that throws would otherwise
     * leave its bytes committed for good (the ceiling lower by as much, a
     * closed pool never reaching zero) and break off, half done, the
     * operation that emptied the region (a buffer's release on any thread,
     * a cache's flush, a trim, a close). So an exception is logged at
     * WARNING, not thrown; an {@link Error} is thrown, once the caller has
     * counted the region.
     */
    private void giveBack(NativeRegion region) {
        try {
            source.release(region);
        } catch (RuntimeException e) {
            LOGGER.log(System.Logger.Level.WARNING, "chunk source " + source + " failed to release a region of "
                    + region.size() + " bytes; the pool counts it as given back", e);
        }
    }

    /** The work of a cleaner for a pool collected without {@code close()}: gives back every region still held. */
    Runnable reclaimerOnCollection() {
        return new Reclaimer(fromSource, source);
    }

    /** Refers to what was taken from the source and the source only, so that it does not keep the pool reachable. */
    private static final class Reclaimer implements Runnable {
        private final Set<NativeRegion> regions;
        private final ChunkSource source;

        Reclaimer(Set<NativeRegion> regions, ChunkSource source) {
            this.regions = regions;
            this.source = source;
        }

        @Override
        public void run() {
            for (NativeRegion region : regions) {
                try {
                    source.release(region);
                } catch (RuntimeException e) {
                    LOGGER.log(System.Logger.Level.WARNING, "could not give back a region of a dropped pool", e);
                }
            }
            regions.clear();
        }
    }
}
