package io.slabwise;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.slabwise.CompactionChoice.Destination;
import io.slabwise.CompactionChoice.Victim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The choice's pick against a reference over the same data: random, seeded
 * candidates (general-pool chunks with their subpages' element bytes by size
 * class, pinned sequential chunks, blocks; some in region groups, many with
 * equal keys) spread over destinations of random room, with a random budget
 * and ceiling. The reference takes the candidates one at a time, least key
 * first (a group's chunks side by side, the order they were listed in
 * otherwise), stops at the first whose bytes pass the budget, keeps one when
 * the new memory that all it kept so far would need, counted again from the
 * start, fits under the ceiling, and at last drops the destinations that gain
 * no unit. The choice must pick exactly those victims, in that order.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CompactionChoiceModelTest {

    /** Size classes whose free elements an arena counts apart. */
    private static final int CLASSES = 4;
    /** The units of the model: bytes are abstract here, so they are small. */
    private static final int[] UNITS = {4096, 8192};
    /** One direct buffer that every model chunk's region is a slice of. */
    private static final ByteBuffer MEMORY = ByteBuffer.allocateDirect(8192);

    /** A destination as the reference sees it: its room before the choice. */
    private static final class Room {
        final Destination destination;
        final long free;
        final long[] classFree;

        Room(Destination destination) {
            this.destination = destination;
            this.free = destination.free;
            this.classFree = destination.classFree == null ? null : destination.classFree.clone();
        }
    }

    /** A victim's subpage elements by class, as its arena would give them; null when it has no subpage. */
    private static final class Elements {
        final long[] taken = new long[CLASSES];
        final long[] free = new long[CLASSES];
    }

    /** In what the reference counts: how often each rule of the pick decided, so that each must have had its say. */
    private static final int BUDGET_STOPPED = 0;
    private static final int CEILING_REFUSED = 1;
    private static final int GAINLESS_DROPPED = 2;
    private static final int CLASS_ROOM_USED = 3;

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5})
    void pickChoosesWhatTheReferenceChooses(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        long[] seen = new long[4];
        for (int round = 0; round < 2_000; round++) {
            long roundSeed = random.nextLong();
            check(new SplittableRandom(roundSeed), seen, "seed " + seed + ", round seed " + roundSeed);
        }
        assertTrue(seen[BUDGET_STOPPED] > 0 && seen[CEILING_REFUSED] > 0 && seen[GAINLESS_DROPPED] > 0
                && seen[CLASS_ROOM_USED] > 0, () -> "every rule applied at least once: " + Arrays.toString(seen));
    }

    private static void check(SplittableRandom random, long[] seen, String what) {
        List<Room> rooms = new ArrayList<>();
        int destinations = 1 + random.nextInt(4);
        for (int d = 0; d < destinations; d++) {
            int unit = UNITS[random.nextInt(UNITS.length)];
            Destination destination = new Destination(unit, random.nextInt(3) == 0 ? 0 : random.nextLong(3L * unit));
            if (random.nextBoolean()) { // an arena: its free elements by class count for entries of their class
                destination.classFree = new long[CLASSES];
                for (int c = 0; c < CLASSES; c++) {
                    destination.classFree[c] = random.nextInt(3) == 0 ? 0 : random.nextLong(unit);
                }
            }
            rooms.add(new Room(destination));
        }
        Map<Chunk, Elements> elements = new IdentityHashMap<>();
        List<Victim> candidates = new ArrayList<>();
        int count = random.nextInt(25);
        for (int i = 0; i < count; i++) {
            Destination to = rooms.get(random.nextInt(rooms.size())).destination;
            int unit = (int) to.unit;
            Chunk chunk = new Chunk(null, new NativeRegion(MEMORY.slice(0, unit), 1, unit));
            long used = (1 + random.nextInt(8)) * (unit / 8); // few values: many equal keys
            Victim victim;
            if (to.classFree != null) {
                victim = Victim.general(chunk, used, random.nextLong(unit - used + 1), to, unit, false);
                if (random.nextBoolean()) {
                    Elements e = new Elements();
                    long left = used;
                    for (int c = 0; c < CLASSES; c++) {
                        e.taken[c] = random.nextLong(left / 2 + 1);
                        left -= e.taken[c];
                        e.free[c] = random.nextLong(unit / 4);
                    }
                    elements.put(chunk, e);
                }
            } else if (random.nextBoolean()) {
                victim = Victim.pinnedSlab(null, chunk, used, to, null);
            } else {
                victim = Victim.block(null, chunk, used, to, null);
            }
            candidates.add(victim);
        }
        // region groups: general-pool chunks chosen by the bytes of their group, side by side
        for (int g = random.nextInt(3); g > 0; g--) {
            Object group = new Object();
            List<Victim> members = new ArrayList<>();
            for (Victim v : candidates) {
                if (v.kind == Victim.Kind.GENERAL && v.group == null && random.nextInt(3) == 0) {
                    members.add(v);
                }
            }
            long bytes = members.stream().mapToLong(v -> v.usedBytes).sum();
            for (Victim member : members) {
                member.sortKey = bytes;
                member.group = group;
            }
        }
        long budget = switch (random.nextInt(4)) {
            case 0 -> Long.MAX_VALUE;
            case 1 -> 0;
            default -> random.nextLong(6L * UNITS[UNITS.length - 1]);
        };
        long headroom = switch (random.nextInt(3)) {
            case 0 -> Long.MAX_VALUE;
            case 1 -> 0;
            default -> random.nextInt(4) * (long) UNITS[random.nextInt(UNITS.length)];
        };
        List<Victim> expected = reference(candidates, rooms, elements, budget, headroom, seen);
        List<Victim> chosen = CompactionChoice.pick(new ArrayList<>(candidates), budget, headroom, (chunk, taken, free) -> {
            Elements e = elements.get(chunk);
            if (e == null) {
                return false;
            }
            for (int c = 0; c < CLASSES; c++) {
                taken[c] += e.taken[c];
                free[c] += e.free[c];
            }
            return true;
        });
        assertEquals(describe(expected, candidates), describe(chosen, candidates), () -> what + ", budget " + budget
                + ", headroom " + headroom + ", candidates " + describe(candidates, candidates));
    }

    /** The victims the pick should choose, in order; counts in {@code seen} the rules that decided. */
    private static List<Victim> reference(List<Victim> candidates, List<Room> rooms, Map<Chunk, Elements> elements,
                                          long budget, long headroom, long[] seen) {
        List<Victim> listed = candidates;
        List<Victim> order = new ArrayList<>(candidates);
        order.sort(Comparator.<Victim>comparingLong(v -> v.sortKey)
                .thenComparingInt(v -> v.group == null ? 0 : System.identityHashCode(v.group))
                .thenComparingInt(listed::indexOf));
        List<Victim> kept = new ArrayList<>();
        long bytes = 0;
        for (Victim victim : order) {
            if (bytes + victim.usedBytes > budget) {
                seen[BUDGET_STOPPED]++;
                break;
            }
            List<Victim> trial = new ArrayList<>(kept);
            trial.add(victim);
            long newMemory = 0;
            for (Room room : rooms) {
                newMemory += need(room, trial, elements, seen);
            }
            if (newMemory > headroom) {
                seen[CEILING_REFUSED]++;
                continue;
            }
            kept = trial;
            bytes += victim.usedBytes;
        }
        List<Victim> chosen = new ArrayList<>();
        for (Victim victim : kept) {
            Room room = rooms.stream().filter(r -> r.destination == victim.destination).findFirst().orElseThrow();
            long victims = kept.stream().filter(v -> v.destination == victim.destination).count();
            if (victims - need(room, kept, elements, seen) / room.destination.unit >= 1) {
                chosen.add(victim);
            } else {
                seen[GAINLESS_DROPPED]++;
            }
        }
        return chosen;
    }

    /**
     * The new memory, in whole units, that the victims of {@code room} among
     * {@code kept} need, counted from the room it had before the choice: what
     * they move less what fits its free pages outside them; entries of a
     * small class of a general-pool chunk first take that class's free
     * elements outside the victims, in the order the victims were kept.
     */
    private static long need(Room room, List<Victim> kept, Map<Chunk, Elements> elements, long[] seen) {
        long free = room.free;
        long[] classFree = room.classFree == null ? null : room.classFree.clone();
        long moved = 0;
        for (Victim victim : kept) {
            if (victim.destination != room.destination) {
                continue;
            }
            free -= victim.reusableFree;
            long demand = victim.usedBytes;
            Elements e = elements.get(victim.chunk);
            if (classFree != null && e != null) {
                for (int c = 0; c < CLASSES; c++) {
                    long outside = classFree[c] - e.free[c];
                    long fits = Math.max(0, Math.min(outside, e.taken[c]));
                    if (fits > 0) {
                        seen[CLASS_ROOM_USED]++;
                    }
                    classFree[c] = outside - fits;
                    demand -= fits;
                }
            }
            moved += demand;
        }
        long unit = room.destination.unit;
        return (Math.max(0, moved - free) + unit - 1) / unit * unit;
    }

    /** The victims by their place among the candidates as listed, with their kind and bytes. */
    private static String describe(List<Victim> victims, List<Victim> listed) {
        StringBuilder out = new StringBuilder("[");
        for (Victim v : victims) {
            out.append(out.length() > 1 ? ", " : "").append('#').append(listed.indexOf(v)).append(' ').append(v.kind)
                    .append(' ').append(v.usedBytes).append(" key ").append(v.sortKey);
        }
        return out.append(']').toString();
    }
}
