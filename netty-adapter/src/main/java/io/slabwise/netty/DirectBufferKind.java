package io.slabwise.netty;

/**
 * Which of the three direct buffer classes an allocator makes, chosen once
 * when it is built, from what {@link NativeAccess} allows and the builder's
 * {@code nativeAccess} and {@code memoryAddress} settings:
 *
 * <pre>
 *  kind            reads and writes         hasMemoryAddress()               class
 *  NATIVE          native loads and stores  true                             SlabwiseUnsafeDirectByteBuf
 *  NIO             the chunk's ByteBuffer   NativeAccess.ADDRESS_WITHOUT_IT  SlabwiseDirectByteBuf
 *  NIO_NO_ADDRESS  the chunk's ByteBuffer   false                            SlabwiseNoAddressDirectByteBuf
 * </pre>
 *
 * A buffer knows its kind by its class alone, so the choice costs the buffer
 * object no field; a recycled object is only ever reused by the allocator
 * that made it, so it keeps its kind.
 */
enum DirectBufferKind {
    /** Native loads and stores, and the address they use. */
    NATIVE,
    /** NIO access; the address reported where Netty's own buffers report theirs without native access. */
    NIO,
    /** NIO access, and never an address: native code is handed a {@code ByteBuffer} view instead. */
    NIO_NO_ADDRESS;

    /**
     * The kind for an allocator's settings. Native access wins over
     * {@code memoryAddress}: Java's own reads and writes use the address
     * then, so there is nothing to keep from native code.
     */
    static DirectBufferKind of(boolean nativeAccess, boolean memoryAddress) {
        if (nativeAccess && NativeAccess.AVAILABLE) {
            return NATIVE;
        }
        return memoryAddress ? NIO : NIO_NO_ADDRESS;
    }
}
