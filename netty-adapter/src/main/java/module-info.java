/**
 * Slabwise for Netty: a {@code ByteBufAllocator} over the Slabwise memory
 * engine, its buffers, category views, and the sequential and block buffer
 * allocators. It exports {@code io.slabwise.netty} alone.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // Netty 4.1 jars are automatic modules
module io.slabwise.netty {
    requires transitive io.slabwise;
    requires transitive io.netty.buffer;
    requires transitive io.netty.common;

    exports io.slabwise.netty;
}
