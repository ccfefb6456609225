package io.slabwise;

import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * An immutable snapshot of a {@link MemoryPool}: what live allocations asked
 * for (<em>requested</em>), what the pool set aside for them (<em>reserved</em>),
 * what it holds from the operating system (<em>committed</em>), and how its
 * chunks are used.
 *
 * <p>Each arena is read under its own lock and the accounting totals are read
 * consistently per thread, but the parts are taken one after another: while
 * other threads allocate, derived figures such as {@link #cachedBytes()} are
 * approximate. When the pool is quiet every figure is exact.
 */
public final class PoolStats {

    /** The names of the bands of {@link #chunksByOccupancy()}, as {@link #report()} prints them. */
    private static final String[] BANDS = {"idle", "<25%", "25-50%", "50-75%", "75-99%", "full"};

    private final long requested;
    private final long reserved;
    private final long committed;
    private final long hugeCommitted;
    private final long hugeAllocations;
    private final long hugeIdle;
    private final long blockRegionBytes;
    private final long allocations;
    private final long releases;
    private final int chunkSize;
    private final ArenaSnapshot[] arenas;
    private final List<CategoryStats> categories;
    private final long resident;
    private final long carvedFree;

    /**
     * Puts a snapshot together from its parts.
     *
     * @param counts     every thread's counters, and the committed bytes read with them
     * @param memory     what the pool holds from the chunk source, by kind
     * @param arenas     each arena, read under its lock
     * @param categories each category's figures
     * @param chunkSize  the pool's chunk size
     * @param resident   the process's resident bytes, or -1 where unknown
     */
    PoolStats(ThreadCaches.Snapshot counts, CommittedMemory.Figures memory, ArenaSnapshot[] arenas,
              List<CategoryStats> categories, int chunkSize, long resident) {
        this.requested = counts.totalRequested();
        this.reserved = counts.totalReserved();
        this.committed = counts.committed;
        this.allocations = counts.totalAllocations();
        this.releases = counts.totalReleases();
        this.hugeCommitted = memory.hugeBytes();
        this.hugeAllocations = memory.hugeCount();
        this.hugeIdle = memory.hugeIdleBytes();
        this.blockRegionBytes = memory.blockRegionBytes();
        this.carvedFree = Math.max(0, memory.wholeChunkBytes() - counts.totalCarved());
        this.chunkSize = chunkSize;
        this.arenas = arenas;
        this.categories = List.copyOf(categories);
        this.resident = resident;
    }

    /**
     * Bytes free inside the chunks and blocks that sequential allocators and
     * block pools hold: retired tails, the unused part of open and spare
     * chunks, idle blocks, free sub-blocks and mini-blocks.
     */
    public long carvedFreeBytes() {
        return carvedFree;
    }

    /**
     * The process's resident memory when the snapshot was taken (Linux: the
     * {@code VmRSS} of {@code /proc/self/status}); empty where the platform
     * does not say. It is the whole process, not only Slabwise's memory.
     */
    public OptionalLong residentBytes() {
        return resident < 0 ? OptionalLong.empty() : OptionalLong.of(resident);
    }

    /** Figures per category, in order of creation. */
    public List<CategoryStats> categories() {
        return categories;
    }

    /** The figures of one category, or null when the pool has no category of that name. */
    public CategoryStats category(String name) {
        for (CategoryStats c : categories) {
            if (c.name().equals(name)) {
                return c;
            }
        }
        return null;
    }

    /** Bytes live allocations asked for. */
    public long requestedBytes() {
        return requested;
    }

    /** Bytes set aside for live allocations (size classes; page-rounded for huge ones). */
    public long reservedBytes() {
        return reserved;
    }

    /** Native memory held from the chunk source: chunks (used, free or idle), dedicated regions (live or idle) and block regions. */
    public long committedBytes() {
        return committed;
    }

    /** The part of {@link #committedBytes()} held by the dedicated regions of live huge allocations. */
    public long hugeCommittedBytes() {
        return hugeCommitted;
    }

    /** The part of {@link #committedBytes()} held by block pools in their blocks, in use or idle. */
    public long blockRegionBytes() {
        return blockRegionBytes;
    }

    /** Live huge allocations: those with a dedicated region of their own. */
    public long hugeAllocations() {
        return hugeAllocations;
    }

    /**
     * The part of {@link #committedBytes()} held by idle dedicated regions,
     * kept for requests they fit: one in each platform thread's slot (up to
     * 1 MiB), one in the pool's recent cell and up to a chunk's bytes in its
     * idle list (see {@link PoolConfig.Settings#dedicatedAbove(int)}).
     */
    public long hugeIdleBytes() {
        return hugeIdle;
    }

    /** Allocations made since the pool was built. */
    public long allocations() {
        return allocations;
    }

    /** Releases since the pool was built. */
    public long releases() {
        return releases;
    }

    /** Allocations not yet released. */
    public long liveAllocations() {
        return allocations - releases;
    }

    /** Pooled chunks (huge regions excluded). */
    public int chunks() {
        int n = 0;
        for (ArenaSnapshot a : arenas) {
            n += a.chunks();
        }
        return n;
    }

    /**
     * Bytes of the pooled chunks, idle ones included (huge regions and blocks
     * excluded). Chunks differ in size (an arena's first ones are smaller than
     * {@link #chunkSize()}), so this is not {@code chunks() * chunkSize()}.
     */
    public long chunkBytes() {
        long bytes = 0;
        for (ArenaSnapshot a : arenas) {
            bytes += a.chunkBytes();
        }
        return bytes;
    }

    /** Chunks with nothing allocated, kept for reuse. */
    public int idleChunks() {
        int n = 0;
        for (ArenaSnapshot a : arenas) {
            n += a.idleChunks();
        }
        return n;
    }

    /** Chunks ever taken from the chunk source. */
    public long chunksAllocated() {
        long n = 0;
        for (ArenaSnapshot a : arenas) {
            n += a.chunksAllocated();
        }
        return n;
    }

    /** Chunks ever given back to the chunk source. */
    public long chunksReleased() {
        long n = 0;
        for (ArenaSnapshot a : arenas) {
            n += a.chunksReleased();
        }
        return n;
    }

    /**
     * Bytes released by buffers and sitting in thread caches or remote-free
     * queues for reuse: what the arenas handed out, less live buffers and less
     * the chunks held by sequential allocators (block pools' regions come
     * from no arena).
     */
    public long cachedBytes() {
        long used = 0;
        for (ArenaSnapshot a : arenas) {
            used += a.usedBytes();
        }
        // carvedFree is what the whole chunks and the block regions hold beyond their live slots; the arenas
        // handed out the chunks, not the block regions, whose bytes are added back
        return Math.max(0, used - (reserved - hugeCommitted) - carvedFree + blockRegionBytes);
    }

    /** The arenas as they stood; for tests. */
    List<ArenaSnapshot> arenaSnapshots() {
        return List.of(arenas);
    }

    /** The number of arenas. */
    public int arenaCount() {
        return arenas.length;
    }

    /** The chunk size in bytes: that of every chunk once an arena has grown (see {@link PoolConfig#firstChunkSize()}). */
    public int chunkSize() {
        return chunkSize;
    }

    /**
     * Pooled chunks by how much of them is handed out, in six bands:
     * {@code [0]} idle (0%), {@code [1]} under 25%, {@code [2]} 25-50%,
     * {@code [3]} 50-75%, {@code [4]} 75% up to full, {@code [5]} full. Many
     * chunks in the low bands mean scattered long-lived buffers pin chunks.
     * The arenas keep these counts as chunks fill and drain, so reading them
     * costs the same whatever the pool's size; the occupancy of each chunk is
     * {@link MemoryPool#chunkUsePercent()}, which walks them.
     */
    public int[] chunksByOccupancy() {
        int[] bands = new int[BANDS.length];
        for (ArenaSnapshot a : arenas) {
            for (int band = 0; band < bands.length; band++) {
                bands[band] += a.chunksByOccupancy()[band];
            }
        }
        return bands;
    }

    /** 1 - requested/reserved: what size-class rounding wastes; 0 when nothing is live. */
    public double internalFragmentation() {
        return reserved == 0 ? 0 : 1 - (double) requested / reserved;
    }

    /** 1 - reserved/committed: committed memory not set aside for live allocations; 0 when nothing is committed. */
    public double externalFragmentation() {
        return committed == 0 ? 0 : 1 - (double) reserved / committed;
    }

    /** committed/requested: native bytes held per byte asked for; NaN when nothing is requested (no ratio). */
    public double overhead() {
        return requested == 0 ? Double.NaN : (double) committed / requested;
    }

    /** A one-line summary for a periodic log line. */
    public String summary() {
        return String.format(Locale.ROOT,
                "requested=%s reserved=%s committed=%s%s cached=%s chunks=%d idle=%d huge=%d idleHuge=%s blocks=%s"
                        + " internal=%.1f%% external=%.1f%% overhead=%s",
                bytes(requested), bytes(reserved), bytes(committed), resident < 0 ? "" : " resident=" + bytes(resident),
                bytes(cachedBytes()), chunks(), idleChunks(), hugeAllocations, bytes(hugeIdle), bytes(blockRegionBytes),
                internalFragmentation() * 100, externalFragmentation() * 100,
                requested == 0 ? "n/a" : String.format(Locale.ROOT, "%.2fx", overhead()));
    }

    /**
     * A multi-line report: the summary, one line per category, then one line
     * per arena with its chunks per band of occupancy (see
     * {@link #chunksByOccupancy()}). {@link MemoryPool#report()} adds a map
     * of every chunk.
     */
    public String report() {
        StringBuilder sb = new StringBuilder(summary()).append('\n');
        for (CategoryStats c : categories) {
            sb.append(String.format(Locale.ROOT, "  category %-12s requested=%s reserved=%s live=%d internal=%.1f%%%n",
                    c.name(), bytes(c.requested()), bytes(c.reserved()), c.liveBuffers(), c.internalFragmentation() * 100));
        }
        for (ArenaSnapshot a : arenas) {
            sb.append(String.format(Locale.ROOT, "  arena %2d threads=%d chunks=%d idle=%d used=%s by occupancy:",
                    a.index(), a.threads(), a.chunks(), a.idleChunks(), bytes(a.usedBytes())));
            for (int band = 0; band < BANDS.length; band++) {
                sb.append(' ').append(BANDS[band]).append('=').append(a.chunksByOccupancy()[band]);
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    static char occupancyChar(int percent) {
        if (percent <= 0) {
            return '.';
        }
        if (percent >= 100) {
            return '#';
        }
        return (char) ('0' + Math.max(1, percent / 10));
    }

    /**
     * Formats a byte count with a binary unit and one decimal, e.g. {@code 1.5 MiB}; a count that would
     * round to {@code 1024.0} of a unit is shown in the next ({@code 1.0 MiB}, never {@code 1024.0 KiB}).
     */
    public static String bytes(long bytes) {
        long abs = Math.abs(bytes);
        if (abs < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double value = bytes;
        int unit = -1;
        // from 1023.95 up, one decimal would print 1024.0 of this unit: such a value reads as 1.0 of the next
        while (Math.abs(value) >= 1023.95 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        return String.format(Locale.ROOT, "%.1f %s", value, units[unit]);
    }

    @Override
    public String toString() {
        return summary();
    }
}
