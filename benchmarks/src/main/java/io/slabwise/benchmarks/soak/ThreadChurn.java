package io.slabwise.benchmarks.soak;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.slabwise.MemoryLimitException;

import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * Threads that start, allocate and end while everything else runs: each step
 * of the soak worker that owns it starts a batch of threads (platform or
 * virtual) and waits for them to end. Each thread releases a few buffers that
 * earlier threads left behind (a release on a thread other than the one that
 * allocated, whose own cache is gone by then), allocates and fills some
 * buffers of seeded sizes, releases all but one, and leaves that one behind.
 *
 * <pre>
 *  worker step:  start N threads ──▶ each: take up to 2 left-behind buffers, release them
 *                                          allocate k buffers (64 B - 64 KiB), fill, release k-1
 *                                          leave 1 behind (bounded: at most maxLeft left at once)
 *                join all N ──▶ checkpoint
 * </pre>
 *
 * <p>The buffers left behind are the only ones the churn holds between steps;
 * its {@link Tally} counts them exactly, so at a quiescent point the
 * category's requested bytes and live buffers must equal it.
 */
final class ThreadChurn {

    private final String name;
    private final ByteBufAllocator allocator;
    private final ThreadFactory threads;
    private final int threadsPerStep;
    private final int buffersPerThread;
    private final int maxLeft;
    private final byte[] template;
    private final Consumer<Throwable> unexpected;
    private final Tally tally;
    private final ConcurrentLinkedQueue<ByteBuf> left = new ConcurrentLinkedQueue<>();
    private final AtomicLong seeds;
    private final LongAdder started = new LongAdder();
    private final LongAdder refusals = new LongAdder();

    /**
     * @param category   the category of {@code allocator}, for the tally
     * @param threads    makes the threads (platform or virtual)
     * @param unexpected told of an error no refusal explains
     */
    ThreadChurn(String name, String category, ByteBufAllocator allocator, ThreadFactory threads, int threadsPerStep,
                int buffersPerThread, int maxLeft, byte[] template, long seed, Consumer<Throwable> unexpected) {
        this.name = name;
        this.allocator = allocator;
        this.threads = threads;
        this.threadsPerStep = threadsPerStep;
        this.buffersPerThread = buffersPerThread;
        this.maxLeft = maxLeft;
        this.template = template;
        this.unexpected = unexpected;
        this.tally = new Tally(category);
        this.seeds = new AtomicLong(seed);
    }

    /**
     * The factory of virtual threads on Java 21 and later, looked up by
     * reflection (the module compiles for Java 17), or null before Java 21.
     */
    static ThreadFactory virtualThreads() {
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            return (ThreadFactory) Class.forName("java.lang.Thread$Builder").getMethod("factory").invoke(builder);
        } catch (NoSuchMethodException | ClassNotFoundException e) {
            return null;
        } catch (IllegalAccessException | InvocationTargetException e) {
            throw new IllegalStateException("virtual threads exist but could not be made", e);
        }
    }

    /** What the churn holds between steps: the buffers left behind. */
    Tally tally() {
        return tally;
    }

    /** Threads started so far. */
    long started() {
        return started.sum();
    }

    /** Allocations refused at the ceiling or by the chunk source. */
    long refusals() {
        return refusals.sum();
    }

    /** Starts a batch of threads and waits until all have ended. */
    void step() throws InterruptedException {
        List<Thread> batch = new ArrayList<>(threadsPerStep);
        for (int i = 0; i < threadsPerStep; i++) {
            long seed = seeds.incrementAndGet();
            Thread thread = threads.newThread(() -> run(seed));
            thread.setName(name + "-" + seed);
            batch.add(thread);
            thread.start();
            started.increment();
        }
        for (Thread thread : batch) {
            thread.join();
        }
    }

    private void run(long seed) {
        try {
            for (int i = 0; i < 2; i++) {
                ByteBuf old = left.poll();
                if (old == null) {
                    break;
                }
                tally.remove(old.capacity(), 1);
                old.release();
            }
            SplittableRandom random = new SplittableRandom(seed);
            ByteBuf keep = null;
            for (int i = 0; i < buffersPerThread; i++) {
                int size = Contents.MIN_SIZE + random.nextInt(64 * 1024 - Contents.MIN_SIZE + 1);
                ByteBuf buffer;
                try {
                    buffer = allocator.directBuffer(size, size);
                } catch (MemoryLimitException | RefusingChunkSource.Refusal refused) {
                    refusals.increment();
                    continue;
                }
                Contents.fill(buffer, template, (int) seed);
                Contents.check(buffer, (int) seed, name + " buffer");
                if (keep == null) {
                    keep = buffer;
                } else {
                    buffer.release();
                }
            }
            if (keep != null) {
                if (left.size() < maxLeft) {
                    tally.add(keep.capacity(), 1); // counted before another thread can take it off
                    left.add(keep);
                } else {
                    keep.release();
                }
            }
        } catch (RuntimeException | Error e) {
            unexpected.accept(e);
        }
    }

    /** Releases every buffer left behind. */
    void releaseAll() {
        for (ByteBuf buffer = left.poll(); buffer != null; buffer = left.poll()) {
            tally.remove(buffer.capacity(), 1);
            buffer.release();
        }
    }
}
