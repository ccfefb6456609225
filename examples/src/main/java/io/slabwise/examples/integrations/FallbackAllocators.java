package io.slabwise.examples.integrations;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PooledByteBufAllocator;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What the allocators a framework falls back on have served so far: taken
 * before and after a run, it tells whether any buffer went around the
 * allocator the framework was given. It reads
 *
 * <ul>
 *   <li>{@code PooledByteBufAllocator.DEFAULT}: allocations made by its
 *       direct and heap arenas (a count that only grows);</li>
 *   <li>{@code ByteBufAllocator.DEFAULT} when it is another allocator (Netty
 *       4.2's adaptive allocator): the direct and heap memory it holds, which
 *       grows from nothing as soon as it serves a buffer;</li>
 *   <li>gRPC's own pooled allocators, which {@code io.grpc.netty.Utils} makes
 *       for its channels when none is given (read through reflection, as the
 *       class is not public): their arenas' allocations.</li>
 * </ul>
 */
public final class FallbackAllocators {

    private final Map<String, Long> figures;

    private FallbackAllocators(Map<String, Long> figures) {
        this.figures = figures;
    }

    /** The figures now. */
    public static FallbackAllocators now() {
        Map<String, Long> figures = new LinkedHashMap<>();
        figures.put("PooledByteBufAllocator.DEFAULT allocations", allocations(PooledByteBufAllocator.DEFAULT));
        ByteBufAllocator fallback = ByteBufAllocator.DEFAULT;
        if (fallback != PooledByteBufAllocator.DEFAULT && fallback instanceof ByteBufAllocatorMetricProvider provider) {
            ByteBufAllocatorMetric metric = provider.metric();
            figures.put("ByteBufAllocator.DEFAULT (" + fallback.getClass().getSimpleName() + ") bytes held",
                    metric.usedDirectMemory() + metric.usedHeapMemory());
        }
        for (boolean heap : new boolean[] {false, true}) {
            ByteBufAllocator grpc = grpcAllocator(heap);
            if (grpc instanceof PooledByteBufAllocator pooled && pooled != PooledByteBufAllocator.DEFAULT) {
                figures.put("gRPC's allocator (forceHeapBuffer=" + heap + ") allocations", allocations(pooled));
            }
        }
        return new FallbackAllocators(figures);
    }

    /** The figures that changed since {@code before}, described; empty when none did. */
    public List<String> changesSince(FallbackAllocators before) {
        List<String> changes = new ArrayList<>();
        for (Map.Entry<String, Long> now : figures.entrySet()) {
            Long then = before.figures.get(now.getKey());
            if (!Objects.equals(then, now.getValue())) {
                changes.add(now.getKey() + ": " + then + " -> " + now.getValue());
            }
        }
        return changes;
    }

    @SuppressWarnings("deprecation") // PoolArenaMetric: deprecated in Netty 4.2, still filled in
    private static long allocations(PooledByteBufAllocator allocator) {
        long n = 0;
        for (PoolArenaMetric arena : allocator.metric().directArenas()) {
            n += arena.numAllocations();
        }
        for (PoolArenaMetric arena : allocator.metric().heapArenas()) {
            n += arena.numAllocations();
        }
        return n;
    }

    /** gRPC's allocator from {@code io.grpc.netty.Utils.getByteBufAllocator(forceHeapBuffer)}, or null without grpc-netty. */
    private static ByteBufAllocator grpcAllocator(boolean forceHeapBuffer) {
        try {
            Method get = Class.forName("io.grpc.netty.Utils").getMethod("getByteBufAllocator", boolean.class);
            get.setAccessible(true);
            return (ByteBufAllocator) get.invoke(null, forceHeapBuffer);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    @Override
    public String toString() {
        return figures.toString();
    }
}
