package io.slabwise.netty;

/** The allocators the Slabwise contract tests share: small chunks so every size path is exercised. */
final class SlabwiseContractFixture {

    static final SlabwiseAllocator ALLOCATOR = SlabwiseAllocator.builder().chunkSize(256 * 1024).arenas(2).build();
    static final SlabwiseAllocator RECYCLING = SlabwiseAllocator.builder().chunkSize(256 * 1024).arenas(2)
            .recycleBuffers(true).build();
    /** Buffers without native access, as Netty 4.2 gets them on JDK 24 and later, on any JVM. */
    static final SlabwiseAllocator NO_ADDRESS = SlabwiseAllocator.builder().chunkSize(256 * 1024).arenas(2)
            .nativeAccess(false).build();
    static final SequentialByteBufAllocator SEQUENTIAL = ALLOCATOR.sequential("log_cache");
    static final BlockByteBufAllocator BLOCKS = ALLOCATOR.blocks("block_cache", 16 * 1024, 2);

    private SlabwiseContractFixture() {
    }

    /** Fails when a test left pool memory live: every buffer of the suite must be released exactly once. */
    static void assertNothingLive() {
        for (SlabwiseAllocator allocator : new SlabwiseAllocator[] {ALLOCATOR, RECYCLING, NO_ADDRESS}) {
            io.slabwise.PoolStats stats = allocator.stats();
            org.junit.jupiter.api.Assertions.assertEquals(0, stats.liveAllocations(), stats::report);
            org.junit.jupiter.api.Assertions.assertEquals(0, stats.requestedBytes(), stats::report);
        }
    }
}
