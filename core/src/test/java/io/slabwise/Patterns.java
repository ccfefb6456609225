package io.slabwise;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * A byte pattern unique to one allocation, written over its requested bytes
 * with absolute puts (so threads sharing a chunk's buffer never touch its
 * position or limit) and checked later: memory handed to two live
 * allocations at once shows up as a pattern overwritten by the other one.
 */
final class Patterns {

    private Patterns() {
    }

    /** Fills {@code [offset, offset + requested)} of the allocation's memory with the pattern of {@code id}. */
    static void write(Allocation a, long id) {
        ByteBuffer memory = a.chunkMemory();
        int base = a.offset();
        int n = a.requestedBytes();
        int i = 0;
        for (; i + Long.BYTES <= n; i += Long.BYTES) {
            memory.putLong(base + i, word(id, i));
        }
        for (; i < n; i++) {
            memory.put(base + i, (byte) word(id, i));
        }
    }

    /** Fails, naming the first differing byte, unless the allocation still holds the pattern of {@code id}. */
    static void verify(Allocation a, long id) {
        ByteBuffer memory = a.chunkMemory();
        int base = a.offset();
        int n = a.requestedBytes();
        int i = 0;
        for (; i + Long.BYTES <= n; i += Long.BYTES) {
            if (memory.getLong(base + i) != word(id, i)) {
                fail("allocation " + id + " (" + a + ") was overwritten near byte " + i);
            }
        }
        for (; i < n; i++) {
            if (memory.get(base + i) != (byte) word(id, i)) {
                fail("allocation " + id + " (" + a + ") was overwritten at byte " + i);
            }
        }
    }

    private static long word(long id, int index) {
        long x = (id + 1) * 0x9E3779B97F4A7C15L + index * 0xC2B2AE3D27D4EB4FL;
        return x ^ (x >>> 29);
    }
}
