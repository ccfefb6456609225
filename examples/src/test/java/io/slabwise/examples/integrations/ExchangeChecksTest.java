package io.slabwise.examples.integrations;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The checks the framework tests rely on fail when they should: a body held
 * outside Slabwise, a buffer served by Netty's default allocator, a changed
 * byte. (The framework tests only ever see them pass.)
 */
@Timeout(30)
class ExchangeChecksTest {

    private final SlabwiseAllocator allocator = SlabwiseAllocator.builder().chunkSize(1 << 20).build();
    private final Exchange exchange = new Exchange("checks", allocator, "server_side", "client_side");

    @AfterEach
    void close() {
        allocator.close();
    }

    @Test
    void aBodyInTheSidesCategoryPasses() {
        ByteBuf body = exchange.serverAllocator().directBuffer(1000).writeZero(1000);
        CompositeByteBuf composite = exchange.serverAllocator().compositeBuffer().addComponent(true, body);
        exchange.serverHolds(composite, 1000);
        composite.release();
        assertEquals(0, exchange.failureCount(), exchange::summary);
        assertEquals(1, exchange.residencyChecks());
    }

    @Test
    void aBodyOnTheHeapOrInAnotherCategoryFails() {
        ByteBuf heap = Unpooled.wrappedBuffer(new byte[1000]);
        exchange.serverHolds(heap, 1000);
        assertEquals(2, exchange.failureCount(), "not requested in the category, and not from its view");

        ByteBuf otherSide = exchange.clientAllocator().directBuffer(1000).writeZero(1000);
        exchange.serverHolds(otherSide, 1000);
        otherSide.release();
        assertEquals(4, exchange.failureCount(), exchange::summary);
    }

    @Test
    void aComponentFromNettysPoolFails() {
        ByteBuf ours = exchange.clientAllocator().directBuffer(10).writeZero(10);
        ByteBuf nettys = PooledByteBufAllocator.DEFAULT.directBuffer(10).writeZero(10);
        CompositeByteBuf composite = exchange.clientAllocator().compositeBuffer().addComponents(true, ours, nettys);
        exchange.clientHolds(composite, 10);
        composite.release();
        assertEquals(1, exchange.failureCount(), exchange::summary);
        assertTrue(exchange.failures().get(0).contains("PooledByteBufAllocator"), exchange::summary);
    }

    @Test
    void aBufferFromNettysDefaultAllocatorIsSeen() {
        FallbackAllocators before = FallbackAllocators.now();
        PooledByteBufAllocator.DEFAULT.directBuffer(100).release();
        List<String> changes = FallbackAllocators.now().changesSince(before);
        assertEquals(1, changes.size(), changes::toString);
        assertTrue(changes.get(0).startsWith("PooledByteBufAllocator.DEFAULT"), changes::toString);
    }

    @Test
    void oneChangedByteChangesTheTally() {
        BodyPlan plan = BodyPlan.create(1, 100_000, 50_000);
        Tally sent = new Tally();
        Tally received = new Tally();
        for (int i = 0; i < plan.bodies(); i++) {
            byte[] body = plan.toArray(i);
            sent.add(plan.crc(i), body.length);
            if (i == plan.bodies() - 1) {
                body[body.length / 2] ^= 1;
            }
            received.add(BodyPlan.crc(body), body.length);
        }
        assertEquals(sent.bytes(), received.bytes());
        assertFalse(sent.sameAs(received));
    }

    @Test
    void aPlanStartsWithOneByteAndTheLargestAndReachesItsTotal() {
        BodyPlan plan = BodyPlan.standard(5);
        assertEquals(1, plan.size(0));
        assertEquals(BodyPlan.LARGEST_BODY, plan.size(1));
        assertTrue(plan.totalBytes() >= BodyPlan.MIN_BYTES_EACH_WAY);
        for (int i = 0; i < plan.bodies(); i++) {
            assertTrue(plan.size(i) >= 1 && plan.size(i) <= BodyPlan.LARGEST_BODY);
            ByteBuf buf = Unpooled.buffer(plan.size(i));
            plan.write(i, buf);
            assertEquals(plan.crc(i), BodyPlan.crc(buf));
            assertTrue(plan.matches(i, plan.toArray(i)));
            buf.release();
        }
    }
}
