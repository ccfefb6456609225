package io.slabwise.examples.broker;

import io.slabwise.CompactionStats;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The broker demo runs with producers, tail readers and cold readers at once,
 * compacts, and releases everything.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BrokerCacheDemoTest {

    /**
     * Besides succeeding: the compaction frees every chunk and block it
     * chose; the log cache keeps fewer pinned chunks, the ones left more than
     * half used; the block cache holds fewer blocks; the pool holds fewer
     * bytes of chunks and blocks, and no more committed bytes than before.
     */
    @Test
    void demoRunsCompactsAndReleasesEverything() throws Exception {
        BrokerCacheDemo.Outcome outcome = BrokerCacheDemo.measure(2000);
        assertTrue(outcome.succeeded());
        CompactionStats done = outcome.compaction();
        assertTrue(done.chunksFreed() > 0, done::toString);
        assertEquals(done.chunksEvacuated(), done.chunksFreed(), done::toString);
        assertEquals(0, done.refusedEntries(), done::toString);
        assertTrue(outcome.logAfter().pinnedChunks() < outcome.logBefore().pinnedChunks(), outcome::toString);
        assertTrue(outcome.logBefore().pinnedOccupancy() < 0.7, outcome::toString);
        assertTrue(outcome.logAfter().pinnedOccupancy() > 0.5, outcome::toString);
        assertTrue(outcome.blocksAfter().blocks() < outcome.blocksBefore().blocks(), outcome::toString);
        assertTrue(BrokerCacheDemo.chunkAndBlockBytes(outcome.poolAfter()) < BrokerCacheDemo.chunkAndBlockBytes(outcome.poolBefore()),
                outcome::toString);
        assertTrue(outcome.poolAfter().committedBytes() <= outcome.poolBefore().committedBytes(), outcome::toString);
    }

    /**
     * What the compaction frees should leave the process: it frees about 50
     * MiB of chunks and blocks here, yet with region groups (the default with
     * malloc on glibc) the committed bytes do not move, because the freed
     * regions lie in 32 MiB groups that still hold other regions.
     */
    @Disabled("core: Compaction chooses chunks without regard to region groups, so the chunks it frees stay committed "
            + "inside groups that do not empty (reported to the lead)")
    @Test
    void compactionLowersTheCommittedBytes() throws Exception {
        BrokerCacheDemo.Outcome outcome = BrokerCacheDemo.measure(2000);
        assertTrue(outcome.compaction().bytesFreed() > 32L << 20, outcome::toString);
        assertTrue(outcome.poolAfter().committedBytes() < outcome.poolBefore().committedBytes(), outcome::toString);
    }
}
