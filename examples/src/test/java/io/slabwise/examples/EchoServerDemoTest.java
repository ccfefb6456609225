package io.slabwise.examples;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The demo runs end to end: real traffic over loopback, every echo verified, nothing leaked. */
class EchoServerDemoTest {

    @Test
    void demoEchoesVerifiedTrafficAndReleasesEverything() throws Exception {
        assertTrue(EchoServerDemo.run(1));
    }
}
