package io.slabwise;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The general pool's dedicated regions: a request above the pool's
 * dedicated threshold (every huge request, larger than a chunk, and by
 * default every request above an eighth of a chunk) gets a region of its
 * own, whole pages of its size, instead of a run carved from a chunk. A run
 * of half a chunk or more leaves a hole in its chunk that only a smaller
 * request can use, and its chunk goes back only when every run in it has; a
 * region of its own goes back the moment its buffer is released.
 *
 * <pre>
 *  take(pages) ── the thread's slot (ThreadCache) ──▶ the recent cell ──▶ the idle list ──▶ commit(pages)
 *                  no lock, no count               one CAS              lock, smallest fit
 *
 *  giveBack ── closed, or larger than maxIdleBytes? ──yes──▶ decommit
 *                     │no
 *                     ▼
 *              the recent cell, if empty ──else──▶ the idle list, newest last; the oldest go back past maxIdleBytes
 * </pre>
 *
 * Released regions stay idle so that buffers of large sizes released and
 * allocated in turn do not map and unmap a region each time: one in each
 * platform thread's slot (up to 1 MiB, see {@link ThreadCache#takeDedicated};
 * up to four, kept filled, in the cache an arena's virtual threads share),
 * one in the recent cell, taken and filled by a single compare-and-set, and
 * up to {@code maxIdleBytes} (a chunk's worth) in the idle list. An idle
 * region serves a request of its pages or up to an eighth fewer (the bound of
 * size-class rounding), so a reused region reserves at most 12.5% more than a
 * new one would ({@link MemoryPool#reservedSizeFor}). A region keeps its
 * chunk object while idle, so reuse makes no garbage.
 *
 * <h2>Counts</h2>
 * {@link CommittedMemory#hugeBytes} and {@code hugeCount} count the regions
 * that are live, in a thread's slot or in the recent cell: a region moves
 * between a buffer, a slot and the cell without an atomic count. The
 * statistics subtract what the slots and the cell hold
 * ({@link #parkedBytes()}); a region is uncounted when it enters the idle
 * list or goes back to the chunk source.
 *
 * <h2>Giving back</h2>
 * Idle regions are committed memory: they go back on {@code trim()}, before a
 * refusal at the ceiling and when the pool closes, and decay like idle chunks
 * ({@link IdleMemory}). A listed region's idle time is taken when it is
 * listed; the recent cell's is counted from the first decay that finds the
 * same region there, so a region cycled through the cell without pause may go
 * back once a decay period and be mapped again.
 *
 * <p>Any thread: the idle list is guarded by this object's lock, held only to
 * pick or add a region; regions are committed and given back outside it.
 */
final class DedicatedRegions {

    private final CommittedMemory committed;
    private final Ticker ticker;
    private final long maxIdleBytes;
    /** The most recently released region, when its place was free; counted as live. */
    private final AtomicReference<Chunk> recent = new AtomicReference<>();
    /** Idle regions, oldest first, each with {@link Chunk#idleSince}; guarded by {@code this}. */
    private final ArrayDeque<Chunk> idle = new ArrayDeque<>();
    /** Bytes of {@link #idle}; guarded by {@code this}, read without the lock by statistics. */
    private volatile long idleBytes;
    /** Set by {@link #close()}; guarded by {@code this}, read without it as a hint. */
    private volatile boolean closed;
    /** The region the last decay found in the recent cell, and when it first found it; guarded by {@code this}. */
    private Chunk recentSeen;
    private long recentSeenAt;

    DedicatedRegions(CommittedMemory committed, Ticker ticker, long maxIdleBytes) {
        this.committed = committed;
        this.ticker = ticker;
        this.maxIdleBytes = maxIdleBytes;
    }

    /**
     * Whether a region of {@code regionSize} bytes may serve a request of
     * {@code pages} bytes (whole pages): at least as large, and larger by at
     * most an eighth.
     */
    static boolean fits(int regionSize, int pages) {
        return regionSize >= pages && regionSize - pages <= pages >>> 3;
    }

    /**
     * A region for a request of {@code pages} bytes, counted as live:
     * {@code slotted} (what the caller's own slot gave, or null), the recent
     * cell's or an idle one, the first that fits and for whose pages beyond
     * {@code pages} {@code category}'s quota has room (the caller has admitted
     * {@code pages}); else a new one.
     *
     * @throws CeilingReached when a new region would pass the ceiling
     */
    Chunk take(Category category, int pages, Arena arena, Chunk slotted) {
        if (slotted != null) {
            if (admitsRest(category, slotted, pages)) {
                return slotted;
            }
            giveBack(slotted);
        }
        Chunk chunk = recent.get();
        if (chunk != null && fits(chunk.chunkSize(), pages) && recent.compareAndSet(chunk, null)) {
            if (admitsRest(category, chunk, pages)) {
                return chunk;
            }
            giveBack(chunk);
        }
        chunk = takeListed(pages);
        if (chunk != null) {
            count(chunk, 1);
            if (admitsRest(category, chunk, pages)) {
                return chunk;
            }
            giveBack(chunk);
        }
        chunk = new Chunk(arena, committed.commit(pages, CommittedMemory.RegionKind.HUGE));
        count(chunk, 1);
        return chunk;
    }

    private static boolean admitsRest(Category category, Chunk chunk, int pages) {
        return chunk.chunkSize() == pages || category.admit(chunk.chunkSize() - pages);
    }

    private void count(Chunk chunk, int sign) {
        committed.hugeBytes.addAndGet((long) sign * chunk.chunkSize());
        committed.hugeCount.addAndGet(sign);
    }

    /** The listed region that fits {@code pages} most closely (the newest of equals); null when none does. */
    private Chunk takeListed(int pages) {
        if (idleBytes == 0) {
            return null; // no lock while the list is empty
        }
        synchronized (this) {
            Chunk best = null;
            for (Iterator<Chunk> it = idle.descendingIterator(); it.hasNext(); ) {
                Chunk candidate = it.next();
                int size = candidate.chunkSize();
                if (fits(size, pages) && (best == null || size < best.chunkSize())) {
                    best = candidate;
                }
            }
            if (best != null) {
                idle.removeFirstOccurrence(best);
                idleBytes -= best.chunkSize();
            }
            return best;
        }
    }

    /**
     * Takes back a counted region (released by its buffer, or leaving a
     * thread's slot): into the recent cell when it is free, else into the
     * idle list, the oldest listed regions going back to the chunk source past
     * {@code maxIdleBytes}; straight back once the pool is closed, or when it
     * is larger than that bound.
     */
    void giveBack(Chunk chunk) {
        if (!closed && chunk.chunkSize() <= maxIdleBytes && recent.compareAndSet(null, chunk)) {
            if (closed) {
                release(0); // closed meanwhile: close() may have emptied the cell before this region came
            }
            return;
        }
        count(chunk, -1);
        List<Chunk> evicted;
        synchronized (this) {
            evicted = closed || chunk.chunkSize() > maxIdleBytes ? List.of(chunk) : list(chunk);
        }
        if (evicted != null) {
            decommitAll(evicted);
        }
    }

    /**
     * Gives back regions that have left the idle list and the counts, every
     * one of them even when the chunk source throws an {@link Error} for one
     * (which {@link CommittedMemory#decommit} passes on): nothing else holds
     * them, so one not given back here would stay committed for good. The
     * first such Error is thrown once all have gone back.
     */
    private void decommitAll(List<Chunk> regions) {
        Throwable failure = null;
        for (Chunk chunk : regions) {
            try {
                committed.decommit(chunk.region);
            } catch (RuntimeException | Error e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure instanceof Error error) {
            throw error;
        }
        if (failure != null) {
            throw (RuntimeException) failure;
        }
    }

    /** Lists an idle region, newest last; returns the oldest ones past the bound, to give back outside the lock. */
    private List<Chunk> list(Chunk chunk) {
        chunk.idleSince = ticker.read();
        idle.addLast(chunk);
        long bytes = idleBytes + chunk.chunkSize();
        List<Chunk> evicted = null;
        while (bytes > maxIdleBytes) {
            Chunk oldest = idle.removeFirst();
            bytes -= oldest.chunkSize();
            if (evicted == null) {
                evicted = new ArrayList<>(2);
            }
            evicted.add(oldest);
        }
        idleBytes = bytes;
        return evicted;
    }

    /** From now on every region given back goes straight to the chunk source, and what is idle goes now. */
    void close() {
        synchronized (this) {
            closed = true;
        }
        release(0);
    }

    /**
     * Gives back the listed regions idle for at least {@code idleNanos}, and
     * the recent cell's region once decays found it there for that long (0:
     * everything idle, now).
     *
     * @return how many regions and bytes went back, as {@code {regions, bytes}}
     */
    long[] release(long idleNanos) {
        List<Chunk> released = new ArrayList<>();
        synchronized (this) {
            long now = ticker.read();
            Chunk cell = recent.get();
            if (cell != recentSeen) {
                recentSeen = cell;
                recentSeenAt = now;
            }
            if (cell != null && (idleNanos == 0 || now - recentSeenAt >= idleNanos) && recent.compareAndSet(cell, null)) {
                count(cell, -1);
                released.add(cell);
                recentSeen = null;
            }
            long bytes = idleBytes;
            for (Iterator<Chunk> it = idle.iterator(); it.hasNext(); ) {
                Chunk candidate = it.next();
                if (idleNanos == 0 || now - candidate.idleSince >= idleNanos) {
                    it.remove();
                    bytes -= candidate.chunkSize();
                    released.add(candidate);
                }
            }
            idleBytes = bytes;
        }
        long bytes = 0;
        for (Chunk chunk : released) {
            bytes += chunk.chunkSize();
        }
        decommitAll(released);
        return new long[] {released.size(), bytes};
    }

    /** Bytes of the listed idle regions now. */
    long idleBytes() {
        return idleBytes;
    }

    /** Bytes of the region in the recent cell, counted as live by the pool's counters; 0 when it is empty. */
    long parkedBytes() {
        Chunk cell = recent.get();
        return cell == null ? 0 : cell.chunkSize();
    }
}
