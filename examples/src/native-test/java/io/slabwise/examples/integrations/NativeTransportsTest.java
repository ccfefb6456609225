package io.slabwise.examples.integrations;

import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.handler.ssl.SslProvider;
import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The TLS echo of {@link TlsEchoExample} (JDK provider) on Netty 4.2's native
 * transports beside NIO: epoll and io_uring read from and write to the
 * sockets through native calls on Slabwise's buffers. Runs only in the
 * {@code netty-4.2-native} profile, whose Netty (4.2.18.Final) has
 * {@code linux-x86_64} native jars on Maven Central:
 * {@code mvn -B -Pnetty-4.2-native -pl examples -am verify -Dtest=NativeTransportsTest -Dsurefire.failIfNoSpecifiedTests=false}.
 * A transport that cannot load here is skipped, and the reason printed.
 */
@Timeout(180)
class NativeTransportsTest extends FrameworkTrafficTest {

    private static SelfSignedKey key;

    @BeforeAll
    static void generateKey() throws Exception {
        key = SelfSignedKey.generate();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"nio", "epoll", "io_uring"})
    void everyFrameEchoedThroughSlabwiseAndEverythingGivenBack(String name) throws Exception {
        Transport transport = switch (name) {
            case "epoll" -> {
                assumeAvailable(name, Epoll.isAvailable(), Epoll.unavailabilityCause());
                yield new Transport(name, (threads, factory) -> new MultiThreadIoEventLoopGroup(threads, factory,
                        EpollIoHandler.newFactory()), EpollServerSocketChannel.class, EpollSocketChannel.class);
            }
            case "io_uring" -> {
                assumeAvailable(name, IoUring.isAvailable(), IoUring.unavailabilityCause());
                yield new Transport(name, (threads, factory) -> new MultiThreadIoEventLoopGroup(threads, factory,
                        IoUringIoHandler.newFactory()), IoUringServerSocketChannel.class, IoUringSocketChannel.class);
            }
            default -> Transport.nio();
        };
        BodyPlan plan = BodyPlan.standard(name.length() + 31);
        Exchange exchange = TlsEchoExample.run(SlabwiseAllocator.builder().build(), transport, SslProvider.JDK, key, plan);
        assertServedIntactAndReturned(exchange, plan);
    }

    private static void assumeAvailable(String transport, boolean available, Throwable cause) {
        String reason = transport + " is not available here: " + cause;
        if (!available) {
            System.out.println("SKIPPED " + reason);
        }
        Assumptions.assumeTrue(available, reason);
    }
}
