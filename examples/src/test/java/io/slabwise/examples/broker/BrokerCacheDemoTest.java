package io.slabwise.examples.broker;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The broker demo runs with producers, tail readers and cold readers at once and releases everything. */
class BrokerCacheDemoTest {

    @Test
    void demoRunsAndReleasesEverything() throws Exception {
        assertTrue(BrokerCacheDemo.run(2000));
    }
}
