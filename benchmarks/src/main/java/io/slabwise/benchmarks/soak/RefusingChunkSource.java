package io.slabwise.benchmarks.soak;

import io.slabwise.ChunkSource;
import io.slabwise.NativeRegion;

import java.util.SplittableRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * A chunk source that refuses now and then: each request for a region is
 * refused with probability 1/N, drawn from a seeded sequence, by throwing
 * {@link Refusal}, the {@link OutOfMemoryError} a source throws when the
 * operating system or the JVM's direct-memory limit has no memory for it.
 * Every other request, and every release, goes to the source it wraps.
 *
 * <pre>
 *  pool ── allocate(size) ──▶ refusing source ── 1 in N: throw Refusal
 *                                              └ else ──▶ wrapped source (mmap or direct buffers)
 * </pre>
 *
 * <p>The soak shares one of these between its main pool and its extra pools,
 * so every path that takes memory meets a failing source: a chunk, a block,
 * a dedicated region, a compaction's move. The program catches only
 * {@link Refusal}: a real {@link OutOfMemoryError} still ends it.
 */
final class RefusingChunkSource implements ChunkSource {

    /**
     * The error a refused request throws; an {@link OutOfMemoryError}, as the
     * chunk source contract says, of a class of its own so that the soak can
     * tell it from a real one.
     */
    static final class Refusal extends OutOfMemoryError {
        private static final long serialVersionUID = 1L;

        Refusal(int size) {
            super("the soak's chunk source refused " + size + " bytes (an injected failure)");
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this; // thrown often and always caught: no stack trace to fill
        }
    }

    private final ChunkSource source;
    private final int oneIn;
    /** Guarded by itself: regions are taken rarely (a chunk, a block or a large buffer at a time). */
    private final SplittableRandom random;
    private final LongAdder refusals = new LongAdder();
    private final LongAdder granted = new LongAdder();

    /**
     * @param source the source that serves what is not refused
     * @param oneIn  refuse one request in this many on average; 0 refuses none
     * @param seed   the seed of the sequence that picks the refused requests
     */
    RefusingChunkSource(ChunkSource source, int oneIn, long seed) {
        if (oneIn < 0) {
            throw new IllegalArgumentException("one refusal in " + oneIn + " requests: must be 0 (none) or positive");
        }
        this.source = source;
        this.oneIn = oneIn;
        this.random = new SplittableRandom(seed);
    }

    @Override
    public NativeRegion allocate(int size) {
        if (oneIn > 0) {
            boolean refuse;
            synchronized (random) {
                refuse = random.nextInt(oneIn) == 0;
            }
            if (refuse) {
                refusals.increment();
                throw new Refusal(size);
            }
        }
        NativeRegion region = source.allocate(size);
        granted.increment();
        return region;
    }

    @Override
    public void release(NativeRegion region) {
        source.release(region);
    }

    /** Requests refused so far. */
    long refusals() {
        return refusals.sum();
    }

    /** Requests served so far. */
    long granted() {
        return granted.sum();
    }

    /** Whether {@code error}, or one of its causes, is a refusal of this kind of source. */
    static boolean isRefusal(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof Refusal) {
                return true;
            }
        }
        return false;
    }
}
