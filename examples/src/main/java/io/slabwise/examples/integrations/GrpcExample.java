package io.slabwise.examples.integrations;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.slabwise.netty.SlabwiseAllocator;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

/**
 * gRPC-java over grpc-netty on Slabwise, with unary and bidirectional
 * streaming calls: the allocator goes to the server with
 * {@code NettyServerBuilder.withOption(ChannelOption.ALLOCATOR, a).withChildOption(ChannelOption.ALLOCATOR, a)}
 * and to the channel with {@code NettyChannelBuilder.withOption(ChannelOption.ALLOCATOR, a)}.
 * Without them grpc-netty gives its channels a pooled allocator of its own.
 *
 * <p>The service is defined without generated code: two
 * {@link MethodDescriptor}s whose messages are byte arrays, served through
 * {@link ServerCalls} and called through {@link ClientCalls}. Every body of a
 * {@link BodyPlan} is echoed: a quarter each over four lanes of unary calls
 * (one call at a time per lane) and over four bidirectional streams (one
 * message in flight per stream), so eight HTTP/2 streams run at once on the
 * channel's connection. A message is parsed while gRPC still holds it in the
 * channel's buffers, which is where the example checks that it lies in the
 * side's category ({@value #SERVER_CATEGORY}, {@value #CLIENT_CATEGORY}).
 *
 * <p>Run with {@code mvn -q -B install -DskipTests && mvn -q -B -pl examples exec:java
 * -Dexec.mainClass=io.slabwise.examples.integrations.GrpcExample}.
 * It moves 64 MiB each way and exits with status 1 if anything went wrong.
 */
public final class GrpcExample {

    /** The server's category. */
    public static final String SERVER_CATEGORY = "grpc_server";
    /** The client's category. */
    public static final String CLIENT_CATEGORY = "grpc_client";
    /** Lanes of unary calls, one call at a time each. */
    public static final int UNARY_LANES = 4;
    /** Bidirectional streams, one message in flight each. */
    public static final int STREAMS = 4;

    private static final String SERVICE = "slabwise.examples.Echo";

    private GrpcExample() {
    }

    /** Runs the example and prints what moved. */
    public static void main(String[] args) throws Exception {
        try (SlabwiseAllocator allocator = SlabwiseAllocator.builder().build()) {
            Exchange exchange = run(allocator, BodyPlan.standard(42));
            System.out.print(exchange.summary());
            System.exit(exchange.intact() && exchange.afterShutdown().requestedBytes() == 0 ? 0 : 1);
        }
    }

