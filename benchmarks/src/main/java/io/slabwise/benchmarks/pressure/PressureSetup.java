package io.slabwise.benchmarks.pressure;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.slabwise.LimitPolicy;
import io.slabwise.PressureConfig;
import io.slabwise.PressureStats;
import io.slabwise.benchmarks.AllocatorKind;
import io.slabwise.netty.BlockByteBufAllocator;
import io.slabwise.netty.SequentialByteBufAllocator;
import io.slabwise.netty.SlabwiseAllocator;

/**
 * The configurations the pressure workload compares, each bounding the same
 * caches and network traffic its own way:
 *
 * <ul>
 *   <li>{@code shrinkers}: Slabwise with a ceiling and the default
 *       {@link PressureConfig}; the log cache (sequential allocator, category
 *       {@code log_cache}) and the block cache (block pool of 1 MiB blocks,
 *       {@code block_cache}) register as shrinkers, their byte budgets are 2/3
 *       and 1/3 of the ceiling, so together they can fill it, and at the
 *       ceiling they get null ({@code RETURN_NULL}) and evict their own.</li>
 *   <li>{@code budgets}: Slabwise with fixed quotas in AutoMQ's proportions
 *       (log cache 2, block cache 1, other 1 of a ceiling of 6): {@code log_cache}
 *       2/6 of the ceiling, {@code block_cache} 1/6, {@code network} 1/6; the
 *       caches' budgets are their quotas; pressure off, no shrinker.</li>
 *   <li>{@code pooled}, {@code adaptive}: Netty's allocators as
 *       {@link AllocatorKind} makes them, every buffer from
 *       {@code directBuffer}; the caches' budgets of {@code shrinkers} are the
 *       only bound (no ceiling): the ceiling is read as the container's limit
 *       against their peak direct memory ({@code metric().usedDirectMemory()}).</li>
 * </ul>
 *
 * On Slabwise the network buffers come from {@code forCategory("network")},
 * under {@code FAIL}: a refusal throws.
 */
enum PressureSetup {
    /** (a) Slabwise with shrinkers, default pressure settings. */
    shrinkers("slabwise-shrinkers"),
    /** (a') Slabwise with shrinkers asked only by allocations at the ceiling: no background, no headroom kept. */
    limitonly("slabwise-limit-only"),
    /** (b) Slabwise with fixed quotas, no shrinkers. */
    budgets("slabwise-budgets"),
    /** (c) Netty's pooled allocator, no ceiling. */
    pooled("pooled"),
    /** (d) Netty's adaptive allocator, no ceiling. */
    adaptive("adaptive");

    static final String LOG_CACHE = "log_cache";
    static final String BLOCK_CACHE = "block_cache";
    static final String NETWORK = "network";

    private final String label;

    PressureSetup(String label) {
        this.label = label;
    }

    /** The name in the output. */
    String label() {
        return label;
    }

