package io.slabwise.netty;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.binder.netty4.NettyAllocatorMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.buffer.ByteBuf;
import io.slabwise.metrics.SlabwiseMetrics;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Micrometer's stock Netty binder works on SlabwiseAllocator through
 * ByteBufAllocatorMetricProvider, and Slabwise's own meters, bound with
 * {@code SlabwiseMetrics.forAllocator}, carry the same {@code id} and
 * {@code allocator.type} tags, so the two sets of series join.
 */
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
        assertTrue(direct.value() >= 256 * 1024, "at least an arena's first chunk");
        buf.release();
    }

    @Test
    void slabwiseSeriesJoinTheStockNettySeries() {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).arenas(1).build();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new NettyAllocatorMetrics(allocator).bindTo(registry);
        SlabwiseMetrics.forAllocator(allocator, allocator.pool(), "server").bindTo(registry);
        Meter.Id netty = registry.find("netty.allocator.memory.used").tag("memory.type", "direct").gauge().getId();
        assertEquals("SlabwiseAllocator", netty.getTag("allocator.type"));
        for (Meter slabwise : registry.find("slabwise.memory.committed").meters()) {
            assertEquals(netty.getTag("id"), slabwise.getId().getTag("id"));
            assertEquals(netty.getTag("allocator.type"), slabwise.getId().getTag("allocator.type"));
            assertEquals("server", slabwise.getId().getTag("allocator"));
        }
        assertEquals(1, registry.find("slabwise.memory.committed").tag("id", netty.getTag("id"))
                .tag("allocator.type", "SlabwiseAllocator").meters().size());
        ByteBuf buf = allocator.directBuffer(10_000);
        Gauge committed = registry.find("slabwise.memory.committed").gauge();
        assertNotNull(committed);
        assertEquals(allocator.metric().usedDirectMemory(), committed.value(), 0.0,
                "the two series of the same allocator agree");
        buf.release();
    }
}
