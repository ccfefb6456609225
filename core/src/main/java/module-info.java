/**
 * Slabwise's memory engine: chunks carved into runs and subpages, thread
 * caches, the sequential allocator and the block pool, categories, limits and
 * exact accounting. It exports its API ({@code io.slabwise}) and the optional
 * Micrometer binder ({@code io.slabwise.metrics}); the engine itself is
 * package-private, and {@code io.slabwise.internal} is for the Netty adapter
 * alone.
 */
// the qualified export names a module built later; Micrometer (optional) is an automatic module
@SuppressWarnings({"module", "requires-automatic"})
module io.slabwise {
    requires java.management;
    requires jdk.management;
    requires jdk.jfr;
    requires jdk.unsupported;
    requires static micrometer.core;

    exports io.slabwise;
    exports io.slabwise.metrics;
    exports io.slabwise.internal to io.slabwise.netty;
}