    /**
     * Starts a server and a channel on {@code allocator}, echoes every body of
     * {@code plan}, shuts both down and waits for their threads to end.
     *
     * @throws IOException when the server cannot start
     * @throws InterruptedException when interrupted while waiting
     */
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    public static Exchange run(SlabwiseAllocator allocator, BodyPlan plan) throws IOException, InterruptedException {
        Exchange exchange = new Exchange("gRPC over grpc-netty, " + UNARY_LANES + " unary lanes and " + STREAMS + " streams",
                allocator, SERVER_CATEGORY, CLIENT_CATEGORY);
        RecordedThreads threads = new RecordedThreads();
        EventLoopGroup boss = new NioEventLoopGroup(1, threads.factory("grpc-boss"));
        EventLoopGroup workers = new NioEventLoopGroup(2, threads.factory("grpc-server"));
        EventLoopGroup clientLoops = new NioEventLoopGroup(2, threads.factory("grpc-client"));
        ExecutorService serverCalls = Executors.newFixedThreadPool(2, threads.factory("grpc-server-calls"));
        ExecutorService clientCalls = Executors.newFixedThreadPool(2, threads.factory("grpc-client-calls"));
        int maxMessage = plan.largest() + 1024;
        Server server = null;
        ManagedChannel channel = null;
        try {
            server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                    .channelType(NioServerSocketChannel.class)
                    .bossEventLoopGroup(boss)
                    .workerEventLoopGroup(workers)
                    .executor(serverCalls)
                    .withOption(ChannelOption.ALLOCATOR, exchange.serverAllocator())
                    .withChildOption(ChannelOption.ALLOCATOR, exchange.serverAllocator())
                    .maxInboundMessageSize(maxMessage)
                    .addService(echoService(exchange))
                    .build()
                    .start();
            channel = NettyChannelBuilder.forAddress(new InetSocketAddress("127.0.0.1", server.getPort()))
                    .channelType(NioSocketChannel.class)
                    .eventLoopGroup(clientLoops)
                    .executor(clientCalls)
                    .offloadExecutor(clientCalls)
                    .withOption(ChannelOption.ALLOCATOR, exchange.clientAllocator())
                    .maxInboundMessageSize(maxMessage)
                    .usePlaintext()
                    .build();
            exchange.trafficStarts();
            int lanes = UNARY_LANES + STREAMS;
            CountDownLatch done = new CountDownLatch(lanes);
            for (int lane = 0; lane < lanes; lane++) {
                List<Integer> bodies = new ArrayList<>();
                for (int i = lane; i < plan.bodies(); i += lanes) {
                    bodies.add(i);
                }
                if (lane < UNARY_LANES) {
                    new UnaryLane(channel, exchange, plan, bodies, done).next();
                } else {
                    new StreamLane(channel, exchange, plan, bodies, done).start();
                }
            }
            if (!done.await(3, TimeUnit.MINUTES)) {
                exchange.fail("the calls did not finish in 3 minutes");
            }
        } finally {
            if (channel != null) {
                channel.shutdown().awaitTermination(30, TimeUnit.SECONDS);
            }
            if (server != null) {
                server.shutdown().awaitTermination(30, TimeUnit.SECONDS);
            }
            clientCalls.shutdown();
            serverCalls.shutdown();
            clientCalls.awaitTermination(30, TimeUnit.SECONDS);
            serverCalls.awaitTermination(30, TimeUnit.SECONDS);
            clientLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
            threads.awaitEnd(Duration.ofSeconds(30));
        }
        exchange.finish(threads);
        return exchange;
    }

    /** The echo service: a unary method and a bidirectional streaming one, parsing on the server's side. */
    private static ServerServiceDefinition echoService(Exchange exchange) {
        BodyMarshaller requests = new BodyMarshaller(length -> exchange.serverHolds(null, length));
        return ServerServiceDefinition.builder(SERVICE)
                .addMethod(unary(requests), ServerCalls.asyncUnaryCall((request, responses) -> {
                    echo(exchange, request);
                    responses.onNext(request);
                    responses.onCompleted();
                }))
                .addMethod(stream(requests), ServerCalls.asyncBidiStreamingCall(responses -> new StreamObserver<byte[]>() {
                    @Override
                    public void onNext(byte[] request) {
                        echo(exchange, request);
                        responses.onNext(request);
                    }

                    @Override
                    public void onError(Throwable t) {
                        exchange.fail("server stream", t);
                    }

                    @Override
                    public void onCompleted() {
                        responses.onCompleted();
                    }
                }))
                .build();
    }

    private static void echo(Exchange exchange, byte[] request) {
        int crc = BodyPlan.crc(request);
        exchange.serverReceived().add(crc, request.length);
        exchange.serverSent().add(crc, request.length);
    }

    private static MethodDescriptor<byte[], byte[]> unary(BodyMarshaller marshaller) {
        return method(MethodDescriptor.MethodType.UNARY, "Unary", marshaller);
    }

    private static MethodDescriptor<byte[], byte[]> stream(BodyMarshaller marshaller) {
        return method(MethodDescriptor.MethodType.BIDI_STREAMING, "Stream", marshaller);
    }

    private static MethodDescriptor<byte[], byte[]> method(MethodDescriptor.MethodType type, String name,
                                                           BodyMarshaller marshaller) {
        return MethodDescriptor.<byte[], byte[]>newBuilder()
                .setType(type)
                .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
                .setRequestMarshaller(marshaller)
                .setResponseMarshaller(marshaller)
                .build();
    }

