package io.slabwise.examples.broker;

import io.slabwise.netty.BufferEvacuation;
import io.slabwise.netty.BufferRelocator;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The relocator of one category whose buffers belong to one or more caches:
 * the partitions of a broker share one {@code log_cache} category, and the
 * allocator takes one {@link BufferRelocator} per category. A cache made with
 * a {@code CacheRelocator} joins it and leaves it when closed; the relocator
 * is registered on the allocator while at least one cache has joined, and a
 * compaction hands its evacuation to each of them in turn.
 *
 * <pre>
 *  allocator.compact()
 *     └─ category "log_cache" ─▶ CacheRelocator ─▶ partition 0 ─▶ partition 1 ─▶ ...   (each: tryLock, move, swap, release)
 * </pre>
 *
 * <p>Make one per category of an allocator: a second one for the same
 * category would replace the first's registration. A cache that is busy when
 * the compaction reaches it (its lock held by another thread, or by the
 * compacting thread itself, which happens when an allocation inside the cache
 * compacts at the pool's ceiling) keeps its entries where they are until the
 * next compaction: the relocator never waits.
 *
 * <p>Thread-safe: the caches joined are a copy-on-write list, so a compaction
 * walks them without a lock while caches open and close.
 */
public final class CacheRelocator {

    /** A cache's side: moves the entries it holds that the evacuation contains, never waiting for its lock. */
    @FunctionalInterface
    interface Owner {
        void relocate(BufferEvacuation evacuation);
    }

    private final SlabwiseAllocator allocator;
    private final String category;
    private final List<Owner> owners = new CopyOnWriteArrayList<>();
    private final BufferRelocator relocator = this::relocate;

    /** The relocator of {@code category} on {@code allocator}; registered once a cache joins it. */
    public CacheRelocator(SlabwiseAllocator allocator, String category) {
        this.allocator = allocator;
        this.category = category;
    }

    /** The category whose caches it moves. */
    public String category() {
        return category;
    }

    /** How many open caches have joined it. */
    public int caches() {
        return owners.size();
    }

    /**
     * Adds a cache of {@code cacheCategory}; the first one registers the relocator.
     *
     * @throws IllegalArgumentException when the cache's buffers are of another category
     */
    synchronized void join(Owner owner, String cacheCategory) {
        if (!category.equals(cacheCategory)) {
            throw new IllegalArgumentException("a cache of '" + cacheCategory + "' cannot join the relocator of '"
                    + category + "'");
        }
        if (owners.isEmpty()) {
            allocator.setRelocator(category, relocator);
        }
        owners.add(owner);
    }

    /** Removes a cache; the last one to leave unregisters the relocator. Leaving twice does nothing. */
    synchronized void leave(Owner owner) {
        if (owners.remove(owner) && owners.isEmpty()) {
            allocator.setRelocator(category, null);
        }
    }

    private void relocate(BufferEvacuation evacuation) {
        for (Owner owner : owners) {
            if (!evacuation.budgetLeft()) {
                return;
            }
            owner.relocate(evacuation);
        }
    }
}
