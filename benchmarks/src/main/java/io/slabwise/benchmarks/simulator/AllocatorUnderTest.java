package io.slabwise.benchmarks.simulator;

import io.netty.buffer.AdaptiveByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PooledByteBufAllocator;
import io.slabwise.CompactionStats;
import io.slabwise.LimitPolicy;
import io.slabwise.MemoryLimitException;
import io.slabwise.netty.BlockByteBufAllocator;
import io.slabwise.netty.BufferRelocator;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;

import java.util.Optional;

/**
 * The allocators the simulator compares. A fresh instance is made for every
 * (workload, allocator) run; the workload threads are Netty
 * {@code FastThreadLocalThread}s, so Netty's thread caches apply to them.
 *
 * <ul>
 *   <li>{@code slabwise}: each workload on its dedicated strategy: log records
 *       from the sequential allocator (category {@code log_cache}), cache blocks
 *       from the block pool ({@code block_cache}), the phase-shifting mix from
 *       {@code forCategory("phase")} and network buffers from
 *       {@code SlabwiseAllocator.directBuffer} (both the general pool).
 *       Committed and reserved bytes are the pool's own counters, the same
 *       figures as {@code stats().committedBytes()} and
 *       {@code stats().reservedBytes()} without taking a full snapshot at
 *       every sample. The only source that can move buffers: it offers the
 *       {@code -moving} workloads a {@link Relocation}, and with a background
 *       budget its pool compacts once a second on its own.</li>
 *   <li>{@code slabwise-dropin}: Slabwise as a user who only sets
 *       {@code ChannelOption.ALLOCATOR} gets it: every buffer of every
 *       workload, cache entries included, from
 *       {@code SlabwiseAllocator.directBuffer} (the general pool), default
 *       settings. Committed and reserved bytes as for {@code slabwise}.</li>
 *   <li>{@code pooled}: Netty's {@code new PooledByteBufAllocator(true)}
 *       (direct, default arenas and caches). Committed bytes are
 *       {@code metric().usedDirectMemory()}; reserved bytes are not exposed.</li>
 *   <li>{@code adaptive}: Netty's {@code new AdaptiveByteBufAllocator(true, true)}
 *       (direct, magazines cached on {@code FastThreadLocalThread}s as on event
 *       loops). Committed bytes are {@code metric().usedDirectMemory()}.</li>
 *   <li>{@code adaptive-shared}: Netty's {@code new AdaptiveByteBufAllocator(true, false)}:
 *       magazines cached only on event-loop threads, so the workload threads
 *       (not event loops) share its striped magazines, as with Netty's default
 *       {@code new AdaptiveByteBufAllocator()} on plain threads. It holds less
 *       than {@code adaptive} when several threads each hold little (the
 *       {@code proxy} workloads). Committed bytes as for {@code adaptive}.</li>
 * </ul>
 */
enum AllocatorUnderTest {
    /** Slabwise, each workload on its dedicated strategy. */
    slabwise("slabwise"),
    /** Slabwise as a drop-in replacement: every buffer from the general pool's {@code directBuffer}. */
    dropin("slabwise-dropin"),
    /** Netty's pooled allocator. */
    pooled("pooled"),
    /** Netty's adaptive allocator. */
    adaptive("adaptive"),
    /** Netty's adaptive allocator with magazines shared by threads that are not event loops. */
    adaptiveShared("adaptive-shared");

    private final String label;

    AllocatorUnderTest(String label) {
        this.label = label;
    }

    /** The name on the command line, in the table, the charts and the file names. */
    String label() {
        return label;
    }

    /** The allocator of this label; throws IllegalArgumentException naming the choices if there is none. */
    static AllocatorUnderTest of(String label) {
        for (AllocatorUnderTest a : values()) {
            if (a.label.equals(label)) {
                return a;
            }
        }
        throw new IllegalArgumentException("unknown allocator '" + label
                + "': use slabwise, slabwise-dropin, pooled, adaptive or adaptive-shared");
    }

    /**
     * A new source; for Slabwise, {@code maxMemory} is its ceiling (caches get
     * null at the ceiling and evict, network buffers wait) and
     * {@code compactionBytesPerSecond} the budget of its background compaction
     * (0: none). The other allocators have neither.
     */
    BufferSource create(long maxMemory, long compactionBytesPerSecond) {
        switch (this) {
            case slabwise:
                return new SlabwiseSource(maxMemory, compactionBytesPerSecond);
            case dropin:
                if (maxMemory != Long.MAX_VALUE) {
                    throw new IllegalArgumentException("the drop-in mode runs without a ceiling");
                }
                return new DropInSource();
            case pooled:
                return new NettySource(new PooledByteBufAllocator(true));
            case adaptive:
                return new NettySource(new AdaptiveByteBufAllocator(true, true));
            default:
                return new NettySource(new AdaptiveByteBufAllocator(true, false));
        }
    }

