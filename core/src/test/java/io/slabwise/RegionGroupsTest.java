package io.slabwise;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Where regions are carved in their groups: never overlapping, the fullest group first, a group off the list when empty. */
@Timeout(60)
class RegionGroupsTest {

    private static final int UNIT = RegionGroups.UNIT;
    private static final int UNITS = RegionGroups.UNITS;

    /** One direct buffer behind every test group: the bookkeeping never touches the memory. */
    private static final ByteBuffer BACKING = ByteBuffer.allocateDirect(RegionGroups.GROUP_SIZE);
    private static final AtomicInteger NEXT_GROUP = new AtomicInteger(1);

    private static RegionGroups.Group newGroup() {
        long address = (long) NEXT_GROUP.getAndIncrement() << 32;
        return new RegionGroups.Group(new NativeRegion(BACKING.duplicate(), address, RegionGroups.GROUP_SIZE));
    }

    @Test
    void aGroupIsFilledThenEmptiedAndLeavesTheList() {
        RegionGroups groups = new RegionGroups();
        assertNull(groups.carve(4 * 1024 * 1024), "no group yet");
        RegionGroups.Group group = newGroup();
        List<RegionGroups.Carving> carved = new ArrayList<>();
        carved.add(groups.carveFromNew(group, 4 * 1024 * 1024));
        for (int i = 1; i < 8; i++) {
            RegionGroups.Carving next = groups.carve(4 * 1024 * 1024);
            assertNotNull(next);
            assertSame(group, next.group());
            assertEquals(i * 64L, next.firstUnit());
            carved.add(next);
        }
        assertNull(groups.carve(UNIT), "the group is full");
        for (int i = 0; i < 7; i++) {
            assertNull(groups.free(carved.get(i)));
        }
        assertEquals(1, groups.groupCount());
        assertSame(group, groups.free(carved.get(7)), "the last region gives the group back");
        assertEquals(0, groups.groupCount());
        assertThrows(IllegalStateException.class, () -> groups.free(carved.get(7)));
    }

    @Test
    void aRegionGoesToTheFullestGroupWithRoom() {
        RegionGroups groups = new RegionGroups();
        RegionGroups.Carving inFirst = groups.carveFromNew(newGroup(), UNIT);
        RegionGroups.Group second = newGroup();
        groups.carveFromNew(second, 8 * UNIT);
        assertSame(second, groups.carve(UNIT).group());
        groups.free(inFirst);
        assertEquals(1, groups.groupCount());
        assertEquals(9, groups.carvedUnits());
    }

    @Test
    void sizesRoundUpToWholeUnitsAndAGroupHoldsOneRegionOfItsSize() {
        assertEquals(1, RegionGroups.unitsFor(1));
        assertEquals(2, RegionGroups.unitsFor(UNIT + 1));
        assertEquals(UNITS, RegionGroups.unitsFor(RegionGroups.GROUP_SIZE));
        assertThrows(IllegalArgumentException.class, () -> RegionGroups.unitsFor(RegionGroups.GROUP_SIZE + 1));
        RegionGroups groups = new RegionGroups();
        groups.carveFromNew(newGroup(), RegionGroups.GROUP_SIZE);
        assertNull(groups.carve(1));
    }

    /**
     * A seeded random sequence of carvings and frees of mixed sizes, checked
     * against a plain model: an owner per unit of every group. No carving may
     * take a unit already taken, a carving is refused only when no group has
     * the room, and a group leaves exactly when its last region is freed.
     */
    @Test
    void randomCarvingsMatchASimpleModel() {
        for (long seed = 1; seed <= 20; seed++) {
            Random random = new Random(seed);
            RegionGroups groups = new RegionGroups();
            Map<RegionGroups.Group, int[]> model = new IdentityHashMap<>(); // owner id per unit, 0 when free
            List<RegionGroups.Carving> live = new ArrayList<>();
            List<Integer> liveIds = new ArrayList<>();
            int nextId = 1;
            for (int step = 0; step < 3000; step++) {
                if (!live.isEmpty() && random.nextInt(100) < 45) {
                    int i = random.nextInt(live.size());
                    RegionGroups.Carving carving = live.remove(i);
                    int id = liveIds.remove(i);
                    int[] owners = model.get(carving.group());
                    for (int u = carving.firstUnit(); u < carving.firstUnit() + carving.units(); u++) {
                        assertEquals(id, owners[u], "seed " + seed + " step " + step);
                        owners[u] = 0;
                    }
                    boolean empty = java.util.Arrays.stream(owners).allMatch(o -> o == 0);
                    RegionGroups.Group emptied = groups.free(carving);
                    assertEquals(empty, emptied != null, "seed " + seed + " step " + step);
                    if (empty) {
                        model.remove(carving.group());
                    }
                    continue;
                }
                int size = randomSize(random);
                int units = RegionGroups.unitsFor(size);
                RegionGroups.Carving carving = groups.carve(size);
                if (carving == null) {
                    for (int[] owners : model.values()) {
                        assertTrue(longestFreeRun(owners) < units, "refused although a group had room; seed " + seed);
                    }
                    carving = groups.carveFromNew(newGroup(), size);
                    model.put(carving.group(), new int[UNITS]);
                }
                assertEquals(units, carving.units());
                int[] owners = model.get(carving.group());
                if (owners != null) { // not a new group: the fullest of those with a run long enough
                    int chosenCarved = carvedIn(owners);
                    for (int[] other : model.values()) {
                        if (other != owners && longestFreeRun(other) >= units) {
                            assertTrue(carvedIn(other) <= chosenCarved, "a fuller group had room; seed " + seed + " step " + step);
                        }
                    }
                }
                assertNotNull(owners, "carved from a group that had left the list; seed " + seed);
                int id = nextId++;
                for (int u = carving.firstUnit(); u < carving.firstUnit() + units; u++) {
                    assertEquals(0, owners[u], "overlapping regions; seed " + seed + " step " + step);
                    owners[u] = id;
                }
                live.add(carving);
                liveIds.add(id);
                assertEquals(model.size(), groups.groupCount());
            }
            for (RegionGroups.Carving carving : live) {
                groups.free(carving);
            }
            assertEquals(0, groups.groupCount(), "seed " + seed);
        }
    }

