package io.slabwise.benchmarks.soak;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.slabwise.ChunkSource;
import io.slabwise.MemoryLimitException;
import io.slabwise.PoolStats;
import io.slabwise.netty.BlockByteBufAllocator;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * Small pools opened and closed beside the soak's main pool, on the same
 * (refusing) chunk source: each step opens one with a small ceiling and small
 * chunks, allocates buffers of seeded sizes from its general pool, a
 * sequential allocator and a block pool until the ceiling refuses or a count
 * is reached, releases them all in a seeded order, closes it, and checks that
 * it holds nothing: no requested bytes, no live buffers, nothing committed.
 *
 * <pre>
 *  step:  open (maxMemory = M, 64 KiB first chunks) ─ allocate up to K buffers ─ release all ─ close
 *         ─ requested 0, live 0, committed 0, else a violation
 * </pre>
 *
 * <p>Between steps no extra pool is open, so at a quiescent point the
 * process holds only the main pool's memory.
 */
final class ExtraPools {

    private final ChunkSource source;
    private final long maxMemory;
    private final int buffersPerPool;
    private final SplittableRandom random;
    private final byte[] template;
    private final Consumer<String> violation;
    private final Consumer<Throwable> unexpected;
    private final LongAdder opened = new LongAdder();
    private final LongAdder refusals = new LongAdder();

    /**
     * @param violation  told what a pool still held after it was closed
     * @param unexpected told of an error no refusal explains
     */
    ExtraPools(ChunkSource source, long maxMemory, int buffersPerPool, long seed, byte[] template,
               Consumer<String> violation, Consumer<Throwable> unexpected) {
        this.source = source;
        this.maxMemory = maxMemory;
        this.buffersPerPool = buffersPerPool;
        this.random = new SplittableRandom(seed);
        this.template = template;
        this.violation = violation;
        this.unexpected = unexpected;
    }

    /** Pools opened (and closed) so far. */
    long opened() {
        return opened.sum();
    }

    /** Allocations refused at a pool's ceiling or by the chunk source. */
    long refusals() {
        return refusals.sum();
    }

    /** Opens a pool, fills it, empties it, closes it and checks that it holds nothing. */
    void step() {
        SlabwiseAllocator pool = SlabwiseAllocator.builder().chunkSource(source).maxMemory(maxMemory)
                .chunkSize(1 << 20).firstChunkSize(64 << 10).build();
        opened.increment();
        List<ByteBuf> held = new ArrayList<>();
        try {
            ByteBufAllocator general = pool.forCategory("extra");
            SequentialByteBufAllocator sequential = pool.sequential("extra_log");
            BlockByteBufAllocator blocks = pool.blocks("extra_blocks", 64 << 10, 1);
            for (int i = 0; i < buffersPerPool; i++) {
                int kind = random.nextInt(3);
                int size = kind == 2 ? 16 << 10 << random.nextInt(5) : Contents.MIN_SIZE + random.nextInt(32 << 10);
                ByteBuf buffer;
                try {
                    buffer = kind == 0 ? general.directBuffer(size, size)
                            : kind == 1 ? sequential.tryAllocate(size) : blocks.tryAllocate(size);
                } catch (MemoryLimitException | RefusingChunkSource.Refusal refused) {
                    buffer = null;
                }
                if (buffer == null) {
                    refusals.increment();
                    continue;
                }
                Contents.fill(buffer, template, i);
                held.add(buffer);
            }
            for (int i = held.size() - 1; i > 0; i--) { // release in a seeded order, not the order of allocation
                int j = random.nextInt(i + 1);
                ByteBuf swap = held.get(i);
                held.set(i, held.get(j));
                held.set(j, swap);
            }
        } catch (RuntimeException | Error e) {
            unexpected.accept(e);
        } finally {
            for (ByteBuf buffer : held) {
                buffer.release();
            }
            pool.close();
        }
        PoolStats stats = pool.stats();
        if (stats.requestedBytes() != 0 || stats.liveAllocations() != 0 || stats.committedBytes() != 0) {
            violation.accept("an extra pool, all its buffers released and closed, still holds requested="
                    + stats.requestedBytes() + " live=" + stats.liveAllocations() + " committed=" + stats.committedBytes()
                    + ": " + stats.summary());
        }
    }
}