    /** Slabwise with a strategy per kind of buffer; owners may move theirs. */
    private static final class SlabwiseSource implements BufferSource, Relocation {
        private final SlabwiseAllocator allocator;
        private final SequentialByteBufAllocator log;
        private final BlockByteBufAllocator blocks;

        SlabwiseSource(long maxMemory, long compactionBytesPerSecond) {
            SlabwiseAllocator.Builder builder = SlabwiseAllocator.builder()
                    .compactionBytesPerSecond(compactionBytesPerSecond);
            if (maxMemory != Long.MAX_VALUE) {
                builder.maxMemory(maxMemory)
                        .categoryPolicy(LOG_CACHE, LimitPolicy.RETURN_NULL)
                        .categoryPolicy(BLOCK_CACHE, LimitPolicy.RETURN_NULL)
                        .limitPolicy(LimitPolicy.WAIT);
            }
            allocator = builder.build();
            log = allocator.sequential(LOG_CACHE);
            blocks = allocator.blocks(BLOCK_CACHE);
        }

        @Override
        public ByteBuf logBuffer(int size) {
            return log.allocate(size);
        }

        @Override
        public ByteBuf blockBuffer(int size) {
            return blocks.allocate(size);
        }

        @Override
        public ByteBuf generalBuffer(int size) {
            try {
                return allocator.directBuffer(size);
            } catch (MemoryLimitException e) {
                return null;
            }
        }

        @Override
        public ByteBuf generalBuffer(String category, int size) {
            try {
                return allocator.forCategory(category).directBuffer(size);
            } catch (MemoryLimitException e) {
                return null;
            }
        }

        @Override
        public Optional<Relocation> relocation() {
            return Optional.of(this);
        }

        @Override
        public void setRelocator(String category, BufferRelocator relocator) {
            allocator.setRelocator(category, relocator);
        }

        @Override
        public CompactionStats compact(double maxOccupancy, long maxBytesToMove) {
            return allocator.pool().compact(maxOccupancy, maxBytesToMove);
        }

        @Override
        public CompactionStats totals() {
            return allocator.pool().compactionTotals();
        }

        @Override
        public long committedBytes() {
            return allocator.pool().committedBytes();
        }

        @Override
        public long reservedBytes() {
            return allocator.pool().reservedBytes();
        }

        @Override
        public boolean trim() {
            log.trim();
            blocks.trim();
            allocator.trim();
            return true;
        }

        @Override
        public String report() {
            return allocator.stats().report() + "  " + log.stats() + "\n  " + blocks.stats() + "\n  "
                    + allocator.pool().compactionTotals() + "\n";
        }
    }

    /**
     * Slabwise as a drop-in replacement for Netty's allocator: every kind of
     * buffer from {@code directBuffer}, the general pool, as when the only
     * change is {@code ChannelOption.ALLOCATOR}; served as Netty's allocators
     * are, with the pool's reserved bytes, trim and report.
     */
    private static final class DropInSource extends NettySource {
        private final SlabwiseAllocator slabwise;

        DropInSource() {
            this(SlabwiseAllocator.builder().build());
        }

        private DropInSource(SlabwiseAllocator slabwise) {
            super(slabwise);
            this.slabwise = slabwise;
        }

        @Override
        public long reservedBytes() {
            return slabwise.pool().reservedBytes();
        }

        @Override
        public boolean trim() {
            slabwise.trim();
            return true;
        }

        @Override
        public String report() {
            return slabwise.stats().report();
        }
    }

    /** One of Netty's allocators (or any {@code ByteBufAllocator}), the same for every kind of buffer. */
    private static class NettySource implements BufferSource {
        private final ByteBufAllocator allocator;

        NettySource(ByteBufAllocator allocator) {
            this.allocator = allocator;
        }

        @Override
        public ByteBuf logBuffer(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public ByteBuf blockBuffer(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public ByteBuf generalBuffer(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public long committedBytes() {
            return ((ByteBufAllocatorMetricProvider) allocator).metric().usedDirectMemory();
        }

        @Override
        public long reservedBytes() {
            return -1;
        }

        @Override
        public boolean trim() {
            if (allocator instanceof PooledByteBufAllocator) {
                return ((PooledByteBufAllocator) allocator).trimCurrentThreadCache();
            }
            return false;
        }

        @Override
        public String report() {
            return ((ByteBufAllocatorMetricProvider) allocator).metric() + "\n";
        }
    }
}