    /** Mostly chunk-like sizes, some small, some huge up to a whole group. */
    private static int randomSize(Random random) {
        int kind = random.nextInt(10);
        if (kind < 6) {
            return 4 * 1024 * 1024;
        } else if (kind < 8) {
            return UNIT << random.nextInt(6);
        }
        return 1 + random.nextInt(RegionGroups.GROUP_SIZE);
    }

    private static int carvedIn(int[] owners) {
        int carved = 0;
        for (int owner : owners) {
            carved += owner == 0 ? 0 : 1;
        }
        return carved;
    }

    private static int longestFreeRun(int[] owners) {
        int best = 0;
        int run = 0;
        for (int owner : owners) {
            run = owner == 0 ? run + 1 : 0;
            best = Math.max(best, run);
        }
        return best;
    }

    /**
     * Threads carve and free at once: every unit they are given is claimed in a
     * shared table with a compare-and-set, which fails if another thread holds
     * it; and no thread is ever given a group that has already left the list.
     */
    @Test
    void concurrentCarvingsNeverOverlap() throws InterruptedException {
        RegionGroups groups = new RegionGroups();
        Map<RegionGroups.Group, AtomicIntegerArray> owners = new ConcurrentHashMap<>();
        Map<RegionGroups.Group, Boolean> retired = new ConcurrentHashMap<>();
        int threads = 4;
        List<Runnable> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t + 1;
            long seed = 100 + t;
            tasks.add(() -> {
                Random random = new Random(seed);
                List<RegionGroups.Carving> mine = new ArrayList<>();
                for (int step = 0; step < 20_000; step++) {
                    if (!mine.isEmpty() && (mine.size() > 12 || random.nextBoolean())) {
                        RegionGroups.Carving carving = mine.remove(random.nextInt(mine.size()));
                        AtomicIntegerArray table = owners.get(carving.group());
                        for (int u = carving.firstUnit(); u < carving.firstUnit() + carving.units(); u++) {
                            assertTrue(table.compareAndSet(u, id, 0), "a unit changed hands while carved");
                        }
                        RegionGroups.Group emptied = groups.free(carving);
                        if (emptied != null) {
                            assertNull(retired.put(emptied, Boolean.TRUE), "a group was given back twice");
                        }
                        continue;
                    }
                    int size = randomSize(random);
                    RegionGroups.Carving carving = groups.carve(size);
                    if (carving == null) {
                        RegionGroups.Group group = newGroup();
                        owners.put(group, new AtomicIntegerArray(UNITS));
                        carving = groups.carveFromNew(group, size);
                    }
                    assertNull(retired.get(carving.group()), "carved from a group already given back");
                    AtomicIntegerArray table = owners.get(carving.group());
                    for (int u = carving.firstUnit(); u < carving.firstUnit() + carving.units(); u++) {
                        assertTrue(table.compareAndSet(u, 0, id), "two regions share a unit");
                    }
                    mine.add(carving);
                }
                for (RegionGroups.Carving carving : mine) {
                    AtomicIntegerArray table = owners.get(carving.group());
                    for (int u = carving.firstUnit(); u < carving.firstUnit() + carving.units(); u++) {
                        assertTrue(table.compareAndSet(u, id, 0));
                    }
                    groups.free(carving);
                }
            });
        }
        ConcurrentTasks.runConcurrently(tasks);
        assertEquals(0, groups.groupCount());
        assertEquals(0, groups.carvedUnits());
    }

    /**
     * Chunks from the direct source (malloc) go back to the operating system when
     * given back, with no {@code MALLOC_*} variable: regions are carved from
     * groups glibc always maps. Runs {@link GroupedResidentMain} in a JVM of its
     * own with mapped chunks turned off and the environment's {@code MALLOC_}
     * variables removed.
     */
    @Nested
    @Timeout(120)
    class Resident {

        private static final long MIB = 1024 * 1024;

        @Test
        @EnabledOnOs(OS.LINUX)
        void chunksGivenBackLeaveTheProcess() throws Exception {
            String last = ForkedJvm.lastLine(ForkedJvm.run(List.of("-Xmx64m", "-XX:MaxDirectMemorySize=2g", "-Dslabwise.noMappedChunks=true"),
                    true, GroupedResidentMain.class, "64"));
            String[] fields = last.trim().split(" ");
            List<Long> figures = Arrays.stream(fields).limit(4).map(Long::parseLong).toList();
            String report = "baseline " + figures.get(0) / MIB + " MiB, peak " + figures.get(1) / MIB + " MiB, after "
                    + figures.get(2) / MIB + " MiB, committed " + figures.get(3) + ", grouped " + fields[4];
            System.out.println(report);
            assertEquals("true", fields[4], report);
            assertEquals(0, figures.get(3), report);
            assertTrue(figures.get(1) - figures.get(0) >= 200 * MIB, "the chunks were resident: " + report);
            // what may stay: what malloc keeps of the regions a pool takes on their own (CommittedMemory.ALONE_BUDGET)
            // after the native heap trim, and the JVM's own growth (about 10 MiB here); each chunk taken on its own
            // leaves about 190 MiB
            assertTrue(figures.get(2) - figures.get(0) <= 40 * MIB, "resident memory went back near the baseline: " + report);
        }
    }
}
