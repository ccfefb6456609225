package io.slabwise;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.HashSet;
import java.util.Iterator;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Compaction: empties sparsely used chunks by having their owners move what
 * lives in them, so that the chunks go back to the operating system. The
 * pool's part that chooses, marks and reports; the moving is the owners'
 * ({@link Relocator}).
 *
 * <pre>
 *  choose   sparse chunks of the categories that have a relocator, least used first, up to the byte budget:
 *             arena chunks        used ≤ maxOccupancy × chunk      (mixed categories: only relocatable entries move;
 *                                 chosen only while a relocatable category has memory in the general pool)
 *             sequential chunks   pinned (retired), live ≤ maxOccupancy × chunk
 *             block pool blocks   cut into sub-blocks, sub-blocks in use ≤ maxOccupancy × block
 *  mark     chunk.evacuating = true:  no new placement there; memory freed there skips the thread caches
 *  flush    thread caches (this thread's now, others at their next operation): cached slots leave the chunks
 *  relocate each relocator, once, with an Evacuation of its category: owners copy, swap, free;
 *           a copy lands in the arena (block pool stripe) it leaves, where choose counted room for it
 *  end      unmark; chunks that emptied go back at once; count what was moved and freed
 * </pre>
 *
 * <h2>Threads</h2>
 * One compaction at a time: a second caller waits for the first (an explicit
 * {@code compact()}) or gives up at once (background and ceiling
 * compactions); a relocator that calls {@code compact()} itself gets
 * {@link CompactionStats#NONE}. The marks are volatile and checked by
 * placement under the arena's lock, so an allocation racing with the marking
 * may still land in a chunk being emptied; that only delays its freeing to a
 * later compaction. Nothing but the owners' moves touches live memory.
 */
final class Compaction {

    /** The occupancy below which {@link MemoryPool#compact()} empties a chunk. */
    static final double DEFAULT_MAX_OCCUPANCY = 0.5;
    /** How many compactions a chunk evacuated in vain is left alone, unless its used bytes change. */
    static final int FRUITLESS_COMPACTIONS = 8;

    /**
     * Where the entries of one kind of victim land (one arena of the general
     * pool, one sequential allocator, one stripe of a block pool): the free
     * room there outside the victims, and the unit in which it takes new
     * memory when that is not enough. Filled while choosing. A move lands in
     * the arena or stripe of the memory it leaves, whatever the compacting
     * thread uses, so the room of one arena (stripe) never counts for
     * another's victims.
     */
    static final class Destination {
        /** Chunk or block size: the unit of new memory. */
        final long unit;
        /** Free bytes where moves can land without new memory; victims' own free room is taken out as they are chosen. */
        long free;
        long moved;
        int victims;
        /** New memory the victims chosen so far need: whole units. */
        long newMemory;
        /**
         * For an arena: per small size class, the free elements' bytes of its
         * subpages outside the victims chosen so far, which only entries of
         * that class can take; null elsewhere.
         */
        long[] classFree;

        Destination(long unit, long free) {
            this.unit = unit;
            this.free = free;
        }

        /** Victims less the units of new memory they need: what emptying them gains, in units. */
        long gain() {
            return victims - newMemory / unit;
        }
    }

    /** A chunk (or block) a compaction may empty, with how to start and end its evacuation. */
    abstract static class Victim {
        final Chunk chunk;
        final long usedBytes;
        final Destination destination;
        /** The one category whose entries it holds (a sequential chunk, a block); null for a general-pool chunk. */
        final Category category;
        /** What it is chosen by, least first: its used bytes, or those of the region group it is emptied with. */
        long sortKey;
        /** The region group it is emptied with as a whole, or null. */
        Object group;

        Victim(Chunk chunk, long usedBytes, Destination destination, Category category) {
            this.chunk = chunk;
            this.usedBytes = usedBytes;
            this.destination = destination;
            this.category = category;
            this.sortKey = usedBytes;
        }

        /** Marks it; false when it emptied meanwhile (nothing to move). */
        abstract boolean start();

        /** Unmarks it; true when it emptied and went back (or became reusable idle memory of its allocator). */
        abstract boolean end();

        /** The bytes it frees when it empties. */
        long size() {
            return chunk.chunkSize();
        }

        /** Its free room that counted in its destination's free bytes, and is lost to moves once it is chosen. */
        long reusableFree() {
            return size() - usedBytes;
        }

        /**
         * The bytes of its entries that need free pages (or new memory) at
         * its destination, given the room per size class {@code classFree}
         * there, which it updates: entries of a small class first take that
         * class's free elements outside the victims. All of its bytes where
         * there is no such room.
         */
        long pageDemand(long[] classFree) {
            return usedBytes;
        }
    }

    private final Arena[] arenas;
    private final Collection<SequentialAllocator> sequentialAllocators;
    private final Collection<BlockPool> blockPools;
    private final ThreadCaches threadCaches;
    /** Where moves take new memory, in the arena they leave, and give back what they could not use. */
    private final GeneralPool general;
    private final Admission admission;
    /** The counters, for which relocatable categories hold general-pool memory. */
    private final Statistics statistics;
    /** Whether chunks are carved from region groups: a group goes back only when all of it empties. */
    private final boolean grouped;
    /** The ceiling: its room left, and the reserve kept for compactions' moves. */
    private final MemoryLimit limit;
    /** Where chunks come from: their region groups. */
    private final CommittedMemory committed;
    private final int chunkSize;
    /** The clock of the time a compaction took. */
    private final Ticker ticker;
    private final Map<Category, Relocator> relocators = new ConcurrentHashMap<>();
    private final ReentrantLock running = new ReentrantLock();
    /** Arena chunks evacuated in vain: their used bytes then, and the compaction's number; under {@link #running}. */
    private final Map<Chunk, long[]> fruitless = new WeakHashMap<>();
    /** The relocatable categories with memory in the general pool when the last choice was made; under {@link #running}. */
    private Set<Category> generalCategories = Set.of();
    /** Compactions that chose anything; under {@link #running}. */
    private long compactions;
    /**
     * Victims of the last compaction left marked because readers still held
     * moved entries' old memory in them: they go back when that comes back,
     * and the next compaction ends them first, or the removal of the last
     * relocator. Under {@link #running}.
     */
    private final List<Victim> draining = new ArrayList<>();
    private final AtomicReference<CompactionStats> totals = new AtomicReference<>(CompactionStats.NONE);

    Compaction(Arena[] arenas, Collection<SequentialAllocator> sequentialAllocators, Collection<BlockPool> blockPools,
               ThreadCaches threadCaches, Admission admission, GeneralPool general, Statistics statistics, MemoryLimit limit,
               CommittedMemory committed, int chunkSize, Ticker ticker) {
        this.arenas = arenas;
        this.ticker = ticker;
        this.sequentialAllocators = sequentialAllocators;
        this.blockPools = blockPools;
        this.threadCaches = threadCaches;
        this.admission = admission;
        this.general = general;
        this.statistics = statistics;
        this.committed = committed;
        this.grouped = committed.grouped();
        this.limit = limit;
        this.chunkSize = chunkSize;
    }

    /**
     * Registers (or, with null, removes) the relocator of a category; returns
     * the one it replaced. Removing the last one opens the chunks the last
     * compaction left marked for readers: no compaction runs without a
     * relocator to open them.
     */
    Relocator setRelocator(Category category, Relocator relocator) {
        Relocator before;
        synchronized (relocators) {
            before = relocator == null ? relocators.remove(category) : relocators.put(category, relocator);
            limit.reserveForCompaction(relocators.isEmpty() ? 0 : chunkSize);
        }
        endDrainingWithoutRelocators();
        return before;
    }

    /**
     * Ends the victims left {@link #draining} when no category has a
     * relocator any more: the next compaction, which would end them, never
     * comes, and a chunk that also holds memory that cannot move would stay
     * closed to new memory for the life of the pool. Never waits: a
     * compaction under way does it after it lets go of {@link #running}.
     * Either the remover or that compaction sees the other: the remover
     * empties the map before it tries the lock, the compaction lets go of the
     * lock before it reads the map.
     */
    private void endDrainingWithoutRelocators() {
        if (relocators.isEmpty() && running.tryLock()) {
            try {
                endDraining();
            } finally {
                running.unlock();
            }
        }
    }

    /** Ends the victims left {@link #draining}: open again what the readers still hold; under {@link #running}. */
    private void endDraining() {
        for (Victim victim : draining) {
            victim.end();
        }
        draining.clear();
    }

    /** Whether any category has a relocator. */
    boolean hasRelocators() {
        return !relocators.isEmpty();
    }

    /** All compactions so far, added up. */
    CompactionStats totals() {
        return totals.get();
    }

    /**
     * Compacts once; see {@link MemoryPool#compact(double, long)}.
     *
     * @param wait whether to wait for a compaction under way (else return {@link CompactionStats#NONE})
     * @param cause {@code compact}, {@code background} or {@code ceiling}, for the event
     */
    CompactionStats compact(double maxOccupancy, long maxBytesToMove, boolean wait, String cause) {
        if (!(maxOccupancy >= 0 && maxOccupancy < 1)) {
            throw new IllegalArgumentException("the occupancy below which chunks are emptied must be from 0 to under 1: "
                    + maxOccupancy);
        }
        if (maxBytesToMove < 0) {
            throw new IllegalArgumentException("the bytes to move must not be negative: " + maxBytesToMove);
        }
        if (relocators.isEmpty() || running.isHeldByCurrentThread()) {
            return CompactionStats.NONE;
        }
        if (wait) {
            running.lock();
        } else if (!running.tryLock()) {
            return CompactionStats.NONE;
        }
        limit.compacting(true);
        try {
            PoolEvents.Compaction event = PoolEvents.beginCompaction();
            long start = ticker.read();
            CompactionStats done = evacuate(maxOccupancy, maxBytesToMove, start);
            totals.accumulateAndGet(done, CompactionStats::plus);
            PoolEvents.endCompaction(event, cause, done);
            return done;
        } finally {
            limit.compacting(false);
            running.unlock();
            endDrainingWithoutRelocators(); // the last relocator may have gone while this compaction ran
        }
    }

    private CompactionStats evacuate(double maxOccupancy, long maxBytesToMove, long start) {
        endDraining(); // chosen again below if still sparse
        threadCaches.flushOwnAndRequestOthers(); // before choosing: what this thread caches makes its chunks look used
        List<Victim> started = new ArrayList<>();
        for (Victim victim : choose(maxOccupancy, maxBytesToMove)) {
            if (victim.start()) {
                started.add(victim);
            }
        }
        if (started.isEmpty()) {
            return new CompactionStats(1, 0, 0, 0, 0, 0, 0, 0, ticker.read() - start);
        }
        compactions++;
        long moved = 0;
        long entries = 0;
        long refused = 0;
        long held = 0;
        boolean exhausted = false;
        Set<Chunk> heldChunks = new HashSet<>();
        RuntimeException failure = null;
        try {
            // again once marked: other threads may have cached memory of the chosen chunks since the first request
            threadCaches.flushOwnAndRequestOthers();
            Set<Category> holding = categoriesHeldBy(started);
            for (Map.Entry<Category, Relocator> owner : relocators.entrySet()) {
                if (!holding.contains(owner.getKey())) {
                    continue; // no chunk being emptied holds its entries: its walk would find nothing
                }
                Evacuation evacuation = new Evacuation(this, owner.getKey(), maxBytesToMove - moved,
                        regionKeysHolding(started, owner.getKey()));
                try {
                    owner.getValue().relocate(evacuation);
                } catch (RuntimeException e) {
                    if (failure == null) {
                        failure = e;
                    } else {
                        failure.addSuppressed(e);
                    }
                } finally {
                    evacuation.end();
                    moved += evacuation.movedBytes;
                    entries += evacuation.movedEntries;
                    refused += evacuation.refusedEntries;
                    held += evacuation.heldByReaders;
                    exhausted |= evacuation.exhausted;
                    heldChunks.addAll(evacuation.draining);
                }
            }
        } catch (RuntimeException | Error e) {
            end(started, false); // every mark goes, whatever happened: a marked chunk would never take new memory again
            throw e;
        }
        int evacuated = started.size();
        // chunks readers still hold memory of stay marked, to go back when the readers let go
        for (Iterator<Victim> i = started.iterator(); i.hasNext(); ) {
            Victim victim = i.next();
            if (heldChunks.contains(victim.chunk)) {
                draining.add(victim);
                i.remove();
            }
        }
        // a chunk that kept all it held while every owner looked at all its entries and refused none holds
        // nothing that can move
        long[] emptied = end(started, failure == null && refused == 0 && !exhausted);
        // what left the pool: the victims' memory given back, less the memory the moves took
        long givenBack = Math.max(0, limit.givenBackByCompaction());
        long chunksFreed = givenBack >= emptied[1] ? emptied[0] : Math.min(emptied[0], givenBack / chunkSize);
        CompactionStats done = new CompactionStats(1, evacuated, chunksFreed, givenBack, entries, moved, refused, held,
                ticker.read() - start);
        if (failure != null) {
            totals.accumulateAndGet(done, CompactionStats::plus);
            throw new IllegalStateException("a relocator failed during compaction (" + done + ")", failure);
        }
        return done;
    }

    /**
     * Ends the evacuation of every victim; returns {chunks emptied, their bytes}.
     * With {@code learn}, arena chunks that kept exactly their bytes are
     * remembered as {@linkplain #fruitless fruitless}.
     */
    private long[] end(List<Victim> started, boolean learn) {
        long[] emptied = new long[2];
        for (Victim victim : started) {
            if (victim.end()) {
                emptied[0]++;
                emptied[1] += victim.size();
            } else if (learn && victim instanceof ArenaChunk && ((ArenaChunk) victim).usedNow() == victim.usedBytes) {
                fruitless.put(victim.chunk, new long[] {victim.usedBytes, compactions});
            }
        }
        return emptied;
    }

    /** The chunks to empty: the least used first, while their bytes in use fit the budget. */
    private List<Victim> choose(double maxOccupancy, long maxBytesToMove) {
        List<Victim> candidates = new ArrayList<>();
        long maxUsedInChunk = (long) (maxOccupancy * chunkSize);
        generalCategories = relocatableInGeneralPool();
        if (!generalCategories.isEmpty()) { // else marking general chunks would only make other categories' traffic pay
            Map<RegionGroups.Group, List<ArenaChunk>> byGroup = new HashMap<>();
            // with region groups every chunk (but those lent whole to a sequential allocator), idle ones
            // included: an idle chunk kept for reuse would keep its group from emptying
            double occupancyConsidered = grouped ? 1 : maxOccupancy;
            for (Arena arena : arenas) {
                List<Chunk> chunks = new ArrayList<>();
                // each arena a destination of its own: a move lands in the arena it leaves (allocateForMove),
                // so only that arena's free room can take it
                Destination sameArena = new Destination(chunkSize, arena.sparseChunks(occupancyConsidered, grouped, chunks));
                sameArena.classFree = arena.freeElementBytes();
                for (Chunk chunk : chunks) { // an arena's first chunks are smaller than the rest
                    ArenaChunk victim = new ArenaChunk(chunk, arena, sameArena, grouped,
                            (long) (occupancyConsidered * chunk.chunkSize()));
                    if (victim.usedBytes <= maxOccupancy * chunk.chunkSize() && !fruitless(chunk, victim.usedBytes)) {
                        candidates.add(victim);
                    } else if (grouped) {
                        victim.sortKey = -1; // dense: a candidate only with the whole of its group
                    }
                    RegionGroups.Group group = grouped ? committed.groupOf(chunk.region) : null;
                    if (group != null) {
                        byGroup.computeIfAbsent(group, g -> new ArrayList<>()).add(victim);
                    }
                }
            }
            chooseWholeGroups(byGroup, maxOccupancy, candidates);
        }
        for (SequentialAllocator sequential : sequentialAllocators) {
            if (relocators.containsKey(sequential.category())) {
                // a chunk the moves open is the stripe's open chunk from then on, for the records that follow:
                // one is no loss, and a sequential chunk emptied into it is not chosen again (it is not pinned)
                sequential.sparsePinnedChunks(maxUsedInChunk,
                        new Destination(chunkSize, sequential.roomForMoves() + chunkSize), candidates);
            }
        }
        for (BlockPool blocks : blockPools) {
            if (relocators.containsKey(blocks.category())) {
                blocks.sparseBlocks((long) (maxOccupancy * blocks.blockSize()), candidates);
            }
        }
        // least first; the chunks of a group emptied as a whole side by side, so that a budget takes them together
        candidates.sort(Comparator.<Victim>comparingLong(v -> v.sortKey)
                .thenComparingInt(v -> v.group == null ? 0 : System.identityHashCode(v.group)));
        // what moves must land somewhere else: in free room outside the victims, or in new memory under the ceiling
        long headroom = limit.max == Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, limit.max - limit.committed());
        List<Victim> chosen = new ArrayList<>();
        long bytes = 0;
        long newMemory = 0;
        for (Victim victim : candidates) {
            if (bytes + victim.usedBytes > maxBytesToMove) {
                break;
            }
            Destination to = victim.destination;
            long free = to.free - victim.reusableFree();
            long[] classFree = to.classFree == null ? null : to.classFree.clone();
            long moved = to.moved + victim.pageDemand(classFree);
            long need = (Math.max(0, moved - free) + to.unit - 1) / to.unit * to.unit;
            if (newMemory - to.newMemory + need > headroom) {
                continue;
            }
            newMemory += need - to.newMemory;
            to.newMemory = need;
            to.free = free;
            to.classFree = classFree;
            to.moved = moved;
            to.victims++;
            chosen.add(victim);
            bytes += victim.usedBytes;
        }
        // victims that would need as many new chunks as they free gain nothing: moving them would never end
        chosen.removeIf(v -> v.destination.gain() < 1);
        return chosen;
    }

    /**
     * With region groups, a group goes back only when every region in it is
     * free, so emptying its sparse chunks alone gives nothing back while it
     * also holds dense ones. A group whose regions are all general-pool
     * chunks holding together at most {@code maxOccupancy} of it is emptied
     * as a whole, its dense chunks too: they become candidates, and every
     * chunk of it is chosen by the group's bytes in use.
     */
    private void chooseWholeGroups(Map<RegionGroups.Group, List<ArenaChunk>> byGroup, double maxOccupancy,
                                   List<Victim> candidates) {
        for (Map.Entry<RegionGroups.Group, List<ArenaChunk>> entry : byGroup.entrySet()) {
            List<ArenaChunk> members = entry.getValue();
            long used = 0;
            long units = 0;
            boolean fruitlessMember = false;
            for (ArenaChunk member : members) {
                used += member.usedBytes;
                units += RegionGroups.unitsFor(member.chunk.chunkSize());
                fruitlessMember |= fruitless(member.chunk, member.usedBytes);
            }
            boolean whole = units == committed.carvedUnits(entry.getKey());
            if (!whole || fruitlessMember || used > maxOccupancy * RegionGroups.GROUP_SIZE) {
                continue;
            }
            for (ArenaChunk member : members) {
                if (member.sortKey < 0) {
                    candidates.add(member); // a dense chunk, chosen with its group
                }
                member.sortKey = used;
                member.group = entry.getKey();
            }
        }
    }

    /**
     * Whether an arena chunk was evacuated lately and kept exactly these used
     * bytes: nothing in it could move (other categories' memory, entries in
     * use), so choosing it again would only spend the budget. Forgotten after
     * {@link #FRUITLESS_COMPACTIONS} compactions, or when its bytes change.
     */
    private boolean fruitless(Chunk chunk, long usedBytes) {
        long[] seen = fruitless.get(chunk);
        return seen != null && seen[0] == usedBytes && compactions - seen[1] < FRUITLESS_COMPACTIONS;
    }

    /** The categories with a relocator that have live memory in the general pool (not carved by a cache allocator). */
    private Set<Category> relocatableInGeneralPool() {
        ThreadCaches.Snapshot now = statistics.counters();
        Set<Category> general = new HashSet<>();
        for (Category category : relocators.keySet()) {
            if (now.reserved(category.id) > now.carved(category.id)) {
                general.add(category);
            }
        }
        return general;
    }

    /** The keys of the victims that may hold entries of {@code category}, ascending. */
    private long[] regionKeysHolding(List<Victim> victims, Category category) {
        return victims.stream()
                .filter(v -> v.category == null ? generalCategories.contains(category) : v.category == category)
                .mapToLong(v -> v.chunk.key).sorted().toArray();
    }

    /** The categories whose entries the victims may hold: theirs, and for general-pool chunks those with memory there. */
    private Set<Category> categoriesHeldBy(List<Victim> victims) {
        Set<Category> held = new HashSet<>();
        for (Victim victim : victims) {
            if (victim.category != null) {
                held.add(victim.category);
            } else {
                held.addAll(generalCategories);
            }
        }
        return held;
    }

    /** A general-pool chunk as a victim; an idle one too with {@code idleToo}, which goes back at the end. */
    private static final class ArenaChunk extends Victim {
        private final Arena arena;
        private final boolean idleToo;
        private final long maxUsedBytes;

        /** Its free pages' bytes when chosen: what it counted in its arena's room for moves. */
        private final long freePageBytes;
        /** Per small size class, its subpages' elements taken and free, in bytes; read when first needed. */
        private long[] takenByClass;
        private long[] freeByClass;

        ArenaChunk(Chunk chunk, Arena arena, Destination destination, boolean idleToo, long maxUsedBytes) {
            super(chunk, arena.usedBytes(chunk), destination, null);
            this.arena = arena;
            this.idleToo = idleToo;
            this.maxUsedBytes = maxUsedBytes;
            this.freePageBytes = arena.freePageBytes(chunk);
        }

        @Override
        long reusableFree() {
            return freePageBytes;
        }

        /**
         * Its bytes in need of free pages, its subpages read only now (a walk of
         * its pages): for the candidates a choice reaches within its budget,
         * not for every sparse chunk.
         */
        @Override
        long pageDemand(long[] classFree) {
            if (classFree == null) {
                return usedBytes;
            }
            if (takenByClass == null) {
                takenByClass = new long[classFree.length];
                freeByClass = new long[classFree.length];
                if (!arena.elementBytesByClass(chunk, takenByClass, freeByClass)) {
                    return usedBytes; // no subpage: all of it is runs, which take free pages
                }
            }
            long demand = usedBytes;
            for (int c = 0; c < takenByClass.length; c++) {
                classFree[c] -= freeByClass[c]; // its own free elements take no move
                long fits = Math.min(Math.max(0, classFree[c]), takenByClass[c]);
                classFree[c] -= fits;
                demand -= fits;
            }
            return demand;
        }

        @Override
        boolean start() {
            return arena.startEvacuation(chunk, idleToo, maxUsedBytes, false);
        }

        @Override
        boolean end() {
            return arena.endEvacuation(chunk);
        }

        /** Its bytes in use now. */
        long usedNow() {
            return arena.usedBytes(chunk);
        }
    }

    /**
     * New general-pool memory for a move of {@code from}: in {@code from}'s
     * arena, where the choice counted room for it, past the thread cache,
     * never waiting at a limit.
     */
    boolean allocateForMove(Allocation from, Allocation to) {
        if (from.chunk.huge) {
            throw new IllegalArgumentException("a huge allocation has a region of its own and never moves: " + from);
        }
        Arena arena = from.chunk.arena;
        return admission.tryAdmit((category, requested, out) -> general.tryGeneral(category, requested, out, arena),
                from.category, from.requested, to);
    }

    /** Whether the pool was closed: moves are refused from then on. */
    boolean poolClosed() {
        return admission.isClosed();
    }

    /** Frees memory taken for a move that could not be used. */
    void free(Allocation allocation) {
        general.free(allocation);
    }
}
