package io.slabwise;

import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The chunk source of the concurrency tests: it knows which regions it handed
 * out, so a test can check that every chunk went back, and it fails at once
 * when a region is given back twice (a chunk recycled by two threads).
 *
 * <h2>No native memory per chunk</h2>
 * A jcstress run keeps tens of thousands of test states alive at once, each
 * holding a chunk or two; real chunks would take gigabytes of direct memory.
 * The engine never reads or writes the bytes of a chunk (its bookkeeping is on
 * the heap) and neither do the tests, so every region of one size is a view of
 * the same direct buffer: each region is a distinct object with the size,
 * buffer and address a real one has, and none costs native memory of its own.
 * Never use this source for a pool whose memory is written.
 */
final class CountingChunkSource implements ChunkSource {

    /** One direct buffer per region size, shared by every region of that size in the JVM. */
    private static final ConcurrentHashMap<Integer, ByteBuffer> BACKING = new ConcurrentHashMap<>();

    /** Regions handed out by this source and not given back. */
    private final Set<NativeRegion> outstanding = ConcurrentHashMap.newKeySet();

    @Override
    public NativeRegion allocate(int size) {
        ByteBuffer view = BACKING.computeIfAbsent(size, ByteBuffer::allocateDirect).duplicate();
        NativeRegion region = new NativeRegion(view, BufferAddress.of(view), size);
        outstanding.add(region);
        return region;
    }

    @Override
    public void release(NativeRegion region) {
        if (!outstanding.remove(region)) {
            throw new IllegalStateException("a region of " + region.size()
                    + " bytes was given back twice, or was not taken from this source");
        }
    }

    /** Regions taken from this source and not given back yet. */
    int outstanding() {
        return outstanding.size();
    }
}
