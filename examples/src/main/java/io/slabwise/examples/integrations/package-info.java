/**
 * Slabwise inside the Netty frameworks people run: Reactor Netty's HTTP
 * server and client ({@link io.slabwise.examples.integrations.ReactorNettyHttpExample}),
 * Spring WebFlux on the Reactor Netty server Spring Boot builds, with a
 * {@code WebClient}, in clear text and over TLS, HTTP/1.1 and HTTP/2
 * ({@link io.slabwise.examples.integrations.WebFluxExample}),
 * gRPC over grpc-netty ({@link io.slabwise.examples.integrations.GrpcExample})
 * and TLS through the JDK's {@code SSLEngine} or netty-tcnative's BoringSSL
 * ({@link io.slabwise.examples.integrations.TlsEchoExample}).
 *
 * <p>Each example gives one {@link io.slabwise.netty.SlabwiseAllocator} to
 * the framework through Netty's {@code ChannelOption.ALLOCATOR}, the server
 * side and the client side each a category view of their own, and moves a
 * {@link io.slabwise.examples.integrations.BodyPlan}: bodies from 1 byte to
 * above the chunk size, over several concurrent connections or streams, each
 * echoed back. An {@link io.slabwise.examples.integrations.Exchange} records
 * what each side sent and received (a digest of every body, not only counts),
 * checks that a receiver holding a whole body holds it in its category's
 * memory, and keeps the allocator's figures once the framework has shut down
 * and its threads have ended.
 *
 * <p>The TLS example runs on any {@link io.slabwise.examples.integrations.Transport}:
 * NIO here, and Netty 4.2's epoll and io_uring in the tests of the
 * {@code netty-4.2-native} build profile.
 *
 * <p>Threads: every framework runs on event loops and executors the example
 * makes through a {@link io.slabwise.examples.integrations.RecordedThreads},
 * so that shutting down can wait until each thread that held a thread cache
 * of the pool has ended.
 */
package io.slabwise.examples.integrations;
