package io.slabwise;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * A compaction's choice: which chunks (and blocks) it empties, given as
 * {@link Victim}s, plain data that {@link Compaction} then marks, hands to
 * the owners and ends. It reads the parts that hold chunks and changes none
 * of them; its one memory is of the arena chunks evacuated in vain lately.
 *
 * <pre>
 *  list   sparse chunks of the categories that have a relocator, each a victim with the destination its entries land in:
 *           arena chunks        used ≤ maxOccupancy × chunk, not evacuated in vain lately, one destination per arena
 *                               (only while a relocatable category has memory in the general pool); with region
 *                               groups every chunk of a group at most maxOccupancy used altogether, dense ones too
 *           sequential chunks   pinned (retired), live ≤ maxOccupancy × chunk, one destination per allocator
 *           block pool blocks   cut into sub-blocks, in use ≤ maxOccupancy × block, one destination per stripe
 *  pick   least used first (a group's chunks by the group's bytes, side by side) while their bytes fit the budget,
 *         each only if its entries find room: free pages at its destination outside the victims (for small entries
 *         free elements of their class), else new memory under the ceiling
 *  drop   the victims of a destination that need as many new chunks as they free: moving them would never end
 * </pre>
 *
 * Used by one compaction at a time, under its lock; not thread-safe.
 */
final class CompactionChoice {

    /** How many compactions a chunk evacuated in vain is left alone, unless its used bytes change. */
    static final int FRUITLESS_COMPACTIONS = 8;

    /** How an arena chunk's element bytes by size class are read: from its arena, under the arena's lock. */
    private static final ElementBytes ARENA_ELEMENTS =
            (chunk, taken, free) -> chunk.arena.elementBytesByClass(chunk, taken, free);

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

    /**
     * A chunk (or block) a compaction may empty, described by data: what it
     * is and holds, where its entries land, and what marks it. The choice
     * makes those of the arenas; the cache allocators make theirs from what
     * they hold. Only its sort key and group change, while choosing.
     */
    static final class Victim {

        /** What a victim is. */
        enum Kind {
            /** A general-pool chunk of an arena: it may hold entries of any category. */
            GENERAL,
            /** A pinned chunk of a sequential allocator: retired, with slices still live. */
            PINNED_SLAB,
            /** A block of a block pool, cut into sub-blocks. */
            BLOCK
        }

        final Kind kind;
        final Chunk chunk;
        final long usedBytes;
        /** Its free room that counted in its destination's free bytes, and is lost to moves once it is chosen. */
        final long reusableFree;
        final Destination destination;
        /** The one category whose entries it holds (a sequential chunk, a block); null for a general-pool chunk. */
        final Category category;
        /** What marks and unmarks it: its arena, or its allocator's own record of it (a slab, a cut block). */
        final Compaction.Evacuable source;
        /**
         * How a general-pool chunk is marked: only while it holds at most
         * these bytes (more, and it filled or changed hands since the choice),
         * and with {@link #emptyToo} also when it emptied meanwhile (with
         * region groups, where an idle chunk keeps its group from going back).
         */
        final long maxUsedBytes;
        final boolean emptyToo;
        /** What it is chosen by, least first: its used bytes, or those of the region group it is emptied with. */
        long sortKey;
        /** The region group it is emptied with as a whole, or null. */
        Object group;

        private Victim(Kind kind, Chunk chunk, long usedBytes, long reusableFree, Destination destination, Category category,
                       Compaction.Evacuable source, long maxUsedBytes, boolean emptyToo) {
            this.kind = kind;
            this.chunk = chunk;
            this.usedBytes = usedBytes;
            this.reusableFree = reusableFree;
            this.destination = destination;
            this.category = category;
            this.source = source;
            this.maxUsedBytes = maxUsedBytes;
            this.emptyToo = emptyToo;
            this.sortKey = usedBytes;
        }

        /** A general-pool chunk, marked through its arena; its free pages counted in the arena's room. */
        static Victim general(Chunk chunk, long usedBytes, long freePageBytes, Destination destination, long maxUsedBytes,
                              boolean emptyToo) {
            return new Victim(Kind.GENERAL, chunk, usedBytes, freePageBytes, destination, null, chunk.arena, maxUsedBytes,
                    emptyToo);
        }

        /** A sequential allocator's pinned chunk: it takes no slice again, so none of its room counted. */
        static Victim pinnedSlab(Compaction.Evacuable slab, Chunk chunk, long liveBytes, Destination destination,
                                 Category category) {
            return new Victim(Kind.PINNED_SLAB, chunk, liveBytes, 0, destination, category, slab, Long.MAX_VALUE, false);
        }

