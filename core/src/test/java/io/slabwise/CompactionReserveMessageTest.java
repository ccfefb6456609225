package io.slabwise;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The message of a {@link MemoryLimitException} at the ceiling accounts for
 * its figures: while a category has a relocator, the chunk kept for
 * compactions is why a request is refused with committed bytes a chunk
 * under the ceiling, and the message says so.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CompactionReserveMessageTest {

    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;

    /**
     * Three of four chunks committed and a relocator registered: a request
     * that needs a new chunk is refused by the compaction reserve. The
     * message showed only "limit 4194304" and "committed=3145728", a
     * refusal with a whole chunk of room by its own numbers.
     */
    @Test
    void aRefusalByTheCompactionReserveNamesTheReserve() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(MIB).firstChunkSize(MIB).dedicatedAbove(MIB)
                .arenas(1).limitPolicy(LimitPolicy.FAIL).maxMemory(4L * MIB).chunkSource(ChunkSource.direct()).build());
        pool.setRelocator("cache", evacuation -> { });
        Allocation[] held = new Allocation[3];
        for (int i = 0; i < held.length; i++) {
            held[i] = new Allocation();
            pool.allocate(MIB, held[i]); // a whole chunk each
        }
        assertEquals(3L * MIB, pool.committedBytes());
        MemoryLimitException e = assertThrows(MemoryLimitException.class,
                () -> pool.allocate(512 * KIB, new Allocation()));
        assertEquals(MemoryLimitException.Kind.CEILING, e.kind());
        assertEquals(4L * MIB, e.limit(), "the ceiling itself");
        assertTrue(e.getMessage().contains(MIB + " bytes of it kept for compactions"), e.getMessage());
        for (Allocation a : held) {
            pool.free(a);
        }
        pool.close();
    }
}
