package io.slabwise.examples.broker;

import io.slabwise.CompactionStats;
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
     * Besides succeeding: the compaction frees what it reports, the drop in
     * committed bytes; the log cache keeps fewer pinned chunks, the ones left more than
     * half used; the block cache holds fewer blocks; the pool holds fewer
     * bytes of chunks and blocks, and no more committed bytes than before.
     */
    @Test
    void demoRunsCompactsAndReleasesEverything() throws Exception {
        BrokerCacheDemo.Outcome outcome = BrokerCacheDemo.measure(2000);
        assertTrue(outcome.succeeded());
        CompactionStats done = outcome.compaction();
        assertTrue(done.chunksFreed() > 0, done::toString);
        // what it reports freed is what left the pool: with region groups, a chunk emptied back into a group that
        // still holds others frees nothing yet
        assertEquals(outcome.poolBefore().committedBytes() - outcome.poolAfter().committedBytes(), done.bytesFreed(),
                outcome::toString);
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
     * What the compaction frees leaves the process when each chunk is a
     * region of its own (as with {@code MALLOC_MMAP_THRESHOLD_} set, with
     * mapped chunks, or with region groups turned off, as here): the committed
     * bytes drop by what it freed. With region groups (the default on glibc
     * without that variable) a freed chunk goes back to its 32 MiB group, for
     * the next chunk the pool needs, and committed bytes drop only when a whole
     * group empties; the test above checks the chunks and blocks held instead.
     */
    @Test
    void withoutRegionGroupsCompactionLowersTheCommittedBytes() throws Exception {
        String before = System.getProperty("slabwise.noRegionGroups");
        System.setProperty("slabwise.noRegionGroups", "true"); // read when the demo's pool is built
        BrokerCacheDemo.Outcome outcome;
        try {
            outcome = BrokerCacheDemo.measure(2000);
        } finally {
            if (before == null) {
                System.clearProperty("slabwise.noRegionGroups");
            } else {
                System.setProperty("slabwise.noRegionGroups", before);
            }
        }
        long freed = outcome.compaction().bytesFreed();
        assertTrue(freed > 32L << 20, outcome::toString);
        long dropped = outcome.poolBefore().committedBytes() - outcome.poolAfter().committedBytes();
        assertTrue(dropped >= freed / 2, () -> "committed dropped by " + dropped + " for " + freed + " freed: " + outcome);
    }
}
