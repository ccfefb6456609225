package io.slabwise.benchmarks.soak;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.concurrent.EventExecutor;
import io.slabwise.MemoryLimitException;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * The soak's HTTP traffic: a Netty HTTP/1.1 server on loopback whose channels
 * allocate from the pool's {@code network} category, and clients on keep-alive
 * connections whose channels allocate from {@code http_client}, each driven by
 * one soak worker that sends a request, waits for the whole response, checks
 * it and releases it. {@code GET /?size=N&stamp=S} answers N bytes of a
 * template with S at both ends, written into a fresh direct buffer.
 *
 * <pre>
 *  worker ──request──▶ client channel (http_client) ──loopback──▶ server channel (network)
 *         ◀─response── aggregated, retained for the worker  ◀──── body allocated, filled, written, released
 * </pre>
 *
 * <p>Between two requests a connection holds no buffer, so at a quiescent
 * point both categories must be empty, once the event loops have run what
 * was queued when the workers stopped ({@link #drainEventLoops}). A request
 * that fails (the pool's ceiling or the chunk source refused a buffer on
 * either side, and the side that was refused closed its connection) is
 * counted, and the worker opens a new connection.
 */
final class HttpLoad {

    /** The longest a worker waits for a response before it gives up on its connection. */
    private static final long RESPONSE_TIMEOUT_MILLIS = 10_000;

    private final EventLoopGroup boss;
    private final EventLoopGroup serverLoops;
    private final EventLoopGroup clientLoops;
    private final Channel server;
    private final Bootstrap client;
    private final InetSocketAddress address;
    private final byte[] template;
    private final Consumer<Throwable> unexpected;
    private final LongAdder responses = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private final LongAdder serverRefusals = new LongAdder();

    /**
     * Starts the server on {@code port} of 127.0.0.1 (0: any free port).
     *
     * @param unexpected told of every error that no refusal explains, on any thread
     */
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    HttpLoad(ByteBufAllocator serverAllocator, ByteBufAllocator clientAllocator, int port, byte[] template,
             Consumer<Throwable> unexpected) throws InterruptedException {
        this.template = template;
        this.unexpected = unexpected;
        boss = new NioEventLoopGroup(1);
        serverLoops = new NioEventLoopGroup(1);
        clientLoops = new NioEventLoopGroup(1);
        server = new ServerBootstrap().group(boss, serverLoops).channel(NioServerSocketChannel.class)
                .option(ChannelOption.ALLOCATOR, serverAllocator)
                .childOption(ChannelOption.ALLOCATOR, serverAllocator)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 16), new ServerHandler());
                    }
                }).bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
        address = (InetSocketAddress) server.localAddress();
        client = new Bootstrap().group(clientLoops).channel(NioSocketChannel.class)
                .option(ChannelOption.ALLOCATOR, clientAllocator)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(8 << 20), new ClientHandler());
                    }
                });
    }

    /** Whether {@code error} is what a refused buffer or a connection closed because of one looks like. */
    static boolean expected(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof MemoryLimitException || t instanceof RefusingChunkSource.Refusal
                    || t instanceof IOException || t instanceof TimeoutException) {
                return true; // IOException covers ClosedChannelException and resets: the other side closed after a refusal
            }
        }
        return false;
    }

    /** Responses received and checked so far. */
    long responses() {
        return responses.sum();
    }

    /** Requests that failed (and the connection with them) so far. */
    long failures() {
        return failures.sum();
    }

    /**
     * Server connections closed after an expected error: a buffer refused
     * (the ceiling or the chunk source), or the client's side gone.
     */
    long serverRefusals() {
        return serverRefusals.sum();
    }

    /**
     * Runs every task the event loops have queued so far, by queueing one
     * more on each and waiting for it: a buffer released in the task that
     * wrote or read it is released once this returns.
     *
     * @return false when an event loop did not run the task within {@code timeoutMillis}
     */
    boolean drainEventLoops(long timeoutMillis) throws InterruptedException {
        for (EventLoopGroup group : new EventLoopGroup[] {boss, serverLoops, clientLoops}) {
            for (EventExecutor loop : group) {
                if (!loop.submit(() -> { }).await(timeoutMillis)) {
                    return false;
                }
            }
        }
        return true;
    }

    /** One client connection, driven by one soak worker. */
    final class Connection {
        private final SplittableRandom random;
        private final int minSize;
        private final int maxSize;
        private Channel channel;
        private int stamp;

        Connection(long seed, int minSize, int maxSize) {
            this.random = new SplittableRandom(seed);
            this.minSize = minSize;
            this.maxSize = maxSize;
        }

        /**
         * Sends one request of a seeded size and waits for its response;
         * a failure closes the connection, to be opened again next time.
         */
        void exchange() throws InterruptedException {
            int size = minSize + random.nextInt(maxSize - minSize + 1);
            int expectedStamp = ++stamp;
            CompletableFuture<FullHttpResponse> pending = new CompletableFuture<>();
            try {
                if (channel == null || !channel.isActive()) {
                    channel = client.connect(address).sync().channel();
                }
                channel.pipeline().get(ClientHandler.class).pending = pending;
                FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET,
                        "/?size=" + size + "&stamp=" + expectedStamp, Unpooled.EMPTY_BUFFER);
                request.headers().set(HttpHeaderNames.HOST, "127.0.0.1")
                        .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
                channel.writeAndFlush(request).addListener(f -> {
                    if (!f.isSuccess()) {
                        pending.completeExceptionally(f.cause());
                    }
                });
                FullHttpResponse response;
                try {
                    response = pending.get(RESPONSE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    if (pending.completeExceptionally(e)) {
                        throw e;
                    }
                    response = pending.join(); // it came as the wait ended
                }
                try {
                    if (!response.status().equals(HttpResponseStatus.OK) || response.content().readableBytes() != size) {
                        throw new IllegalStateException("a response of " + response.content().readableBytes()
                                + " bytes with status " + response.status() + " to a request of " + size + " bytes");
                    }
                    Contents.check(response.content(), expectedStamp, "HTTP response");
                } finally {
                    response.release();
                }
                responses.increment();
            } catch (ExecutionException | TimeoutException | RuntimeException e) {
                Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
                failures.increment();
                if (!expected(cause)) {
                    unexpected.accept(cause);
                }
                close();
            } catch (InterruptedException e) {
                throw e;
            } catch (Exception e) { // a failed connect: sync() rethrows its cause as is
                failures.increment();
                if (!expected(e)) {
                    unexpected.accept(e);
                }
                close();
            }
        }

        /** Closes the connection and waits until it is closed. */
        void close() throws InterruptedException {
            if (channel != null) {
                channel.close().await();
                channel = null;
            }
        }
    }

    /** A new connection whose request sizes come from {@code seed}, from {@code minSize} to {@code maxSize} bytes. */
    Connection connection(long seed, int minSize, int maxSize) {
        return new Connection(seed, minSize, maxSize);
    }

    /** Closes the server and shuts the event loops down, waiting for them. */
    void close() throws InterruptedException {
        server.close().await();
        for (EventLoopGroup group : new EventLoopGroup[] {clientLoops, serverLoops, boss}) {
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).await();
        }
    }

    /** Answers {@code /?size=N&stamp=S}; a refused buffer closes the connection. */
    private final class ServerHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            QueryStringDecoder uri = new QueryStringDecoder(request.uri());
            int size = Integer.parseInt(first(uri, "size"));
            int stamp = Integer.parseInt(first(uri, "stamp"));
            ByteBuf body = ctx.alloc().directBuffer(size, size);
            Contents.fill(body, template, stamp);
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, body);
            HttpUtil.setContentLength(response, size);
            HttpUtil.setKeepAlive(response, true);
            ctx.writeAndFlush(response);
        }

        private String first(QueryStringDecoder uri, String name) {
            List<String> values = uri.parameters().get(name);
            if (values == null || values.isEmpty()) {
                throw new IllegalArgumentException("no " + name + " in " + uri.uri());
            }
            return values.get(0);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (expected(cause)) {
                serverRefusals.increment();
            } else {
                unexpected.accept(cause);
            }
            ctx.close();
        }
    }

    /** Hands the response of the pending request to the worker waiting for it. */
    private static final class ClientHandler extends SimpleChannelInboundHandler<FullHttpResponse> {
        /** Set by the worker before it writes a request; completed on the event loop. */
        volatile CompletableFuture<FullHttpResponse> pending;

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse response) {
            CompletableFuture<FullHttpResponse> waiting = pending;
            FullHttpResponse retained = response.retain();
            if (waiting == null || !waiting.complete(retained)) {
                retained.release(); // nobody waits for it any longer: the worker gave up on this connection
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            CompletableFuture<FullHttpResponse> waiting = pending;
            if (waiting != null) {
                waiting.completeExceptionally(cause);
            }
            ctx.close();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            CompletableFuture<FullHttpResponse> waiting = pending;
            if (waiting != null) {
                waiting.completeExceptionally(new ClosedChannelException());
            }
            ctx.fireChannelInactive();
        }
    }
}
