package io.slabwise;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The bookkeeping of region groups: blocks of {@link #GROUP_SIZE} bytes taken
 * from the chunk source in one piece, out of which regions are carved in
 * {@link #UNIT}-byte units.
 *
 * <p>Why groups: on glibc, {@code malloc} serves a request of at least 32 MiB
 * with {@code mmap} whatever its dynamic mmap threshold has become (the
 * threshold never rises past 32 MiB on 64-bit), and {@code free} gives it back
 * with {@code munmap}. A 4 MiB chunk taken on its own comes from malloc's
 * arenas once a freed chunk has raised that threshold, and may stay resident
 * after it is freed. A group leaves the process as soon as its last region is
 * freed.
 *
 * <p>This class only decides where regions go; it takes and gives back no
 * memory itself ({@link CommittedMemory} does, outside this object's lock). A
 * region is carved from the fullest group it fits in, so that regions gather
 * in few groups and the others empty out. Groups with free units are kept in
 * buckets by the units that stay in them (carved, less those being emptied),
 * so the fullest that fits is found by looking at most at {@link #UNITS}
 * buckets, not at every group: a pool of 256 GiB has 8,192 groups. A group whose last region is freed
 * is taken off the list at once, under the lock, so no region is ever carved
 * from it again; the caller then gives its backing region back. Any thread:
 * every method holds this object's monitor, and none calls out of the class.
 */
final class RegionGroups {

    /** The bytes of a group: the smallest request glibc always maps on 64-bit, whatever its threshold. */
    static final int GROUP_SIZE = 32 * 1024 * 1024;
    /** The granule regions are carved in: the smallest chunk size. */
    static final int UNIT = PoolConfig.MIN_CHUNK_SIZE;
    /** Units in a group. */
    static final int UNITS = GROUP_SIZE / UNIT;

    /** One group: its backing region and which of its units are carved. Guarded by the {@link RegionGroups} monitor. */
    static final class Group {
        /** The memory of the whole group, as the chunk source gave it. */
        final NativeRegion backing;
        private final long[] carved = new long[UNITS / Long.SIZE];
        private int carvedUnits;
        /** Set when the last region was freed and the group left the list. */
        private boolean retired;
        /**
         * Units of regions a compaction is emptying. A group whose every
         * carved unit is one is about to empty: no region is carved from it
         * while another group (or a new one) can take it.
         */
        private int evacuatingUnits;
        /** The bucket of {@link #byStaying} it is in, or -1 while it has no free unit (or left the list). */
        private int bucket = -1;

        Group(NativeRegion backing) {
            if (backing.size() != GROUP_SIZE) {
                throw new IllegalArgumentException("a group is " + GROUP_SIZE + " bytes, not " + backing.size());
            }
            this.backing = backing;
        }

        /** The first unit of a run of {@code units} free units, lowest first; -1 when there is none. */
        private int findRun(int units) {
            int run = 0;
            for (int unit = 0; unit < UNITS; unit++) {
                if (isCarved(unit)) {
                    run = 0;
                } else if (++run == units) {
                    return unit - units + 1;
                }
            }
            return -1;
        }

        private boolean isCarved(int unit) {
            return (carved[unit >>> 6] & (1L << unit)) != 0;
        }

        private void mark(int first, int units, boolean value) {
            for (int unit = first; unit < first + units; unit++) {
                if (isCarved(unit) == value) {
                    throw new IllegalStateException("unit " + unit + " of a group is already " + (value ? "carved" : "free"));
                }
                carved[unit >>> 6] ^= 1L << unit;
            }
            carvedUnits += value ? units : -units;
        }
    }

    /** Where a region was carved: its group, its first unit and how many units it spans. */
    record Carving(Group group, int firstUnit, int units) {

        /** The region's offset in its group, in bytes. */
        long offset() {
            return (long) firstUnit * UNIT;
        }
    }

    /**
     * The groups holding at least one region and at least one free unit, by
     * the units that stay in them ({@code carved - evacuating}), each bucket
     * in the order its groups came into it.
     */
    private final List<Set<Group>> byStaying = new ArrayList<>(Collections.nCopies(UNITS + 1, null));
    /** The groups holding at least one region. */
    private int groupCount;
    /** Units carved across all groups. */
    private long totalCarved;

    /** Units a region of {@code size} bytes spans. */
    static int unitsFor(int size) {
        if (size <= 0 || size > GROUP_SIZE) {
            throw new IllegalArgumentException("a grouped region is 1 to " + GROUP_SIZE + " bytes, not " + size);
        }
        return (size + UNIT - 1) / UNIT;
    }

    /** Carves {@code size} bytes from the fullest group they fit in, none being evacuated; null when none has room. */
    synchronized Carving carve(int size) {
        return carve(size, false);
    }

    /**
     * Carves {@code size} bytes from the group they fit in that keeps the
     * most units once the regions being emptied are gone (the fullest, when
     * no compaction runs); null when none has room. Groups about to empty
     * (every carved unit being emptied) count only with {@code evacuatingToo}:
     * the last resort, before the ceiling refuses.
     */
    synchronized Carving carve(int size, boolean evacuatingToo) {
        int units = unitsFor(size);
        // a group whose staying units exceed UNITS - units has fewer than units free: start below them
        for (int staying = UNITS - units; staying >= 0; staying--) {
            Set<Group> bucket = byStaying.get(staying);
            if (bucket == null || bucket.isEmpty()) {
                continue;
            }
            for (Group group : bucket) {
                if (UNITS - group.carvedUnits < units || (group.evacuatingUnits > 0 && staying == 0 && !evacuatingToo)) {
                    continue; // only groups being emptied: their evacuating units are carved too
                }
                int first = group.findRun(units);
                if (first >= 0) {
                    mark(group, first, units, true);
                    return new Carving(group, first, units);
                }
            }
        }
        return null;
    }

    /** Marks units carved or free and moves the group to the bucket of its staying units. */
    private void mark(Group group, int first, int units, boolean carved) {
        group.mark(first, units, carved);
        totalCarved += carved ? units : -units;
        rebucket(group);
    }

    /** Puts {@code group} in the bucket of its staying units, or in none when it has no free unit or left. */
    private void rebucket(Group group) {
        int bucket = group.retired || group.carvedUnits == UNITS ? -1 : group.carvedUnits - group.evacuatingUnits;
        if (bucket == group.bucket) {
            return;
        }
        if (group.bucket >= 0) {
            byStaying.get(group.bucket).remove(group);
        }
        if (bucket >= 0) {
            Set<Group> to = byStaying.get(bucket);
            if (to == null) {
                to = new LinkedHashSet<>();
                byStaying.set(bucket, to);
            }
            to.add(group);
        }
        group.bucket = bucket;
    }

    /** Adds a new group, not on the list yet, and carves {@code size} bytes from its start. */
    synchronized Carving carveFromNew(Group group, int size) {
        int units = unitsFor(size);
        if (group.carvedUnits != 0 || group.retired) {
            throw new IllegalStateException("the group is not new");
        }
        groupCount++;
        mark(group, 0, units, true);
        return new Carving(group, 0, units);
    }

    /**
     * Frees a carved region.
     *
     * @return the group when that was its last region: it is off the list, and
     *         the caller gives its backing region back; otherwise null
     */
    synchronized Group free(Carving carving) {
        Group group = carving.group();
        if (group.retired) {
            throw new IllegalStateException("a region was freed twice: its group is already given back");
        }
        mark(group, carving.firstUnit(), carving.units(), false);
        if (group.carvedUnits > 0) {
            return null;
        }
        group.retired = true; // its last region: no region is ever carved from it again
        groupCount--;
        rebucket(group);
        return group;
    }

    /** Units carved from {@code group} now. */
    synchronized int carvedUnits(Group group) {
        return group.carvedUnits;
    }

    /** Counts a carved region as being emptied by a compaction, or no longer; once each way. */
    synchronized void evacuating(Carving carving, boolean on) {
        Group group = carving.group();
        group.evacuatingUnits += on ? carving.units() : -carving.units();
        rebucket(group);
    }

    /** The groups holding at least one region. */
    synchronized int groupCount() {
        return groupCount;
    }

    /** Units carved across all groups. */
    synchronized long carvedUnits() {
        return totalCarved;
    }
}
