package io.slabwise;

import java.util.function.Consumer;

/**
 * An arena's chunks in the order it took them, indexed for placement: which
 * is the oldest chunk with a free run of at least {@code k} pages? The answer
 * takes O(log n) for n chunks, as does every change, so the cost of placing a
 * run does not grow with the pool (a walk over the chunks, oldest first, cost
 * O(n) per run and O(n²) to fill a pool).
 *
 * <h2>Layout</h2>
 * Each chunk holds a <em>slot</em>, a position given in the order chunks are
 * added, so that a lower slot is an older chunk. The slots are the leaves of
 * a complete binary tree kept in one array, whose every node holds the
 * largest key below it; a chunk's key is its longest free run in pages, or 0
 * while it is being evacuated (nothing new may go there), and an empty slot
 * has key 0:
 *
 * <pre>
 *                      [1] 7                    node i: max(node 2i, node 2i+1)
 *              [2] 7             [3] 4
 *          [4] 0    [5] 7    [6] 4    [7] 0
 *  slots:   0  0    3  7     4  0     0  0      (capacity 8; slot = node - capacity)
 *           ^ evacuating, or gone
 * </pre>
 *
 * The oldest chunk with a run of at least {@code k} is found from the root
 * by going left whenever the left child's key is at least {@code k}. A key
 * that changes is written at its leaf and carried up while a parent's
 * maximum changes.
 *
 * <h2>Slots</h2>
 * New chunks take the next slot. When the slots run out, the live chunks are
 * laid out again from slot 0, in the same order, in a tree with room for at
 * least as many again: each re-layout costs O(n) and comes after at least
 * n/2 additions, so an addition costs O(1) amortised. A chunk that goes
 * leaves an empty slot until the next re-layout.
 *
 * <p>Not thread-safe: the arena's lock guards it.
 */
final class PlacementIndex {

    /** The fewest slots a tree has. */
    private static final int MIN_CAPACITY = 16;

    /** The chunk in each slot, or null. */
    private Chunk[] slots;
    /** The tree of keys: node 1 is the root, the leaves are nodes {@code capacity} to {@code 2 * capacity - 1}. */
    private int[] keys;
    /** The number of slots, a power of two. */
    private int capacity;
    /** The slot the next chunk takes. */
    private int nextSlot;
    /** Chunks in the index. */
    private int size;

    PlacementIndex() {
        layOut(MIN_CAPACITY);
    }

    /** Chunks in the index. */
    int size() {
        return size;
    }

    /** Adds {@code chunk} as the newest. */
    void add(Chunk chunk) {
        if (nextSlot == capacity) {
            layOut(Math.max(MIN_CAPACITY, Integer.highestOneBit(Math.max(1, size)) << 2));
        }
        int slot = nextSlot++;
        slots[slot] = chunk;
        chunk.placementSlot = slot;
        size++;
        set(slot, keyOf(chunk));
    }

    /** Takes {@code chunk} out. */
    void remove(Chunk chunk) {
        int slot = chunk.placementSlot;
        assert slots[slot] == chunk : "chunk " + chunk.id + " is not in slot " + slot;
        slots[slot] = null;
        chunk.placementSlot = -1;
        size--;
        set(slot, 0);
    }

    /** Reads {@code chunk}'s key again after its free runs or its evacuation changed. */
    void update(Chunk chunk) {
        assert chunk.placementSlot >= 0 && slots[chunk.placementSlot] == chunk : "chunk " + chunk.id + " is not in the index";
        set(chunk.placementSlot, keyOf(chunk));
    }

    /** The oldest chunk with a free run of at least {@code runPages} (at least 1) that is not being evacuated, or null. */
    Chunk oldestWithRun(int runPages) {
        if (keys[1] < runPages) {
            return null;
        }
        int node = 1;
        while (node < capacity) {
            node <<= 1;
            if (keys[node] < runPages) {
                node++; // the right child has it, since the parent does and the left one does not
            }
        }
        return slots[node - capacity];
    }

    /** Runs {@code action} on every chunk, oldest first. O(n): for compaction and operators' reports only. */
    void forEach(Consumer<Chunk> action) {
        for (int slot = 0; slot < nextSlot; slot++) {
            Chunk chunk = slots[slot];
            if (chunk != null) {
                action.accept(chunk);
            }
        }
    }

    private static int keyOf(Chunk chunk) {
        return chunk.evacuating ? 0 : chunk.longestFreeRun();
    }

    /** Writes {@code key} at {@code slot}'s leaf and carries it up while a maximum changes. */
    private void set(int slot, int key) {
        int node = slot + capacity;
        keys[node] = key;
        while (node > 1) {
            int parent = node >>> 1;
            int max = Math.max(keys[node], keys[node ^ 1]);
            if (keys[parent] == max) {
                return;
            }
            keys[parent] = max;
            node = parent;
        }
    }

    /** Lays the chunks out again from slot 0, in order, in a tree of {@code newCapacity} slots. */
    private void layOut(int newCapacity) {
        Chunk[] old = slots;
        int oldEnd = nextSlot;
        slots = new Chunk[newCapacity];
        keys = new int[newCapacity << 1];
        capacity = newCapacity;
        nextSlot = 0;
        for (int i = 0; old != null && i < oldEnd; i++) {
            Chunk chunk = old[i];
            if (chunk != null) {
                chunk.placementSlot = nextSlot;
                slots[nextSlot] = chunk;
                keys[capacity + nextSlot] = keyOf(chunk);
                nextSlot++;
            }
        }
        for (int node = capacity - 1; node >= 1; node--) {
            keys[node] = Math.max(keys[node << 1], keys[(node << 1) + 1]);
        }
    }
}
