package io.slabwise;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedList;
import java.util.List;

/**
 * The general pool's dedicated regions: a request above the pool's
 * dedicated threshold (every huge request, larger than a chunk, and by
 * default every request above an eighth of a chunk) gets a region of its
 * own, whole pages of exactly its size, instead of a run carved from a chunk.
 * A run of half a chunk or more leaves a hole in its chunk that only a
 * smaller request can use, and its chunk goes back only when every run in it
 * has; a region of its own goes back the moment its buffer is released.
 *
 * <pre>
 *  take(pages) ── an idle region of pages .. pages + pages/8? ──yes──▶ the smallest (the newest of equals)
 *                          │no
 *                          ▼
 *                 committed.commit(pages, HUGE)
 *
 *  giveBack(region) ── pool open? ──yes──▶ idle, newest last; the oldest go back past maxIdleBytes
 *                          │no
 *                          ▼
 *                 committed.decommit(region)
 * </pre>
 *
 * Released regions stay idle, up to {@code maxIdleBytes} in all (a chunk's
 * worth), so that buffers of large sizes released and allocated in turn do
 * not map and unmap a region each time. An idle region serves a request of
 * its pages or up to an eighth fewer (the bound of size-class rounding), so a
 * reused region reserves at most 12.5% more than a new one would
 * ({@link MemoryPool#reservedSizeFor}). Idle regions are committed memory: they decay, go back on
 * {@code trim()}, before a refusal at the ceiling, and when the pool closes,
 * like idle chunks ({@link IdleMemory}).
 *
 * <p>Before this list, a platform thread keeps one released region of up to
 * 1 MiB (and a chunk) it allocated itself in its cache's slot ({@link ThreadCache#takeDedicated}),
 * with its chunk object, so that a thread cycling large buffers takes no lock
 * and makes no garbage; the slot goes to this list when the thread's cache
 * is flushed (a trim, close, the thread's death) or at a sweep that found it
 * unused.
 *
 * <p>Any thread: the idle list is guarded by this object's lock, held only
 * to pick or add a region; regions are committed and given back outside it.
 */
final class DedicatedRegions {

    private final CommittedMemory committed;
    private final Ticker ticker;
    private final long maxIdleBytes;
    /** Idle regions, oldest first; guarded by {@code this}. */
    private final LinkedList<Idle> idle = new LinkedList<>();
    /** Bytes of {@link #idle}; guarded by {@code this}, read without the lock by statistics. */
    private volatile long idleBytes;
    /** Set by {@link #close()}; guarded by {@code this}. */
    private boolean closed;

    /** An idle region and when it was given back, in ticker nanoseconds. */
    private record Idle(NativeRegion region, long since) {
    }

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
     * The idle region that fits a request of {@code pages} bytes most
     * closely (the most recently given back of equals), taken off the idle
     * list; null when none fits.
     */
    NativeRegion takeIdle(int pages) {
        if (idleBytes == 0) {
            return null; // the common case past a burst: no lock
        }
        synchronized (this) {
            Idle best = null;
            for (Iterator<Idle> it = idle.descendingIterator(); it.hasNext(); ) {
                Idle candidate = it.next();
                int size = candidate.region.size();
                if (fits(size, pages) && (best == null || size < best.region.size())) {
                    best = candidate;
                }
            }
            if (best == null) {
                return null;
            }
            idle.remove(best);
            idleBytes -= best.region.size();
            return best.region;
        }
    }

    /**
     * Takes back a region that leaves a thread's slot: it stops being counted
     * among the pool's dedicated regions (a slot's region is, see
     * {@link CommittedMemory#hugeBytes}) and is given back.
     */
    void leaveSlot(NativeRegion region) {
        committed.hugeBytes.addAndGet(-region.size());
        committed.hugeCount.decrementAndGet();
        giveBack(region);
    }

    /** Puts back a region {@link #takeIdle} gave that the caller could not use (a quota had no room for it). */
    void putBack(NativeRegion region) {
        giveBack(region);
    }

    /**
     * Takes a released region back: idle for reuse while the pool is open
     * and the region is no larger than {@code maxIdleBytes}, the oldest idle
     * regions going back to the chunk source past that bound; straight back
     * otherwise.
     */
    void giveBack(NativeRegion region) {
        List<NativeRegion> evicted;
        synchronized (this) {
            if (closed || region.size() > maxIdleBytes) {
                evicted = List.of(region);
            } else {
                evicted = keep(region);
            }
        }
        if (evicted != null) {
            evicted.forEach(committed::decommit);
        }
    }

    /** Adds an idle region, newest last; returns the oldest ones past the bound, to give back outside the lock. */
    private List<NativeRegion> keep(NativeRegion region) {
        List<NativeRegion> evicted = null;
        idle.addLast(new Idle(region, ticker.read()));
        long bytes = idleBytes + region.size();
        while (bytes > maxIdleBytes) {
            Idle oldest = idle.removeFirst();
            bytes -= oldest.region.size();
            if (evicted == null) {
                evicted = new ArrayList<>(2);
            }
            evicted.add(oldest.region);
        }
        idleBytes = bytes;
        return evicted;
    }

    /** From now on every region given back goes straight to the chunk source, and none is taken from the idle list. */
    void close() {
        synchronized (this) {
            closed = true;
        }
        release(0);
    }

    /**
     * Gives back the regions idle for at least {@code idleNanos} (0: all).
     *
     * @return how many regions and bytes went back, as {@code {regions, bytes}}
     */
    long[] release(long idleNanos) {
        List<NativeRegion> released = new ArrayList<>();
        synchronized (this) {
            long now = ticker.read();
            Iterator<Idle> it = idle.iterator();
            long bytes = idleBytes;
            while (it.hasNext()) {
                Idle candidate = it.next();
                if (idleNanos == 0 || now - candidate.since >= idleNanos) {
                    it.remove();
                    bytes -= candidate.region.size();
                    released.add(candidate.region);
                }
            }
            idleBytes = bytes;
        }
        long bytes = 0;
        for (NativeRegion region : released) {
            bytes += region.size();
            committed.decommit(region);
        }
        return new long[] {released.size(), bytes};
    }

    /** Bytes of the idle regions now. */
    long idleBytes() {
        return idleBytes;
    }

    /** The idle regions now. */
    synchronized int idleCount() {
        return idle.size();
    }
}
