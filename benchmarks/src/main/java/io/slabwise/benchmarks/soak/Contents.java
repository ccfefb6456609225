package io.slabwise.benchmarks.soak;

import io.netty.buffer.ByteBuf;

/**
 * What the soak writes into a buffer and checks when it reads it: a template
 * of seeded bytes, with the entry's stamp in the first four bytes and the
 * stamp's complement in the last four. A buffer whose memory was handed to
 * someone else, or a move that copied the wrong bytes, fails the check.
 */
final class Contents {

    /** The smallest buffer that holds both ends of a stamp. */
    static final int MIN_SIZE = 8;

    private Contents() {
    }

    /** Writes {@code template} up to {@code buffer}'s capacity from writer index 0, then the stamp. */
    static void fill(ByteBuf buffer, byte[] template, int stamp) {
        int size = buffer.capacity();
        for (int written = 0; written < size; written += template.length) {
            buffer.writeBytes(template, 0, Math.min(template.length, size - written));
        }
        buffer.setInt(0, stamp);
        buffer.setInt(size - 4, ~stamp);
    }

    /**
     * Throws when {@code buffer}'s two ends do not hold {@code stamp}.
     *
     * @throws IllegalStateException naming the entry and what was found
     */
    static void check(ByteBuf buffer, int stamp, String what) {
        int size = buffer.writerIndex();
        int head = buffer.getInt(0);
        int tail = buffer.getInt(size - 4);
        if (head != stamp || tail != ~stamp) {
            throw new IllegalStateException(what + " of " + size + " bytes lost its contents: stamp " + stamp
                    + " expected, found " + head + " and " + ~tail);
        }
    }
}
