package io.slabwise;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

import io.slabwise.CompactionChoice.Victim;

/**
 * Compaction: empties sparsely used chunks by having their owners move what
 * lives in them, so that the chunks go back to the operating system. The
 * pool's part that runs a compaction: it keeps the relocators, asks its
 * {@link CompactionChoice} what to empty, marks that, calls the relocators,
 * ends the marks and reports; the moving is the owners' ({@link Relocator}).
 *
 * <pre>
 *  choose   the victims: sparse chunks of the categories that have a relocator, least used first, up to the byte
 *           budget, each with room for its entries (CompactionChoice): arena chunks (mixed categories: only
 *           relocatable entries move), pinned sequential chunks, blocks cut into sub-blocks
 *  mark     chunk.evacuating = true, through each victim's source (Evacuable): no new placement there; memory
 *           freed there skips the thread caches
 *  flush    thread caches (this thread's now, others at their next operation): cached slots leave the chunks
 *  relocate each relocator, once, with an Evacuation of its category: owners copy, swap, free;
 *           a copy lands in the arena (block pool stripe) it leaves, where the choice counted room for it
 *  end      unmark; chunks that emptied go back at once; the choice learns which kept all they held;
 *           count what was moved and freed
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

    /**
     * What holds a victim and marks it for a compaction: an arena for its
     * general-pool chunks, a sequential allocator's record of a pinned chunk,
     * a block pool's record of a cut block. Owned here, where it is called.
     */
    interface Evacuable {
        /** Marks the victim; false when there is nothing to move in it now (it emptied, filled or changed hands). */
        boolean startEvacuation(Victim victim);

        /** Unmarks it; true when it emptied and went back (or became reusable idle memory of its allocator). */
        boolean endEvacuation(Victim victim);
    }

    /** Chooses what to empty, and remembers what was emptied in vain. */
    private final CompactionChoice choice;
    private final ThreadCaches threadCaches;
    /** Where moves take new memory, in the arena they leave, and give back what they could not use. */
    private final GeneralPool general;
    /** The counters, for which relocatable categories hold general-pool memory. */
    private final Statistics statistics;
    /** The ceiling: the reserve kept for compactions' moves, and what a compaction gave back. */
    private final MemoryLimit limit;
    private final int chunkSize;
    /** The clock of the time a compaction took. */
    private final Ticker ticker;
    private final Map<Category, Relocator> relocators = new ConcurrentHashMap<>();
    private final ReentrantLock running = new ReentrantLock();
    /** The relocatable categories with memory in the general pool when the last choice was made; under {@link #running}. */
    private Set<Category> generalCategories = Set.of();
    /**
     * Victims of the last compaction left marked because readers still held
     * moved entries' old memory in them: they go back when that comes back,
     * and the next compaction ends them first, or the removal of the last
     * relocator. Under {@link #running}.
     */
    private final List<Victim> draining = new ArrayList<>();
    private final AtomicReference<CompactionStats> totals = new AtomicReference<>(CompactionStats.NONE);

    Compaction(CompactionChoice choice, ThreadCaches threadCaches, GeneralPool general, Statistics statistics,
               MemoryLimit limit, Ticker ticker) {
        this.choice = choice;
        this.threadCaches = threadCaches;
        this.general = general;
        this.statistics = statistics;
        this.limit = limit;
        this.chunkSize = choice.chunkSize();
        this.ticker = ticker;
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
            victim.source.endEvacuation(victim);
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
        generalCategories = relocatableInGeneralPool();
        List<Victim> started = new ArrayList<>();
        for (Victim victim : choice.choose(maxOccupancy, maxBytesToMove, relocators.keySet(), !generalCategories.isEmpty())) {
            if (victim.source.startEvacuation(victim)) {
                started.add(victim);
            }
        }
        if (started.isEmpty()) {
            return new CompactionStats(1, 0, 0, 0, 0, 0, 0, 0, ticker.read() - start);
        }
        choice.marked();
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
                Evacuation evacuation = new Evacuation(general, owner.getKey(), maxBytesToMove - moved,
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
     * With {@code learn}, the choice learns from the victims that did not empty
     * (see {@link CompactionChoice#learn}).
     */
    private long[] end(List<Victim> started, boolean learn) {
        long[] emptied = new long[2];
        for (Victim victim : started) {
            if (victim.source.endEvacuation(victim)) {
                emptied[0]++;
                emptied[1] += victim.size();
            } else if (learn) {
                choice.learn(victim);
            }
        }
        return emptied;
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
}
