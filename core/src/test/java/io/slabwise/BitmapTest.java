package io.slabwise;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The slot bitmap of subpages and block regions, checked against a model at
 * the sizes where its layout changes: the bits in a field (up to 64 slots,
 * with bits past the last slot) and in the array beyond.
 */
class BitmapTest {

    /** The smallest node there is: a bitmap and its links. */
    private static final class Node extends Bitmap<Node> {
        Node(int slots) {
            super(slots);
        }
    }

    /**
     * Seeded takes and releases: every take is the lowest free slot of the
     * model, or -1 exactly when the model is full; a release of a free slot
     * or of no slot changes nothing and says so; the free count agrees.
     */
    @Test
    void takesTheLowestFreeSlotAndCatchesDoubleReleases() {
        for (int slots : new int[] {1, 2, 3, 63, 64, 65, 127, 128, 129, 512}) {
            Node node = new Node(slots);
            boolean[] taken = new boolean[slots];
            int free = slots;
            Random random = new Random(slots);
            for (int step = 0; step < 20 * slots + 200; step++) {
                if (random.nextInt(100) < 60) {
                    int lowest = lowestFree(taken);
                    assertEquals(lowest, node.take(), slots + " slots, step " + step);
                    if (lowest >= 0) {
                        taken[lowest] = true;
                        free--;
                    }
                } else {
                    int slot = random.nextInt(slots + 2) - 1; // -1 and slots: no slot
                    boolean wasTaken = slot >= 0 && slot < slots && taken[slot];
                    assertEquals(wasTaken, node.release(slot), slots + " slots, release " + slot + ", step " + step);
                    if (wasTaken) {
                        taken[slot] = false;
                        free++;
                    }
                }
                assertEquals(free, node.free(), slots + " slots, step " + step);
            }
            assertEquals(slots, node.slots());
        }
    }

    /** Full means full: the bits past the last slot are never handed out, whatever the count. */
    @Test
    void aFullBitmapTakesNothingAndEmptiesBackToItsFirstSlot() {
        for (int slots : new int[] {1, 2, 63, 64, 65, 200}) {
            Node node = new Node(slots);
            for (int i = 0; i < slots; i++) {
                assertEquals(i, node.take());
            }
            assertEquals(-1, node.take(), slots + " slots");
            assertEquals(0, node.free());
            for (int i = slots - 1; i >= 0; i--) {
                assertTrue(node.release(i));
                assertFalse(node.release(i), "a double release of " + i);
            }
            assertEquals(slots, node.free());
            assertEquals(0, node.take());
        }
    }

    @Test
    void aBitmapHasASlotAtLeast() {
        assertThrows(IllegalArgumentException.class, () -> new Node(0));
    }

    private static int lowestFree(boolean[] taken) {
        for (int i = 0; i < taken.length; i++) {
            if (!taken[i]) {
                return i;
            }
        }
        return -1;
    }
}
