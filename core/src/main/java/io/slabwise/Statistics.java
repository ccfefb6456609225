package io.slabwise;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The pool's figures: the counters of every thread, the statistics snapshot
 * and the operator's report. A snapshot never makes an allocating or
 * releasing thread wait (see {@link ThreadCounters}); its cost grows with the
 * threads and categories, never with the chunks, but for the per-chunk views
 * an operator asks for ({@link #chunkUsePercent()}, {@link #report()}).
 * Any thread.
 */
final class Statistics {

    private final ThreadCaches threadCaches;
    private final Categories categories;
    private final CommittedMemory committed;
    private final DedicatedRegions dedicated;
    private final Arena[] arenas;
    private final Pressure pressure;
    private final int chunkSize;

    Statistics(ThreadCaches threadCaches, Categories categories, CommittedMemory committed, DedicatedRegions dedicated,
               Arena[] arenas, Pressure pressure, int chunkSize) {
        this.threadCaches = threadCaches;
        this.categories = categories;
        this.committed = committed;
        this.dedicated = dedicated;
        this.arenas = arenas;
        this.pressure = pressure;
        this.chunkSize = chunkSize;
    }

    /** Every thread's counters, read without stopping any thread (see {@link ThreadCounters}). */
    ThreadCaches.Snapshot counters() {
        return threadCaches.snapshot(categories.count(), committed::committed);
    }

    /** Bytes live allocations asked for; dead threads' caches reclaimed first. */
    long requestedBytes() {
        threadCaches.reclaimDeadIfAny();
        return counters().totalRequested();
    }

    /** Bytes set aside for live allocations; dead threads' caches reclaimed first. */
    long reservedBytes() {
        threadCaches.reclaimDeadIfAny();
        return counters().totalReserved();
    }

    /** Native memory taken from the chunk source; dead threads' caches reclaimed first. */
    long committedBytes() {
        threadCaches.reclaimDeadIfAny();
        return committed.committed();
    }

    /** A snapshot of the accounting and the arenas; see {@link MemoryPool#stats()}. */
    PoolStats stats() {
        threadCaches.reclaimDead();
        ArenaSnapshot[] arenaSnapshots = new ArenaSnapshot[arenas.length];
        for (int i = 0; i < arenas.length; i++) {
            arenaSnapshots[i] = arenas[i].snapshot();
        }
        Category[] known = categories.all();
        ThreadCaches.Snapshot counts = threadCaches.snapshot(known.length, committed::committed);
        List<CategoryStats> perCategory = new ArrayList<>(known.length);
        for (Category category : known) {
            int id = category.id;
            long reserved = counts.reserved(id);
            long peak = category.peakReservedSeen.accumulateAndGet(reserved, Math::max);
            perCategory.add(new CategoryStats(category.name(), counts.requested(id), reserved,
                    counts.allocations(id), counts.releases(id), peak));
        }
        long[] parked = threadCaches.parkedDedicated();
        return new PoolStats(counts, committed.figures(dedicated.idleBytes(), parked[0], parked[1]), arenaSnapshots,
                perCategory, chunkSize, ResidentMemory.bytes());
    }

    /** Per category with live buffers, their count and requested bytes; empty when none is live. */
    String liveBuffers() {
        StringBuilder live = new StringBuilder();
        for (CategoryStats category : stats().categories()) {
            if (category.liveBuffers() > 0) {
                live.append(live.length() == 0 ? "" : ", ").append(category.name()).append(": ")
                        .append(category.liveBuffers()).append(" buffers, ")
                        .append(category.requested()).append(" bytes requested");
            }
        }
        return live.toString();
    }

    /** Every pooled chunk's use in percent, arena by arena, oldest first; walks every chunk. */
    int[] chunkUsePercent() {
        int[][] perArena = new int[arenas.length][];
        int total = 0;
        for (int i = 0; i < arenas.length; i++) {
            perArena[i] = arenas[i].chunkUsePercent();
            total += perArena[i].length;
        }
        int[] all = new int[total];
        int at = 0;
        for (int[] percents : perArena) {
            System.arraycopy(percents, 0, all, at, percents.length);
            at += percents.length;
        }
        return all;
    }

    /** {@link PoolStats#report()}, a map of every chunk per arena, and the pressure lines; walks every chunk. */
    String report() {
        StringBuilder sb = new StringBuilder(stats().report());
        for (Arena arena : arenas) {
            sb.append(String.format(Locale.ROOT, "  arena %2d chunk map [", arena.index));
            for (int percent : arena.chunkUsePercent()) {
                sb.append(PoolStats.occupancyChar(percent));
            }
            sb.append("]\n");
        }
        pressure.report(sb);
        return sb.toString();
    }
}
