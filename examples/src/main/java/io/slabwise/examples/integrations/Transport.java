package io.slabwise.examples.integrations;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

import java.util.concurrent.ThreadFactory;
import java.util.function.BiFunction;

/**
 * The Netty transport an example runs on: how it makes event loops, and its
 * server and client channel classes. The allocator is the same on every
 * transport; what differs is how a transport reads into and writes from the
 * buffers (NIO through {@code ByteBuffer}s, epoll and io_uring through native
 * calls on the buffers' memory).
 *
 * @param name          a name for messages
 * @param groups        makes an event loop group of so many threads from a thread factory
 * @param serverChannel the listening channel class
 * @param channel       the connection channel class
 */
public record Transport(String name, BiFunction<Integer, ThreadFactory, EventLoopGroup> groups,
                        Class<? extends ServerChannel> serverChannel, Class<? extends SocketChannel> channel) {

    /** Netty's NIO transport, on every platform. */
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in Netty 4.2, the way to go in 4.1
    public static Transport nio() {
        return new Transport("nio", NioEventLoopGroup::new, NioServerSocketChannel.class, NioSocketChannel.class);
    }

    /** A new event loop group of {@code threads} threads made by {@code factory}. */
    public EventLoopGroup newGroup(int threads, ThreadFactory factory) {
        return groups.apply(threads, factory);
    }
}
