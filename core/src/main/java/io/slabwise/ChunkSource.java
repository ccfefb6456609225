package io.slabwise;

/**
 * Where a pool takes native memory from, and gives it back to: the only place
 * memory crosses between the pool and the operating system.
 *
 * <p>The pool calls {@link #allocate} for each new chunk and for each huge
 * allocation, and {@link #release} when that memory is given back. Calls may
 * come from any thread, concurrently.
 */
public interface ChunkSource {

    /**
     * Takes {@code size} bytes of native memory.
     *
     * @param size a positive size in bytes
     * @return the new region
     * @throws OutOfMemoryError when the memory cannot be had
     */
    NativeRegion allocate(int size);

    /**
     * Gives a region back; it must have come from this source and is not used
     * afterwards.
     *
     * <p>If it throws, the pool counts the region as given back all the same:
     * its bytes are no longer committed (nor held against the ceiling), and
     * the pool never passes it to {@code release} again, so whatever became of
     * its memory is this source's to account for. A {@link RuntimeException}
     * is logged at {@code WARNING} and not passed on: the release comes up
     * inside whatever emptied the region (a buffer's release on any thread, a
     * thread cache's flush, a trim, the decay, a close), which completes. An
     * {@link Error} is passed on.
     */
    void release(NativeRegion region);

    /**
     * The default source: direct {@link java.nio.ByteBuffer}s, freed eagerly
     * when released rather than when the garbage collector finds them.
     */
    static ChunkSource direct() {
        return DirectChunkSource.INSTANCE;
    }

    /**
     * The source a pool uses unless told otherwise: on Java 22 and later on
     * Linux, regions mapped with {@code mmap} and unmapped on release (see
     * docs/operations.md on native access); otherwise {@link #direct()}.
     */
    static ChunkSource preferred() {
        ChunkSource mapped = MappedChunkSource.create();
        return mapped != null ? mapped : direct();
    }
}
