package io.slabwise;

/**
 * A {@link ChunkSource} that maps every region straight from the operating
 * system with {@code mmap} and unmaps it on release, so that memory given
 * back leaves the process at once, whatever malloc would have kept.
 *
 * <p>This is the Java 17 version of the class: there is no portable way to
 * call {@code mmap} on Java 17, so {@link #create()} returns null and the pool
 * uses {@link ChunkSource#direct()}. The multi-release jar carries a Java 22
 * version built on the Foreign Function and Memory API, used automatically
 * on Java 22 and later.
 */
final class MappedChunkSource {

    private MappedChunkSource() {
    }

    /** The mapping source on this Java version, or null when there is none. */
    static ChunkSource create() {
        return null;
    }
}
