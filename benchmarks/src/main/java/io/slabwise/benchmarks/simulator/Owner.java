package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.BufferEvacuation;

import java.util.Collection;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The owner's side of relocation in a workload that holds long-lived buffers
 * (the phase survivors, the log cache, the block cache): a lock over its own
 * structure, its relocator, and when it compacts.
 *
 * <pre>
 *  owner's thread                           any thread's compaction (an owner's, the pool's scheduler,
 *                                           an allocation at the ceiling)
 *  allocate, write        (no lock)         relocator: tryLock; busy, or held by this thread: return at once
 *  lock ─ add / remove / read an entry      walk the entries: contains? move, swap the reference,
 *  unlock                                     release the old buffer
 *  release the removed buffer (no lock)     unlock
 *  released(bytes): a step released and
 *    the pool fragmented? compact()  (no lock held)
 * </pre>
 *
 * A buffer is in the owner's structure only after it was written, and leaves
 * it before it is released, so a relocator never sees a buffer being written
 * or released; the owner reads a buffer's fields only under the lock, after
 * any move. Since a compaction calls every relocator of the pool on the
 * thread that asked for it, the owners of the mix move each other's entries:
 * hence the lock, rather than compacting only from the owner's own thread.
 *
 * <p>On an allocator that cannot move buffers, or outside a {@code -moving}
 * run, the lock is all there is: nothing registers and nothing compacts.
 */
final class Owner {

    private final ReentrantLock lock = new ReentrantLock();
    private final BufferSource source;
    private final Relocation relocation;
    private final Compacting compacting;
    private final long step;
    /** The category of the owner's buffers, set once at registration. */
    private volatile String category;
    private boolean registered;
    private long releasedSinceCompaction;
    /** Entries the current walk found in chunks being emptied; guarded by the lock. */
    private long contained;

    private Owner(BufferSource source, Relocation relocation, Compacting compacting, long step) {
        this.source = source;
        this.relocation = relocation;
        this.compacting = compacting;
        this.step = step;
    }

    /**
     * The owner of a workload's buffers on {@code source}, which compacts by
     * itself (when the run's owners do) as it releases them.
     *
     * @param compacting how the run compacts; null for a workload that does not move its buffers
     * @param bound      what the owner holds at most: it looks after releasing {@link Compacting#STEP_FRACTION} of it
     */
    static Owner compacting(BufferSource source, Compacting compacting, long bound) {
        Optional<Relocation> relocation = compacting == null ? Optional.empty() : source.relocation();
        return new Owner(source, relocation.orElse(null), compacting,
                Math.max(1, (long) (bound * Compacting.STEP_FRACTION)));
    }

    /**
     * Registers the relocator of {@code category}: under the lock, unless busy,
     * {@code walk} moves the contained entries (with {@link #moved}).
     */
    void register(String category, Consumer<BufferEvacuation> walk) {
        if (relocation == null) {
            return;
        }
        this.category = category;
        registered = true;
        relocation.setRelocator(category, evacuation -> {
            if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
                compacting.countBusy(); // never wait: this may run inside the owner's own allocation
                return;
            }
            long start = System.nanoTime();
            contained = 0;
            try {
                walk.accept(evacuation);
            } finally {
                boolean fruitless = contained == 0;
                lock.unlock();
                compacting.countWalk(category, System.nanoTime() - start, fruitless);
            }
        });
    }

    /**
     * Removes the relocator, once the owner holds nothing. A compaction under
     * way may still call it, and finds nothing to move.
     */
    void unregister() {
        if (category != null && registered) {
            relocation.setRelocator(category, null);
            registered = false;
        }
    }

    /**
     * At the end of a run: releases every buffer of {@code entries} under the
     * lock, takes their bytes off {@code live}, empties {@code entries}, and
     * removes the relocator.
     */
    void releaseAllAndUnregister(Collection<ByteBuf> entries, AtomicLong live) {
        lock.lock();
        try {
            for (ByteBuf buf : entries) {
                live.addAndGet(-buf.capacity());
                buf.release();
            }
            entries.clear();
        } finally {
            lock.unlock();
        }
        unregister();
    }

    void lock() {
        lock.lock();
    }

    void unlock() {
        lock.unlock();
    }

    /**
     * Counts bytes the owner released; once it has released a step since it
     * last looked, it {@linkplain #compactNow() compacts if the pool is
     * fragmented}. Call without the lock.
     */
    void released(long bytes) {
        releasedSinceCompaction += bytes;
        if (releasedSinceCompaction >= step) {
            compactNow();
        }
    }

    /**
     * At a point the owner chose (a step released, a phase over): compacts if
     * the owners compact by themselves and the pool's committed bytes exceed
     * its reserved bytes by more than {@link Compacting#compactAbove()}: the
     * pool's own counters, which any user can read.
     */
    void compactNow() {
        releasedSinceCompaction = 0;
        if (relocation != null && compacting.byOwners()
                && source.committedBytes() > compacting.compactAbove() * source.reservedBytes()) {
            compacting.countOwnerCompaction();
            relocation.compact(compacting.maxOccupancy(), Long.MAX_VALUE);
        }
    }

    /**
     * For a relocator's walk: leaves {@code buffer} where it is, counting it
     * as refused if it lies in a chunk being emptied (the owner chose to keep
     * it there: it is about to be evicted, or too costly to copy).
     */
    void keep(BufferEvacuation evacuation, ByteBuf buffer) {
        if (evacuation.contains(buffer)) {
            contained++;
            evacuation.refused();
        }
    }

    /**
     * For a relocator's walk: {@code buffer}, or the copy it moved to when it
     * lies in a chunk being emptied and could move (then the old one is
     * released). Call with the lock held, while the budget lasts.
     */
    ByteBuf moved(BufferEvacuation evacuation, ByteBuf buffer) {
        if (!evacuation.contains(buffer)) {
            return buffer;
        }
        contained++;
        ByteBuf copy = evacuation.move(buffer);
        if (copy == null) {
            return buffer;
        }
        compacting.countMove(category, buffer.capacity());
        buffer.release();
        return copy;
    }
}
