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
        warnIfGlibcMayKeepFreedChunks();
    }

    /**
     * Direct buffers come from {@code malloc}. With glibc, once a freed chunk
     * has raised malloc's dynamic mmap threshold past the chunk size, later
     * chunks come from malloc's arenas, and freeing them may leave their pages
     * resident. Setting {@code MALLOC_MMAP_THRESHOLD_} (e.g. 131072) in the
     * environment pins the threshold so every chunk is mapped and unmapped on
     * its own. Warns once when the process runs on glibc without it.
     */
    private static void warnIfGlibcMayKeepFreedChunks() {
        boolean linux = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux");
        if (!linux || System.getenv("MALLOC_MMAP_THRESHOLD_") != null || Boolean.getBoolean("slabwise.noGlibcWarning")) {
            return;
        }
        boolean glibc = java.nio.file.Files.exists(java.nio.file.Path.of("/proc/self/maps")) && mapsMention("libc.so.6");
        if (glibc) {
            System.getLogger("io.slabwise").log(System.Logger.Level.WARNING,
                    "Slabwise chunks come from malloc and this process runs on glibc without MALLOC_MMAP_THRESHOLD_:"
                            + " chunks given back to the OS may stay resident. Set MALLOC_MMAP_THRESHOLD_=131072 in the"
                            + " environment (or -Dslabwise.noGlibcWarning=true to silence this warning).");
        }
    }

    private static boolean mapsMention(String library) {
        try (java.util.stream.Stream<String> lines = java.nio.file.Files.lines(java.nio.file.Path.of("/proc/self/maps"))) {
            return lines.anyMatch(line -> line.endsWith(library));
        } catch (java.io.IOException | RuntimeException e) {
            return false;
        }
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
