package io.slabwise.examples.integrations;

import io.netty.util.ResourceLeakDetector;
import io.slabwise.CategoryStats;
import io.slabwise.PoolStats;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What every framework test checks of its {@link Exchange}, with Netty's leak
 * detector at its paranoid level (every buffer tracked) and its reports kept
 * by {@link RecordingLeakDetector}:
 *
 * <ol>
 *   <li>Slabwise served the traffic: each whole body a receiver held was in
 *       its category's live buffers (and, where the receiver sees them, in
 *       buffers of its category view), each category made at least one
 *       allocation per body it received, and none of the allocators a
 *       framework falls back on ({@link FallbackAllocators}) served a buffer
 *       from the start of the traffic to the end of the shutdown;</li>
 *   <li>the leak detector reported nothing;</li>
 *   <li>once the framework shut down and its threads ended, nothing was
 *       requested or reserved in any category, and closing the allocator gave
 *       every committed byte back;</li>
 *   <li>at least 64 MiB went each way, and what each side received is what
 *       the other sent, by content digest.</li>
 * </ol>
 */
abstract class FrameworkTrafficTest {

    private static final List<String> LEAKS = RecordingLeakDetector.REPORTS;
    private ResourceLeakDetector.Level previousLevel;

    @BeforeEach
    void paranoidLeakDetection() {
        previousLevel = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        pollLeakReports(); // reports of buffers an earlier test dropped come out now, not during this one
        LEAKS.clear();
    }

    @AfterEach
    void restoreLeakDetection() {
        ResourceLeakDetector.setLevel(previousLevel);
    }

    /**
     * Checks an exchange the framework has finished (see the class comment),
     * then closes its allocator.
     *
     * @param plan the bodies the client sent
     */
    static void assertServedIntactAndReturned(Exchange exchange, BodyPlan plan) {
        String summary = exchange.summary();
        System.out.print(summary);
        assertEquals(0, exchange.failureCount(), summary);
        assertEquals(plan.bodies(), exchange.clientSent().bodies(), summary);
        assertTrue(exchange.clientSent().bytes() >= BodyPlan.MIN_BYTES_EACH_WAY, summary);
        assertTrue(exchange.serverSent().bytes() >= BodyPlan.MIN_BYTES_EACH_WAY, summary);
        assertTrue(exchange.clientSent().sameAs(exchange.serverReceived()), () -> "client to server: " + summary);
        assertTrue(exchange.serverSent().sameAs(exchange.clientReceived()), () -> "server to client: " + summary);

        assertEquals(2L * plan.bodies(), exchange.residencyChecks(), summary);
        PoolStats after = exchange.afterShutdown();
        assertTrue(exchange.allocationsSinceStart(after, exchange.serverCategory()) >= plan.bodies(), summary);
        assertTrue(exchange.allocationsSinceStart(after, exchange.clientCategory()) >= plan.bodies(), summary);
        assertEquals(List.of(), exchange.fallbackChanges(), "a fall-back allocator served buffers");

        assertEquals("", exchange.threadsAlive(), "the framework's threads ended");
        assertEquals(0, after.requestedBytes(), after::report);
        assertEquals(0, after.reservedBytes(), after::report);
        assertEquals(0, after.liveAllocations(), after::report);
        for (CategoryStats category : after.categories()) {
            assertEquals(0, category.requested(), after::report);
        }
        pollLeakReports();
        assertTrue(LEAKS.isEmpty(), () -> "leaks reported: " + LEAKS);
        assertTrue(exchange.intact(), summary);

        SlabwiseAllocator allocator = exchange.allocator();
        allocator.close();
        PoolStats closed = allocator.stats();
        assertEquals(0, closed.committedBytes(), closed::report);
    }

    /**
     * Makes the leak detector report buffers collected unreleased: reports are
     * made when a buffer is tracked after the collector has queued the lost ones.
     */
    static void pollLeakReports() {
        try (SlabwiseAllocator scratch = SlabwiseAllocator.builder().chunkSize(1 << 16).arenas(1).build()) {
            for (int i = 0; i < 5 && LEAKS.isEmpty(); i++) {
                System.gc();
                for (int j = 0; j < 20; j++) {
                    scratch.directBuffer(16).release();
                }
            }
        }
    }
}
