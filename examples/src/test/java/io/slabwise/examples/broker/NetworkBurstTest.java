package io.slabwise.examples.broker;

import io.slabwise.PressureStats;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pressure phase of the broker demo: a network burst of a quarter and of
 * half the ceiling, with the caches full. With shrinkers it is served whole
 * while the caches shed about what it lacked; on fixed budgets (2 : 1 : 1 of
 * six parts) the same burst is refused beyond the network's sixth.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NetworkBurstTest {

    /**
     * Served with zero refusals; the caches shed at least what the burst
     * lacked beyond the free room under the ceiling, and at most 1.2 times
     * that plus one chunk per cache: an allocation at the ceiling asks for at
     * least a chunk, and what a cache drops may leave its last chunk
     * partly used, so that one more round is asked for.
     */
    @ParameterizedTest
    @ValueSource(doubles = {0.25, 0.5})
    void withShrinkersTheBurstIsServedAndTheCachesShedAboutWhatItLacked(double share) {
        NetworkBurst.Outcome outcome = NetworkBurst.run(true, share);
        assertEquals(outcome.burstBytes(), outcome.served(), outcome::toString);
        assertEquals(0, outcome.refused(), outcome::toString);
        assertTrue(outcome.needed() > outcome.burstBytes() / 2, "the caches filled the pool first: " + outcome);
        assertTrue(outcome.shed() >= outcome.needed() - NetworkBurst.CHUNK, outcome::toString);
        assertTrue(outcome.shed() <= 1.2 * outcome.needed() + 2 * NetworkBurst.CHUNK,
                () -> "shed " + outcome.shed() + " for " + outcome.needed() + " needed: " + outcome);
        assertTrue(outcome.logAfter() < outcome.logBefore() && outcome.blocksAfter() < outcome.blocksBefore(),
                "both caches gave: " + outcome);
        assertTrue(outcome.shrinkEvictions() > 0);
        PressureStats pressure = outcome.pressure();
        assertTrue(pressure.limitShrinksServed() > 0, pressure::toString);
        assertEquals(0, pressure.category("log_cache").failures() + pressure.category("block_cache").failures());
        assertTrue(outcome.logHits()[1] >= 99, "tail readers still hit: the log cache dropped its oldest: " + outcome);
        assertTrue(outcome.pressureReport().contains("shrinker log_cache"), outcome.pressureReport());
        assertTrue(outcome.accountingExact() && outcome.released(), outcome::toString);
    }

    /** On fixed budgets the network's quota refuses what passes its sixth of the ceiling, and the caches keep all. */
    @ParameterizedTest
    @ValueSource(doubles = {0.25, 0.5})
    void onFixedBudgetsTheSameBurstIsRefused(double share) {
        NetworkBurst.Outcome outcome = NetworkBurst.run(false, share);
        assertTrue(outcome.refused() >= outcome.burstBytes() - NetworkBurst.CEILING / 6, outcome::toString);
        assertTrue(outcome.served() <= NetworkBurst.CEILING / 6, outcome::toString);
        assertEquals(outcome.burstBytes(), outcome.served() + outcome.refused());
        assertEquals(0, outcome.shed(), outcome::toString);
        assertEquals(0, outcome.shrinkEvictions());
        assertTrue(outcome.pressure().categories().isEmpty(), "no shrinker was ever asked");
        assertTrue(outcome.accountingExact() && outcome.released(), outcome::toString);
    }
}
