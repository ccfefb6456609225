package io.slabwise.netty;

import io.netty.buffer.ByteBufAllocator;
import io.slabwise.LimitPolicy;
import io.slabwise.MemoryLimitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Limits at their edges: requests whose reserved size can never fit, and a failed setQuota. */
@Timeout(60)
class LimitEdgeCasesTest {

    private static final Duration WAIT = Duration.ofSeconds(4);

    /**
     * 99 000 bytes reserve 106 496 (13 pages): more than a 100 000-byte quota
     * can ever hold. Under WAIT it must fail at once as never satisfiable, as
     * a request of 100 001 bytes does, not after the whole wait.
     */
    @Test
    void aRequestWhoseReservationExceedsTheQuotaFailsAtOnce() {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT)
                .quota("block_cache", 100_000).build();
        ByteBufAllocator view = allocator.forCategory("block_cache");
        assertTrue(allocator.pool().reservedSizeFor(99_000) > 100_000);
        assertFailsAtOnce(() -> view.directBuffer(99_000));
        allocator.close();
    }

    /** The same at the ceiling: 4 999 000 bytes take a region of 5 005 312, past a 5 000 000-byte ceiling. */
    @Test
    void aRequestWhoseReservationExceedsTheCeilingFailsAtOnce() {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().limitPolicy(LimitPolicy.WAIT).waitTimeout(WAIT)
                .maxMemory(5_000_000).build();
        assertTrue(allocator.pool().reservedSizeFor(4_999_000) > 5_000_000);
        assertFailsAtOnce(() -> allocator.directBuffer(4_999_000));
        allocator.close();
    }

    /** The request fails as never satisfiable, well within the configured wait. */
    private static void assertFailsAtOnce(Executable request) {
        long start = System.nanoTime();
        MemoryLimitException e = assertThrows(MemoryLimitException.class, request);
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(e.getMessage().contains("never"), e.getMessage());
        assertTrue(millis < 1000, "waited " + millis + " ms for a request no release can make room for: " + e.getMessage());
    }

    /** A refused setQuota (a typo, a category without a quota) must not leave a new category behind. */
    @Test
    void setQuotaOfAnUnknownCategoryAddsNoCategory() {
        SlabwiseAllocator allocator = SlabwiseAllocator.builder().quota("block_cache", 1 << 20).build();
        List<?> before = allocator.pool().categories();
        assertThrows(IllegalStateException.class, () -> allocator.setQuota("blok_cache", 1 << 20));
        assertEquals(before, allocator.pool().categories(), "a failed setQuota created a category (one of 64, forever)");
        allocator.close();
    }
}