        /** A block cut into sub-blocks: its free sub-blocks counted in its stripe's room. */
        static Victim block(Compaction.Evacuable region, Chunk block, long usedBytes, Destination destination,
                            Category category) {
            return new Victim(Kind.BLOCK, block, usedBytes, block.chunkSize() - usedBytes, destination, category, region,
                    Long.MAX_VALUE, false);
        }

        /** The bytes it frees when it empties. */
        long size() {
            return chunk.chunkSize();
        }
    }

    /**
     * Reads, per small size class, the bytes of a chunk's subpage elements
     * taken and free, added to the arrays; false when it has no subpage (see
     * {@link Arena#elementBytesByClass}).
     */
    interface ElementBytes {
        boolean read(Chunk chunk, long[] taken, long[] free);
    }

    private final Arena[] arenas;
    private final Collection<SequentialAllocator> sequentialAllocators;
    private final Collection<BlockPool> blockPools;
    /** The ceiling: the new memory moves may take. */
    private final MemoryLimit limit;
    /** Where chunks come from: their region groups. */
    private final CommittedMemory committed;
    /** Whether chunks are carved from region groups: a group goes back only when all of it empties. */
    private final boolean grouped;
    private final int chunkSize;
    /** Arena chunks evacuated in vain: their used bytes then, and the compaction's number. */
    private final Map<Chunk, long[]> fruitless = new WeakHashMap<>();
    /** Compactions that marked anything: the clock of {@link #fruitless}. */
    private long compactions;

    CompactionChoice(Arena[] arenas, Collection<SequentialAllocator> sequentialAllocators, Collection<BlockPool> blockPools,
                     MemoryLimit limit, CommittedMemory committed, int chunkSize) {
        this.arenas = arenas;
        this.sequentialAllocators = sequentialAllocators;
        this.blockPools = blockPools;
        this.limit = limit;
        this.committed = committed;
        this.grouped = committed.grouped();
        this.chunkSize = chunkSize;
    }

    /** The pool's chunk size. */
    int chunkSize() {
        return chunkSize;
    }

