/**
 * Micrometer export of a pool's figures: {@link io.slabwise.metrics.SlabwiseMetrics}
 * binds the meters declared in {@link io.slabwise.metrics.SlabwiseMeters}.
 * Micrometer is an optional dependency of {@code slabwise-core}; add
 * {@code micrometer-core} to use this package.
 */
package io.slabwise.metrics;
