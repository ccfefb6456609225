package io.slabwise;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A block of native memory taken from a {@link ChunkSource}: a direct
 * {@link ByteBuffer} over it, its base address and its size.
 *
 * <p>A region is immutable; it stays valid until it is given back with
 * {@link ChunkSource#release(NativeRegion)}, after which neither the buffer nor
 * the address may be used.
 */
public final class NativeRegion {

    private final ByteBuffer buffer;
    private final long address;
    private final int size;
    /** What the built-in chunk sources keep to free the region; null for others. */
    private final Object sourceState;

    /**
     * Describes a region.
     *
     * @param buffer  a direct buffer spanning exactly the region, position 0, limit = capacity = {@code size}
     * @param address the native address of the region's first byte; not 0
     * @param size    the region's size in bytes
     */
    public NativeRegion(ByteBuffer buffer, long address, int size) {
        this(buffer, address, size, null);
    }

    /** A region with what its built-in chunk source needs to free it. */
    NativeRegion(ByteBuffer buffer, long address, int size, Object sourceState) {
        this.buffer = Objects.requireNonNull(buffer, "buffer");
        if (!buffer.isDirect() || buffer.capacity() != size) {
            throw new IllegalArgumentException("the buffer must be direct and exactly " + size + " bytes");
        }
        if (address == 0) {
            throw new IllegalArgumentException("a region's address must not be 0");
        }
        this.address = address;
        this.size = size;
        this.sourceState = sourceState;
    }

    /** What the chunk source that made this region keeps to free it. */
    Object sourceState() {
        return sourceState;
    }

    /** The direct buffer spanning the region; callers must not change its position or limit. */
    public ByteBuffer buffer() {
        return buffer;
    }

    /** The native address of the region's first byte. */
    public long address() {
        return address;
    }

    /** The region's size in bytes. */
    public int size() {
        return size;
    }
}
