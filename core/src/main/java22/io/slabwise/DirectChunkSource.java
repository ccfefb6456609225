package io.slabwise;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A {@link ChunkSource} of native memory from {@code malloc}: the source on
 * Java 22 and later where mapping is turned off or not supported.
 *
 * <p>This is the Java 22 version of the class. Each region is allocated in an
 * {@link Arena} of its own and freed at once when the arena is closed on
 * {@link #release}: no {@code sun.misc.Unsafe} call (its {@code invokeCleaner}
 * warns on JDK 24 and later) and no restricted method (so no native-access
 * warning). Such memory is not counted by {@code -XX:MaxDirectMemorySize}, so
 * a pool without a ceiling of its own takes the JVM's maximum direct memory
 * as its ceiling (see {@link PoolConfig.Settings#maxMemory(long)}). The Java 17
 * version uses direct {@code ByteBuffer}s. As there, a pool takes its chunks
 * in groups of 32 MiB past its first few MiB (see {@link RegionGroups}).
 */
final class DirectChunkSource implements ChunkSource {

    static final DirectChunkSource INSTANCE = new DirectChunkSource();

    private DirectChunkSource() {
    }

    /** Whether regions count against the JVM's {@code -XX:MaxDirectMemorySize}: not these. */
    static boolean countedByJvmLimit() {
        return false;
    }

    @Override
    public NativeRegion allocate(int size) {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment segment = arena.allocate(size, 4096);
            return new NativeRegion(segment.asByteBuffer(), segment.address(), size, arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    @Override
    public void release(NativeRegion region) {
        ((Arena) region.sourceState()).close();
    }

    @Override
    public String toString() {
        return "direct";
    }
}
