package io.slabwise;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Idle chunks go back to the operating system after the decay time, on the
 * pool's injected clock and scheduler: no sleep, no background thread.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IdleDecayTest {

    private static final int CHUNK = 1 << 20;

    @Test
    void idleChunksGoBackAfterTheDecayTimeKeepingMinIdleChunks() {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).arenas(1).maxCachedSize(0)
                .maxIdleChunksPerArena(3).minIdleChunks(1).idleChunkDecay(Duration.ofSeconds(10)).dedicatedAbove(CHUNK)
                .ticker(time).scheduler(time).chunkSource(ChunkSource.direct()).build());
        assertEquals(1, time.scheduled(), "the pool scheduled its decay");
        List<Allocation> chunks = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Allocation a = new Allocation();
            pool.allocate(CHUNK, a);
            chunks.add(a);
        }
        chunks.forEach(pool::free);
        assertEquals(3L * CHUNK, pool.committedBytes(), "three idle chunks kept for reuse");
        time.assertDecayEdge(Duration.ofSeconds(10), pool::committedBytes, 3L * CHUNK, CHUNK,
                "three idle chunks, minIdleChunks = 1 stays");
    }

    @Test
    void closingCancelsTheDecay() {
        ManualTime time = new ManualTime();
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(CHUNK).ticker(time).scheduler(time).build());
        assertEquals(1, time.scheduled());
        pool.close();
        assertEquals(0, time.scheduled());
    }
}
