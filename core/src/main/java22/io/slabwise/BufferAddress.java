package io.slabwise;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Reads the native address of a direct {@link ByteBuffer}.
 *
 * <p>This is the Java 22 version of the class, on the Foreign Function and
 * Memory API: a segment over a direct buffer knows the buffer's address, and
 * making one is not a restricted operation, so no {@code sun.misc.Unsafe}
 * method is called and the JVM prints no warning.
 */
final class BufferAddress {

    private BufferAddress() {
    }

    /** The native address of {@code buffer}'s first byte. */
    static long of(ByteBuffer buffer) {
        return MemorySegment.ofBuffer(buffer).address() - buffer.position();
    }
}
