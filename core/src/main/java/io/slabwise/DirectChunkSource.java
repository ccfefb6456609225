package io.slabwise;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;

/**
 * A {@link ChunkSource} whose regions are direct {@link ByteBuffer}s: the
 * source on Java 17, and on Java 22+ where mapping is turned off or not
 * supported.
 *
 * <p>Memory comes from the JVM's direct-memory allocator (counted against
 * {@code -XX:MaxDirectMemorySize} and shown by the JVM's {@code direct}
 * buffer-pool MXBean) and is freed at once on {@link #release} through the
 * buffer's cleaner, not when the garbage collector gets to it. The cleaner is
 * run through {@code sun.misc.Unsafe.invokeCleaner}, looked up reflectively;
 * without it the source still works, but frees memory only when the buffer is
 * collected. The address comes from {@link BufferAddress}.
 *
 * <p>A pool does not take its chunks from this source one by one: past its
 * first few MiB it takes groups of 32 MiB and carves chunks out of them (see
 * {@link CommittedMemory} and {@link RegionGroups}), because glibc always
 * maps a request that large and unmaps it when it is freed, where a freed
 * 4 MiB buffer may stay resident in malloc's arenas.
 */
final class DirectChunkSource implements ChunkSource {

    static final DirectChunkSource INSTANCE = new DirectChunkSource();

    private static final MethodHandle INVOKE_CLEANER = lookUpCleaner();

    private static MethodHandle lookUpCleaner() {
        try {
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
            theUnsafe.setAccessible(true);
            return MethodHandles.publicLookup().findVirtual(unsafeClass, "invokeCleaner",
                    MethodType.methodType(void.class, ByteBuffer.class)).bindTo(theUnsafe.get(null));
        } catch (Throwable t) {
            return null;
        }
    }

    private DirectChunkSource() {
    }

    /** Whether regions count against the JVM's {@code -XX:MaxDirectMemorySize}: they do, as direct buffers. */
    static boolean countedByJvmLimit() {
        return true;
    }

    @Override
    public NativeRegion allocate(int size) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(size);
        return new NativeRegion(buffer, BufferAddress.of(buffer), size);
    }

    @Override
    public void release(NativeRegion region) {
        if (INVOKE_CLEANER != null) {
            try {
                INVOKE_CLEANER.invokeExact(region.buffer());
            } catch (Throwable t) {
                throw new IllegalStateException("could not free a direct buffer", t);
            }
        }
    }

    @Override
    public String toString() {
        return "direct";
    }
}
