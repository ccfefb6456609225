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
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

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
 *
 * <p>At that limit {@code munmap} itself can fail: unmapping a chunk in the
 * middle of a merged mapping splits it in two, one mapping more. The region's
 * pages are then dropped with {@code madvise(MADV_DONTNEED)}, so its memory
 * leaves the process all the same, and its address range waits in a queue
 * for a later release or allocation to unmap it (a few at a time); a warning
 * says so once.
 */
@SuppressWarnings("restricted") // calling mmap and munmap is the point of this class
final class MappedChunkSource implements ChunkSource {

    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_PRIVATE = 2;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final int MADV_DONTNEED = 4;
    /** Ranges left mapped that a call retries to unmap, at most, before its own work. */
    private static final int RETRIES_PER_CALL = 4;
    private static final System.Logger LOGGER = System.getLogger(MappedChunkSource.class.getName());

    private final MethodHandle mmap;
    private final MethodHandle munmap;
    private final MethodHandle madvise;
    /** Address ranges given back whose unmapping failed (their pages are dropped): {address, size}. */
    private final ConcurrentLinkedQueue<long[]> leftMapped = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean warned = new AtomicBoolean();
    /** The layout of the state {@code mmap} leaves behind: {@code errno}. */
    private final StructLayout callState;
    private final VarHandle errno;

    private MappedChunkSource(MethodHandle mmap, MethodHandle munmap, MethodHandle madvise, StructLayout callState) {
        this.mmap = mmap;
        this.munmap = munmap;
        this.madvise = madvise;
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
            MethodHandle madvise = linker.downcallHandle(linker.defaultLookup().find("madvise").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT));
            return new MappedChunkSource(mmap, munmap, madvise, Linker.Option.captureStateLayout());
        } catch (RuntimeException | Error e) {
            return null; // no native access: fall back to direct buffers
        }
    }

    @Override
    public NativeRegion allocate(int size) {
        retryLeftMapped();
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
            throw new OutOfMemoryError(MappingRefusal.message("mmap", size, error));
        }
        ByteBuffer buffer = segment.reinterpret(size).asByteBuffer();
        return new NativeRegion(buffer, segment.address(), size);
    }

    @Override
    public void release(NativeRegion region) {
        retryLeftMapped();
        if (unmap(region.address(), region.size())) {
            return;
        }
        // at vm.max_map_count an unmapping that splits a mapping fails: the pages go now, the range later
        if (dropPages(region.address(), region.size()) != 0) {
            throw new IllegalStateException("munmap and madvise of " + region.size() + " bytes at " + region.address()
                    + " failed");
        }
        leftMapped.add(new long[] {region.address(), region.size()});
        if (warned.compareAndSet(false, true)) {
            LOGGER.log(System.Logger.Level.WARNING, MappingRefusal.message("munmap", region.size(), MappingRefusal.ENOMEM)
                    + ". Its pages were dropped (madvise), so its memory left the process; its address range stays"
                    + " mapped until a later release can unmap it. Said once.");
        }
    }

    /** Retries to unmap a few of the ranges left mapped; stops at the first that fails again. */
    private void retryLeftMapped() {
        for (int i = 0; i < RETRIES_PER_CALL; i++) {
            long[] range = leftMapped.poll();
            if (range == null) {
                return;
            }
            if (!unmap(range[0], range[1])) {
                leftMapped.add(range);
                return;
            }
        }
    }

    /** Ranges given back whose address range is still mapped; for tests and reports. */
    int leftMappedCount() {
        return leftMapped.size();
    }

    private boolean unmap(long address, long size) {
        try {
            return (int) munmap.invokeExact(MemorySegment.ofAddress(address), size) == 0;
        } catch (Throwable t) {
            throw new IllegalStateException("munmap failed", t);
        }
    }

    private int dropPages(long address, long size) {
        try {
            return (int) madvise.invokeExact(MemorySegment.ofAddress(address), size, MADV_DONTNEED);
        } catch (Throwable t) {
            throw new IllegalStateException("madvise failed", t);
        }
    }

    @Override
    public String toString() {
        return "mapped";
    }
}
