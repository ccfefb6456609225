package io.slabwise;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * For the compaction tests: an owner of pool allocations that moves every
 * entry an evacuation contains into the new memory it gets, swaps it in and
 * frees the old one. Entries added with a seed have their bytes filled from
 * it, and {@link #check()} reads them back. Not thread-safe unless a subclass
 * guards it.
 */
class MovingOwner implements Relocator {

    final MemoryPool pool;
    final List<Allocation> entries = new ArrayList<>();
    /** The seed of each entry's bytes; null for an entry added without one. */
    final List<Long> seeds = new ArrayList<>();
    /** Calls of {@link #relocate}. */
    int calls;
    /** Entries moved so far. */
    long moved;
    /** Moves whose new memory lay in a chunk being emptied: there should be none. */
    int copiesInsideEvacuatedChunks;

    MovingOwner(MemoryPool pool) {
        this.pool = pool;
    }

    /** Adds an entry whose bytes are filled from {@code seed}. */
    void add(Allocation a, long seed) {
        fill(a, seed);
        entries.add(a);
        seeds.add(seed);
    }

    /** Adds an entry as it is, its bytes unchecked. */
    void adopt(Allocation a) {
        entries.add(a);
        seeds.add(null);
    }

    @Override
    public void relocate(Evacuation evacuation) {
        calls++;
        moveAll(evacuation);
    }

    /** Moves every entry the evacuation contains, while its budget lasts. */
    final void moveAll(Evacuation evacuation) {
        for (int i = 0; i < entries.size() && evacuation.budgetLeft(); i++) {
            Allocation old = entries.get(i);
            if (evacuation.contains(old)) {
                Allocation fresh = new Allocation();
                if (evacuation.moveInto(old, fresh)) {
                    if (evacuation.contains(fresh)) {
                        copiesInsideEvacuatedChunks++;
                    }
                    entries.set(i, fresh);
                    pool.free(old);
                    moved++;
                }
            }
        }
    }

    /** Reads back every seeded entry's bytes. */
    void check() {
        for (int i = 0; i < entries.size(); i++) {
            Long seed = seeds.get(i);
            if (seed != null) {
                verify(entries.get(i), seed);
            }
        }
    }

    /** Frees every entry. */
    void freeAll() {
        entries.forEach(pool::free);
        entries.clear();
        seeds.clear();
    }

    /** Writes a pattern of {@code seed} over an allocation's requested bytes. */
    static void fill(Allocation a, long seed) {
        ByteBuffer b = a.buffer();
        int words = b.capacity() / 8;
        for (int i = 0; i < words; i++) {
            b.putLong(i * 8, seed * 0x9E3779B97F4A7C15L + i);
        }
        for (int i = words * 8; i < b.capacity(); i++) {
            b.put(i, (byte) (seed + i));
        }
    }

    /** Checks the pattern {@link #fill} wrote. */
    static void verify(Allocation a, long seed) {
        ByteBuffer b = a.buffer();
        int words = b.capacity() / 8;
        for (int i = 0; i < words; i++) {
            if (b.getLong(i * 8) != seed * 0x9E3779B97F4A7C15L + i) {
                throw new AssertionError("word " + i + " of " + a + " (seed " + seed + ") changed");
            }
        }
        for (int i = words * 8; i < b.capacity(); i++) {
            if (b.get(i) != (byte) (seed + i)) {
                throw new AssertionError("byte " + i + " of " + a + " (seed " + seed + ") changed");
            }
        }
    }
}