    /** The configuration called {@code name} (its enum name or its label). */
    static PressureSetup of(String name) {
        for (PressureSetup s : values()) {
            if (s.name().equals(name) || s.label.equals(name)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown configuration '" + name
                + "': use shrinkers, limitonly, budgets, pooled or adaptive");
    }

    /** Whether the allocator has the ceiling. */
    boolean bounded() {
        return this == shrinkers || this == limitonly || this == budgets;
    }

    /** The log cache's byte budget. */
    long logBudget(long ceiling) {
        return this == budgets ? ceiling * 2 / 6 : ceiling * 2 / 3;
    }

    /** The block cache's byte budget. */
    long blockBudget(long ceiling) {
        return this == budgets ? ceiling / 6 : ceiling / 3;
    }

    /**
     * New allocators for one run; {@code pressure} is the pressure settings of
     * {@code shrinkers} (the defaults unless the command line changes them).
     */
    Allocators create(long ceiling, PressureConfig pressure) {
        return bounded() ? new Slabwise(this, ceiling, pressure) : new Netty(this == pooled ? AllocatorKind.pooled.create()
                : AllocatorKind.adaptive.create());
    }

    /** The buffers of one run, from the configuration's allocators. */
    interface Allocators extends AutoCloseable {

        /** A log record's buffer, or null at a limit. */
        ByteBuf log(int size);

        /** A block's buffer, or null at a limit. */
        ByteBuf block(int size);

        /** A network buffer; throws {@link io.slabwise.MemoryLimitException} when refused. */
        ByteBuf network(int size);

        /** Registers the caches as shrinkers where the configuration has them. */
        void register(LogCache log, BlockCache blocks);

        /** One step of the pool's scheduler. */
        void advance();

        /** Committed bytes (Slabwise) or direct memory held (Netty's metric). */
        long committed();

        /** Allocations that shrank at a limit so far; 0 without a pool. */
        long limitShrinks();

        /** What pressure did; {@link PressureStats#NONE} without a pool. */
        PressureStats pressureStats();

        @Override
        void close();
    }

    /** Slabwise: a pool with the ceiling, the step scheduler, and a category per kind of buffer. */
    private static final class Slabwise implements Allocators {
        private final PressureSetup setup;
        private final StepScheduler scheduler = new StepScheduler();
        private final SlabwiseAllocator allocator;
        private final SequentialByteBufAllocator log;
        private final BlockByteBufAllocator blocks;
        private final ByteBufAllocator network;
        private boolean inNetwork;

        Slabwise(PressureSetup setup, long ceiling, PressureConfig pressure) {
            this.setup = setup;
            SlabwiseAllocator.Builder builder = SlabwiseAllocator.builder().maxMemory(ceiling).scheduler(scheduler)
                    .limitPolicy(LimitPolicy.FAIL)
                    .categoryPolicy(LOG_CACHE, LimitPolicy.RETURN_NULL)
                    .categoryPolicy(BLOCK_CACHE, LimitPolicy.RETURN_NULL)
                    .categoryPolicy(NETWORK, LimitPolicy.FAIL)
                    .waitAllowed(() -> !inNetwork);
            if (setup == budgets) {
                builder.pressure(PressureConfig.off()).quota(LOG_CACHE, setup.logBudget(ceiling))
                        .quota(BLOCK_CACHE, setup.blockBudget(ceiling)).quota(NETWORK, ceiling / 6);
            } else if (setup == limitonly) {
                builder.pressure(PressureConfig.builder().background(false)
                        .inline(pressure.inlineBytes(), pressure.inlineTime()).build());
            } else {
                builder.pressure(pressure);
            }
            allocator = builder.build();
            log = allocator.sequential(LOG_CACHE);
            blocks = allocator.blocks(BLOCK_CACHE);
            network = allocator.forCategory(NETWORK);
        }

        @Override
        public ByteBuf log(int size) {
            return log.allocate(size);
        }

        @Override
        public ByteBuf block(int size) {
            return blocks.allocate(size);
        }

        @Override
        public ByteBuf network(int size) {
            inNetwork = true;
            try {
                return network.directBuffer(size);
            } finally {
                inNetwork = false;
            }
        }

        @Override
        public void register(LogCache logCache, BlockCache blockCache) {
            if (setup == shrinkers || setup == limitonly) {
                allocator.setShrinker(LOG_CACHE, logCache);
                allocator.setShrinker(BLOCK_CACHE, blockCache);
            }
        }

        @Override
        public void advance() {
            scheduler.advance();
        }

        @Override
        public long committed() {
            return allocator.pool().committedBytes();
        }

        @Override
        public long limitShrinks() {
            return allocator.pool().pressureStats().limitShrinks();
        }

        @Override
        public PressureStats pressureStats() {
            return allocator.pool().pressureStats();
        }

        @Override
        public void close() {
            allocator.close();
        }
    }

    /** Netty: one allocator for every buffer, no ceiling. */
    private static final class Netty implements Allocators {
        private final ByteBufAllocator allocator;

        Netty(ByteBufAllocator allocator) {
            this.allocator = allocator;
        }

        @Override
        public ByteBuf log(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public ByteBuf block(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public ByteBuf network(int size) {
            return allocator.directBuffer(size);
        }

        @Override
        public void register(LogCache log, BlockCache blocks) {
        }

        @Override
        public void advance() {
        }

        @Override
        public long committed() {
            return ((ByteBufAllocatorMetricProvider) allocator).metric().usedDirectMemory();
        }

        @Override
        public long limitShrinks() {
            return 0;
        }

        @Override
        public PressureStats pressureStats() {
            return PressureStats.NONE;
        }

        @Override
        public void close() {
        }
    }
}