    /**
     * Messages as byte arrays. gRPC calls {@link #parse} with a stream over the
     * buffers it received the whole message in, still held, so the receiving
     * side checks there that they lie in its category.
     */
    private static final class BodyMarshaller implements MethodDescriptor.Marshaller<byte[]> {
        private final IntConsumer holding;

        BodyMarshaller(IntConsumer holding) {
            this.holding = holding;
        }

        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                holding.accept(stream.available()); // gRPC's message streams know their length
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** Unary calls, one at a time: the next starts when the previous has completed. */
    private static final class UnaryLane implements StreamObserver<byte[]> {
        private final ManagedChannel channel;
        private final Exchange exchange;
        private final BodyPlan plan;
        private final ArrayDeque<Integer> bodies;
        private final CountDownLatch done;
        private final MethodDescriptor<byte[], byte[]> method;
        private int current = -1;

        UnaryLane(ManagedChannel channel, Exchange exchange, BodyPlan plan, List<Integer> bodies, CountDownLatch done) {
            this.channel = channel;
            this.exchange = exchange;
            this.plan = plan;
            this.bodies = new ArrayDeque<>(bodies);
            this.done = done;
            this.method = unary(new BodyMarshaller(length -> exchange.clientHolds(null, length)));
        }

        void next() {
            Integer i = bodies.poll();
            if (i == null) {
                done.countDown();
                return;
            }
            current = i;
            exchange.clientSent().add(plan.crc(i), plan.size(i));
            ClientCalls.asyncUnaryCall(channel.newCall(method, CallOptions.DEFAULT), plan.toArray(i), this);
        }

        @Override
        public void onNext(byte[] response) {
            received(exchange, plan, current, response);
        }

        @Override
        public void onError(Throwable t) {
            exchange.fail("unary call of body " + current, t);
            done.countDown();
        }

        @Override
        public void onCompleted() {
            next();
        }
    }

    /** One bidirectional stream: a message is sent when the previous one has come back. */
    private static final class StreamLane implements StreamObserver<byte[]> {
        private final ManagedChannel channel;
        private final Exchange exchange;
        private final BodyPlan plan;
        private final ArrayDeque<Integer> bodies;
        private final CountDownLatch done;
        private StreamObserver<byte[]> requests;
        private int current = -1;

        StreamLane(ManagedChannel channel, Exchange exchange, BodyPlan plan, List<Integer> bodies, CountDownLatch done) {
            this.channel = channel;
            this.exchange = exchange;
            this.plan = plan;
            this.bodies = new ArrayDeque<>(bodies);
            this.done = done;
        }

        void start() {
            MethodDescriptor<byte[], byte[]> method = stream(new BodyMarshaller(length -> exchange.clientHolds(null, length)));
            synchronized (this) {
                requests = ClientCalls.asyncBidiStreamingCall(channel.newCall(method, CallOptions.DEFAULT), this);
                sendNext();
            }
        }

        private void sendNext() {
            Integer i = bodies.poll();
            if (i == null) {
                requests.onCompleted();
                return;
            }
            current = i;
            exchange.clientSent().add(plan.crc(i), plan.size(i));
            requests.onNext(plan.toArray(i));
        }

        @Override
        public synchronized void onNext(byte[] response) {
            received(exchange, plan, current, response);
            sendNext();
        }

        @Override
        public void onError(Throwable t) {
            exchange.fail("stream at body " + current, t);
            done.countDown();
        }

        @Override
        public void onCompleted() {
            done.countDown();
        }
    }

    private static void received(Exchange exchange, BodyPlan plan, int i, byte[] response) {
        exchange.clientReceived().add(BodyPlan.crc(response), response.length);
        if (!plan.matches(i, response)) {
            exchange.fail("body " + i + " (" + plan.size(i) + " bytes) came back as " + response.length
                    + " bytes" + (response.length == plan.size(i) ? ", not the same bytes" : ""));
        }
    }
}
