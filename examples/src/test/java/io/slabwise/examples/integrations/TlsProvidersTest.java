package io.slabwise.examples.integrations;

import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslProvider;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Netty's {@code SslHandler} on {@link SlabwiseAllocator} buffers, with the
 * JDK's {@code SSLEngine} and with netty-tcnative's BoringSSL, which reads
 * and writes direct buffers through their native addresses: 64 MiB each way
 * over eight connections in frames of 1 B to 5 MiB, echoed. See
 * {@link FrameworkTrafficTest} for what is checked. Where netty-tcnative
 * cannot load, the OpenSSL case is skipped and says why.
 */
@Timeout(180)
class TlsProvidersTest extends FrameworkTrafficTest {

    private static SelfSignedKey key;

    @BeforeAll
    static void generateKey() throws Exception {
        key = SelfSignedKey.generate();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = SslProvider.class, names = {"JDK", "OPENSSL"})
    void everyFrameEchoedThroughSlabwiseAndEverythingGivenBack(SslProvider provider) throws Exception {
        if (provider == SslProvider.OPENSSL) {
            String reason = "netty-tcnative cannot load here: " + OpenSsl.unavailabilityCause();
            if (!OpenSsl.isAvailable()) {
                System.out.println("SKIPPED " + provider + ": " + reason);
            }
            Assumptions.assumeTrue(OpenSsl.isAvailable(), reason);
            System.out.println("OpenSSL: " + OpenSsl.versionString());
        }
        BodyPlan plan = BodyPlan.standard(provider.ordinal() + 23);
        Exchange exchange = TlsEchoExample.run(SlabwiseAllocator.builder().build(), provider, key, plan);
        assertServedIntactAndReturned(exchange, plan);
    }
}
