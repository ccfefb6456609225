package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PoolStats#bytes(long)} and the summary: a figure just under a unit
 * boundary, which one decimal rounds up to 1024, reads as one of the next
 * unit, not as {@code 1024.0} of the unit below.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ByteFormatTest {

    @Test
    void aFigureThatRoundsTo1024ReadsInTheNextUnit() {
        assertEquals("1023 B", PoolStats.bytes(1023));
        assertEquals("1023.9 KiB", PoolStats.bytes(1_048_524)); // 1023.949 KiB
        assertEquals("1.0 MiB", PoolStats.bytes(1_048_525)); // 1023.950 KiB
        assertEquals("1.0 MiB", PoolStats.bytes((1L << 20) - 1));
        assertEquals("1.0 GiB", PoolStats.bytes((1L << 30) - 1));
        assertEquals("1.0 TiB", PoolStats.bytes((1L << 40) - 1));
        assertEquals("-1.0 MiB", PoolStats.bytes(-((1L << 20) - 1)));
        assertEquals("1024.0 TiB", PoolStats.bytes(1L << 50), "the largest unit takes what is above it");
    }

    @Test
    void theSummaryShowsARequestOfAMebibyteLessOneByteAsAMebibyte() {
        MemoryPool pool = new MemoryPool(PoolConfig.builder().chunkSize(1 << 20).arenas(1).build());
        Allocation a = new Allocation();
        assertTrue(pool.allocate((1 << 20) - 1, a));
        String summary = pool.stats().summary();
        assertTrue(summary.startsWith("requested=1.0 MiB reserved=1.0 MiB "), summary);
        pool.free(a);
        pool.close();
    }
}
