/**
 * Micrometer export of a pool's figures.
 *
 * <p>{@link io.slabwise.metrics.SlabwiseMeters} declares every meter once
 * (name under {@code slabwise.}, type, base unit, description, tag keys);
 * {@link io.slabwise.metrics.SlabwiseMetrics} is the {@code MeterBinder} that
 * registers them for one {@link io.slabwise.MemoryPool}, tagged with a name
 * the application chooses and with the {@code id} and {@code allocator.type}
 * tags of Micrometer's own {@code NettyAllocatorMetrics}, so that both sets of
 * series join ({@link io.slabwise.metrics.SlabwiseMetrics#forAllocator}).
 *
 * <p>Who holds what: a registry holds the binder strongly, the binder holds
 * the pool weakly, so binding never keeps a pool alive; a collected pool's
 * gauges read NaN, its refusal and wait counts stay where they were. Meters
 * are read on the scraping thread; they share one
 * {@link io.slabwise.PoolStats} snapshot (with the pool's
 * {@link io.slabwise.LimitStats}) for a short time, so a scrape takes one
 * snapshot rather than one per meter.
 *
 * <p>Micrometer is an optional dependency of {@code slabwise-core}: add
 * {@code io.micrometer:micrometer-core} to use this package. The rest of the
 * core never loads it.
 */
package io.slabwise.metrics;
