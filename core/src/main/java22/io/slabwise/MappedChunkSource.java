package io.slabwise;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Locale;

/**
 * A {@link ChunkSource} that maps every region straight from the operating
 * system with {@code mmap(MAP_PRIVATE | MAP_ANONYMOUS)} and unmaps it with
 * {@code munmap} on release, through the Foreign Function and Memory API
 * (Java 22 and later). Memory given back leaves the process at once: no
 * malloc arena can keep it resident, whatever {@code MALLOC_MMAP_THRESHOLD_}
 * says.
 *
 * <p>Calling native functions is a restricted operation: run with
 * {@code --enable-native-access=ALL-UNNAMED} (or the module's name) to avoid
 * the JVM's warning. Used on Linux on x86-64 and AArch64; elsewhere
 * {@link #create()} returns null and the pool uses direct buffers.
 *
 * <p>A mapping the operating system refuses fails with an
 * {@link OutOfMemoryError} that says why: the error number, and for
 * {@code ENOMEM} how many mappings the process holds against
 * {@code vm.max_map_count} (the kernel merges neighbouring chunks into one
 * mapping, but a pool of many small chunks with holes between them can
 * reach the limit; a larger chunk size or a higher limit is the remedy).
 */
@SuppressWarnings("restricted") // calling mmap and munmap is the point of this class
final class MappedChunkSource implements ChunkSource {

    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_PRIVATE = 2;
    private static final int MAP_ANONYMOUS = 0x20;

    private final MethodHandle mmap;
    private final MethodHandle munmap;
    /** The layout of the state {@code mmap} leaves behind: {@code errno}. */
    private final StructLayout callState;
    private final VarHandle errno;

    private MappedChunkSource(MethodHandle mmap, MethodHandle munmap, StructLayout callState) {
        this.mmap = mmap;
        this.munmap = munmap;
        this.callState = callState;
        this.errno = callState.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    }

    /** The mapping source, or null where it is not supported or native access is denied. */
    static ChunkSource create() {
        return Holder.INSTANCE;
    }

    /** Looks the native functions up once. */
    private static final class Holder {
        static final ChunkSource INSTANCE = lookUp();
    }

    private static ChunkSource lookUp() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64") || arch.equals("aarch64"))
                || Boolean.getBoolean("slabwise.noMappedChunks")) {
            return null;
        }
        try {
            Linker linker = Linker.nativeLinker();
            MethodHandle mmap = linker.downcallHandle(linker.defaultLookup().find("mmap").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG),
                    Linker.Option.captureCallState("errno"));
            MethodHandle munmap = linker.downcallHandle(linker.defaultLookup().find("munmap").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
            return new MappedChunkSource(mmap, munmap, Linker.Option.captureStateLayout());
        } catch (RuntimeException | Error e) {
            return null; // no native access: fall back to direct buffers
        }
    }

    @Override
    public NativeRegion allocate(int size) {
        MemorySegment segment;
        int error;
        try (Arena state = Arena.ofConfined()) {
            MemorySegment capturedState = state.allocate(callState);
            try {
                segment = (MemorySegment) mmap.invokeExact(capturedState, MemorySegment.NULL, (long) size,
                        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
            } catch (Throwable t) {
                throw new IllegalStateException("mmap failed", t);
            }
            error = (int) errno.get(capturedState, 0L);
        }
        if (segment.address() == -1L || segment.address() == 0L) {
            throw new OutOfMemoryError(MappingRefusal.message(size, error));
        }
        ByteBuffer buffer = segment.reinterpret(size).asByteBuffer();
        return new NativeRegion(buffer, segment.address(), size);
    }

    @Override
    public void release(NativeRegion region) {
        int result;
        try {
            result = (int) munmap.invokeExact(MemorySegment.ofAddress(region.address()), (long) region.size());
        } catch (Throwable t) {
            throw new IllegalStateException("munmap failed", t);
        }
        if (result != 0) {
            throw new IllegalStateException("munmap of " + region.size() + " bytes at " + region.address() + " failed");
        }
    }

    @Override
    public String toString() {
        return "mapped";
    }
}