    /**
     * The chunks to empty: the least used first, while their bytes in use fit
     * the budget and their entries find room.
     *
     * @param relocatable  the categories with a relocator: only their sequential chunks and blocks are listed
     * @param generalChunks whether arena chunks are listed: only while a relocatable category has memory in the
     *                      general pool, else marking them would only make other categories' traffic pay
     */
    List<Victim> choose(double maxOccupancy, long maxBytesToMove, Set<Category> relocatable, boolean generalChunks) {
        List<Victim> candidates = new ArrayList<>();
        if (generalChunks) {
            listArenaChunks(maxOccupancy, candidates);
        }
        long maxUsedInChunk = (long) (maxOccupancy * chunkSize);
        for (SequentialAllocator sequential : sequentialAllocators) {
            if (relocatable.contains(sequential.category())) {
                // a chunk the moves open is the stripe's open chunk from then on, for the records that follow:
                // one is no loss, and a sequential chunk emptied into it is not chosen again (it is not pinned)
                sequential.sparsePinnedChunks(maxUsedInChunk,
                        new Destination(chunkSize, sequential.roomForMoves() + chunkSize), candidates);
            }
        }
        for (BlockPool blocks : blockPools) {
            if (relocatable.contains(blocks.category())) {
                blocks.sparseBlocks((long) (maxOccupancy * blocks.blockSize()), candidates);
            }
        }
        long headroom = limit.max == Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, limit.max - limit.committed());
        return pick(candidates, maxBytesToMove, headroom, ARENA_ELEMENTS);
    }

    /** Adds the arena chunks a compaction may empty: sparse ones, and with region groups whole groups. */
    private void listArenaChunks(double maxOccupancy, List<Victim> candidates) {
        Map<RegionGroups.Group, List<Victim>> byGroup = new HashMap<>();
        // with region groups every chunk (but those lent whole to a sequential allocator), idle ones
        // included: an idle chunk kept for reuse would keep its group from emptying
        double occupancyConsidered = grouped ? 1 : maxOccupancy;
        for (Arena arena : arenas) {
            List<Chunk> chunks = new ArrayList<>();
            // each arena a destination of its own: a move lands in the arena it leaves (Compaction.allocateForMove),
            // so only that arena's free room can take it
            Destination sameArena = new Destination(chunkSize, arena.sparseChunks(occupancyConsidered, grouped, chunks));
            sameArena.classFree = arena.freeElementBytes();
            for (Chunk chunk : chunks) { // an arena's first chunks are smaller than the rest
                long used = arena.usedBytes(chunk);
                Victim victim = Victim.general(chunk, used, arena.freePageBytes(chunk), sameArena,
                        (long) (occupancyConsidered * chunk.chunkSize()), grouped);
                if (used <= maxOccupancy * chunk.chunkSize() && !fruitless(chunk, used)) {
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

    /**
     * With region groups, a group goes back only when every region in it is
     * free, so emptying its sparse chunks alone gives nothing back while it
     * also holds dense ones. A group whose regions are all general-pool
     * chunks holding together at most {@code maxOccupancy} of it is emptied
     * as a whole, its dense chunks too: they become candidates, and every
     * chunk of it is chosen by the group's bytes in use.
     */
    private void chooseWholeGroups(Map<RegionGroups.Group, List<Victim>> byGroup, double maxOccupancy,
                                   List<Victim> candidates) {
        for (Map.Entry<RegionGroups.Group, List<Victim>> entry : byGroup.entrySet()) {
            List<Victim> members = entry.getValue();
            long used = 0;
            long units = 0;
            boolean fruitlessMember = false;
            for (Victim member : members) {
                used += member.usedBytes;
                units += RegionGroups.unitsFor(member.chunk.chunkSize());
                fruitlessMember |= fruitless(member.chunk, member.usedBytes);
            }
            boolean whole = units == committed.carvedUnits(entry.getKey());
            if (!whole || fruitlessMember || used > maxOccupancy * RegionGroups.GROUP_SIZE) {
                continue;
            }
            for (Victim member : members) {
                if (member.sortKey < 0) {
                    candidates.add(member); // a dense chunk, chosen with its group
                }
                member.sortKey = used;
                member.group = entry.getKey();
            }
        }
    }

    /**
     * Picks from {@code candidates} (sorting them): the least first (a group's
     * chunks side by side, so that a budget takes them together), while their
     * bytes in use fit {@code maxBytesToMove}, each only if what it moves
     * fits its destination's free room or new memory within
     * {@code headroom}; then drops the victims of a destination that gains
     * no unit. Fills the destinations.
     *
     * @param elements where the element bytes by class of a general-pool victim are read, when it is reached
     */
    static List<Victim> pick(List<Victim> candidates, long maxBytesToMove, long headroom, ElementBytes elements) {
        candidates.sort(Comparator.<Victim>comparingLong(v -> v.sortKey)
                .thenComparingInt(v -> v.group == null ? 0 : System.identityHashCode(v.group)));
        // what moves must land somewhere else: in free room outside the victims, or in new memory under the ceiling
        List<Victim> chosen = new ArrayList<>();
        long bytes = 0;
        long newMemory = 0;
        for (Victim victim : candidates) {
            if (bytes + victim.usedBytes > maxBytesToMove) {
                break;
            }
            Destination to = victim.destination;
            long free = to.free - victim.reusableFree;
            long[] classFree = to.classFree == null ? null : to.classFree.clone();
            long moved = to.moved + pageDemand(victim, classFree, elements);
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
     * The bytes of a victim's entries that need free pages (or new memory) at
     * its destination, given the room per size class {@code classFree} there,
     * which it updates: for a general-pool chunk, entries of a small class
     * first take that class's free elements outside the victims, its subpages
     * read only now (a walk of its pages: for the candidates a choice reaches
     * within its budget, not for every sparse chunk). All of its bytes where
     * there is no such room.
     */
    private static long pageDemand(Victim victim, long[] classFree, ElementBytes elements) {
        if (classFree == null || victim.kind != Victim.Kind.GENERAL) {
            return victim.usedBytes;
        }
        long[] taken = new long[classFree.length];
        long[] free = new long[classFree.length];
        if (!elements.read(victim.chunk, taken, free)) {
            return victim.usedBytes; // no subpage: all of it is runs, which take free pages
        }
        long demand = victim.usedBytes;
        for (int c = 0; c < taken.length; c++) {
            classFree[c] -= free[c]; // its own free elements take no move
            long fits = Math.min(Math.max(0, classFree[c]), taken[c]);
            classFree[c] -= fits;
            demand -= fits;
        }
        return demand;
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

    /** Counts a compaction that marked victims. */
    void marked() {
        compactions++;
    }

    /**
     * Learns from a victim that did not empty in a compaction whose owners
     * looked at every entry and refused none: a general-pool chunk that kept
     * exactly its bytes holds nothing that can move, and is left alone for a
     * while (see {@link #fruitless(Chunk, long)}).
     */
    void learn(Victim victim) {
        if (victim.kind == Victim.Kind.GENERAL && victim.chunk.arena.usedBytes(victim.chunk) == victim.usedBytes) {
            fruitless.put(victim.chunk, new long[] {victim.usedBytes, compactions});
        }
    }
}
