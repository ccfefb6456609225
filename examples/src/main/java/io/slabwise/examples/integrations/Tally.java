package io.slabwise.examples.integrations;

import java.util.concurrent.atomic.LongAdder;

/**
 * What one side sent or received: bodies, bytes, and a digest of the
 * contents that does not depend on the order bodies came in (the sum of a
 * mix of each body's CRC32C and length). Two tallies of the same bodies are
 * equal; a body lost, added, cut or with one byte changed makes them differ.
 *
 * <p>Safe to add to from any number of threads.
 */
public final class Tally {

    private final LongAdder bodies = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final LongAdder digest = new LongAdder();

    /** Counts one body of {@code length} bytes whose CRC32C is {@code crc}. */
    public void add(int crc, int length) {
        bodies.increment();
        bytes.add(length);
        digest.add(((crc & 0xFFFF_FFFFL) + 1) * 0x9E37_79B9_7F4A_7C15L + length);
    }

    /** Bodies counted. */
    public long bodies() {
        return bodies.sum();
    }

    /** Bytes counted. */
    public long bytes() {
        return bytes.sum();
    }

    /** The order-independent digest of the contents. */
    public long digest() {
        return digest.sum();
    }

    /** Whether both tallies counted the same bodies with the same contents. */
    public boolean sameAs(Tally other) {
        return bodies() == other.bodies() && bytes() == other.bytes() && digest() == other.digest();
    }

    @Override
    public String toString() {
        return String.format("%,d bodies, %,d bytes, digest %016x", bodies(), bytes(), digest());
    }
}
