package io.slabwise.netty;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.netty4.NettyAllocatorMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Micrometer's stock Netty binder works on SlabwiseAllocator through ByteBufAllocatorMetricProvider. */
@Timeout(60)
class NettyAllocatorMetricsTest {

    @Test
    void stockNettyBinderReportsCommittedDirectMemory() {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).build();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new NettyAllocatorMetrics(allocator).bindTo(registry);
        ByteBuf buf = allocator.directBuffer(10_000);
        Gauge direct = registry.find("netty.allocator.memory.used").tag("memory.type", "direct").gauge();
        assertNotNull(direct);
        assertEquals(allocator.metric().usedDirectMemory(), direct.value(), 0.0);
        assertTrue(direct.value() >= 1 << 20);
        buf.release();
    }
}
