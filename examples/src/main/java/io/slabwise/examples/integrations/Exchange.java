package io.slabwise.examples.integrations;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.Channel;
import io.slabwise.CategoryStats;
import io.slabwise.PoolStats;
import io.slabwise.netty.SlabwiseAllocator;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAdder;

/**
 * One run of an example: a client and a server, each given a category view
 * of one {@link SlabwiseAllocator}, trading echoed bodies. It keeps
 *
 * <ul>
 *   <li>four {@link Tally tallies}: what the client sent, what the server
 *       received, what the server sent back and what the client received;</li>
 *   <li>the <em>residency checks</em>: each time a receiver holds a whole
 *       body, before it lets go, the body's bytes must be in its category's
 *       live buffers (the category's requested bytes are at least the body's
 *       length) and, where the receiver sees the buffers, every one of them
 *       must come from its side's view (its {@code alloc()});</li>
 *   <li>what the allocators a framework falls back on ({@link FallbackAllocators})
 *       served from the start of the traffic to the end of the shutdown, and
 *       how many channels came with another allocator and were given their
 *       side's view (HTTP/2 streams), and, where a framework tells, in which
 *       protocol version each side saw each request or response;</li>
 *   <li>the failures seen on any thread (a wrong byte, a refused check, an
 *       exception), and the allocator's figures at the start and once the
 *       framework has shut down and its threads have ended.</li>
 * </ul>
 *
 * <p>Safe to use from any number of threads.
 */
public final class Exchange {

    private static final int KEPT_FAILURES = 20;

    private final String name;
    private final SlabwiseAllocator allocator;
    private final String serverCategory;
    private final String clientCategory;
    private final ByteBufAllocator serverView;
    private final ByteBufAllocator clientView;
    private final Tally clientSent = new Tally();
    private final Tally serverReceived = new Tally();
    private final Tally serverSent = new Tally();
    private final Tally clientReceived = new Tally();
    /** Snapshots a residency check reads at most before it fails. */
    private static final int RESIDENCY_READS = 3;
    private final LongAdder residencyChecks = new LongAdder();
    private final LongAdder serverChannelsAdopted = new LongAdder();
    private final LongAdder clientChannelsAdopted = new LongAdder();
    private volatile String adoptedFrom = "";
    private final Map<String, LongAdder> protocolsSeen = new ConcurrentHashMap<>();
    private final LongAdder failureCount = new LongAdder();
    private final Queue<String> failures = new ConcurrentLinkedQueue<>();
    private volatile PoolStats atStart;
    private volatile FallbackAllocators fallbackAtStart;
    private volatile List<String> fallbackChanges = List.of();
    private volatile PoolStats afterShutdown;
    private volatile String threadsAlive = "";

    /** Starts an exchange named {@code name} between two categories of {@code allocator}. */
    public Exchange(String name, SlabwiseAllocator allocator, String serverCategory, String clientCategory) {
        this.name = name;
        this.allocator = allocator;
        this.serverCategory = serverCategory;
        this.clientCategory = clientCategory;
        this.serverView = allocator.forCategory(serverCategory);
        this.clientView = allocator.forCategory(clientCategory);
        trafficStarts();
    }

    /**
     * Marks the start of the traffic, once the server and client are set up
     * (their TLS contexts built): takes the allocator's figures and those of
     * the {@link FallbackAllocators} that {@link #finish} compares with.
     */
    public void trafficStarts() {
        this.atStart = allocator.stats();
        this.fallbackAtStart = FallbackAllocators.now();
    }

    /** The allocator to give the server's channels. */
    public ByteBufAllocator serverAllocator() {
        return serverView;
    }

    /** The allocator to give the client's channels. */
    public ByteBufAllocator clientAllocator() {
        return clientView;
    }

    /** The allocator both views belong to. */
    public SlabwiseAllocator allocator() {
        return allocator;
    }

    /** The server's category. */
    public String serverCategory() {
        return serverCategory;
    }

    /** The client's category. */
    public String clientCategory() {
        return clientCategory;
    }

    /** What the client sent. */
    public Tally clientSent() {
        return clientSent;
    }

    /** What the server received. */
    public Tally serverReceived() {
        return serverReceived;
    }

    /** What the server sent back. */
    public Tally serverSent() {
        return serverSent;
    }

    /** What the client received. */
    public Tally clientReceived() {
        return clientReceived;
    }

    /**
     * The server holds a whole body of {@code length} bytes, in {@code body}
     * when it sees the buffer (null where the framework hides it): checks that
     * it lies in the server's category.
     */
    public void serverHolds(ByteBuf body, int length) {
        checkResidency("server", serverCategory, serverView, body, length);
    }

    /**
     * Gives a server channel the server's view when it came with another
     * allocator, as an HTTP/2 stream's child channel does (it starts with
     * Netty's default, not its connection's), and counts it.
     */
    public void adoptServerChannel(Channel channel) {
        adopt(channel, serverView, serverChannelsAdopted);
    }

    /** Gives a client channel the client's view; see {@link #adoptServerChannel(Channel)}. */
    public void adoptClientChannel(Channel channel) {
        adopt(channel, clientView, clientChannelsAdopted);
    }

    private void adopt(Channel channel, ByteBufAllocator view, LongAdder adopted) {
        ByteBufAllocator previous = channel.config().getAllocator();
        if (previous != view) {
            adopted.increment();
            adoptedFrom = channel.getClass().getSimpleName() + " came with " + previous;
            channel.config().setAllocator(view);
        }
    }

    /** Server channels that came with another allocator and were given the server's view. */
    public long serverChannelsAdopted() {
        return serverChannelsAdopted.sum();
    }

    /** Client channels that came with another allocator and were given the client's view. */
    public long clientChannelsAdopted() {
        return clientChannelsAdopted.sum();
    }

    /**
     * Counts a request ({@code side} "server") or a response ({@code side}
     * "client") seen in {@code version}, as the framework names it
     * ({@code HTTP/1.1}, {@code HTTP/2.0}).
     */
    public void sawProtocol(String side, String version) {
        protocolsSeen.computeIfAbsent(side + " " + version, k -> new LongAdder()).increment();
    }

    /** What {@link #sawProtocol} counted, by side and version ({@code "server HTTP/2.0"}), in order. */
    public Map<String, Long> protocolsSeen() {
        Map<String, Long> seen = new TreeMap<>();
        protocolsSeen.forEach((key, count) -> seen.put(key, count.sum()));
        return seen;
    }

    /** The client holds a whole body; see {@link #serverHolds(ByteBuf, int)}. */
    public void clientHolds(ByteBuf body, int length) {
        checkResidency("client", clientCategory, clientView, body, length);
    }

    private void checkResidency(String side, String category, ByteBufAllocator view, ByteBuf body, int length) {
        residencyChecks.increment();
        // a snapshot read while other threads allocate and release can miss a buffer that one allocated and another
        // released during the read (PoolStats: figures are exact only when quiet); the body this thread holds stays,
        // so a later snapshot sees it: a body held outside the category fails every read
        long requested = 0;
        for (int read = 0; read < RESIDENCY_READS && requested < length; read++) {
            CategoryStats figures = allocator.stats().category(category);
            requested = Math.max(requested, figures == null ? 0 : figures.requested());
        }
        if (requested < length) {
            fail(side + " held a body of " + length + " bytes while category " + category + " had " + requested
                    + " bytes requested");
        }
        if (body != null) {
            if (body instanceof CompositeByteBuf composite) {
                for (int i = 0; i < composite.numComponents(); i++) {
                    checkSource(side, view, composite.component(i));
                }
            } else {
                checkSource(side, view, body);
            }
        }
    }

    private void checkSource(String side, ByteBufAllocator view, ByteBuf part) {
        if (part.alloc() != view) {
            fail(side + " held body bytes in a " + part.getClass().getName() + " (" + part.capacity() + " bytes, direct="
                    + part.isDirect() + ") from " + part.alloc() + ", not from its category view");
        }
    }

    /** Residency checks made. */
    public long residencyChecks() {
        return residencyChecks.sum();
    }

    /** Records a failure; the first few are kept with their text. */
    public void fail(String what) {
        failureCount.increment();
        if (failures.size() < KEPT_FAILURES) {
            failures.add(what);
        }
    }

    /** Records an exception as a failure, with its stack trace. */
    public void fail(String where, Throwable cause) {
        StringWriter trace = new StringWriter();
        cause.printStackTrace(new PrintWriter(trace));
        fail(where + ": " + trace);
    }

    /** How many failures were recorded. */
    public long failureCount() {
        return failureCount.sum();
    }

    /** The first failures recorded (up to 20). */
    public List<String> failures() {
        return new ArrayList<>(failures);
    }

    /** The allocator's figures when the traffic started. */
    public PoolStats atStart() {
        return atStart;
    }

    /** Allocations made in {@code category} since the traffic started, up to {@code now}. */
    public long allocationsSinceStart(PoolStats now, String category) {
        CategoryStats before = atStart.category(category);
        CategoryStats after = now.category(category);
        return (after == null ? 0 : after.allocations()) - (before == null ? 0 : before.allocations());
    }

    /**
     * Ends the exchange: called once the framework has shut down; keeps the
     * allocator's figures, what the fall-back allocators served since the
     * traffic started, and the names of the framework's threads still alive
     * (none when every one ended in time).
     */
    public void finish(RecordedThreads threads) {
        this.threadsAlive = String.join(", ", threads.alive());
        this.afterShutdown = allocator.stats();
        this.fallbackChanges = FallbackAllocators.now().changesSince(fallbackAtStart);
    }

    /**
     * What the allocators a framework falls back on served from the start of
     * the traffic to {@link #finish}: one line per allocator that did; empty
     * when every buffer came from the allocator given.
     */
    public List<String> fallbackChanges() {
        return fallbackChanges;
    }

    /** The allocator's figures once the framework had shut down, or null before {@link #finish}. */
    public PoolStats afterShutdown() {
        return afterShutdown;
    }

    /** The framework's threads still alive at {@link #finish}, comma-separated; empty when none. */
    public String threadsAlive() {
        return threadsAlive;
    }

    /** Whether every body came back intact, both sides agree on every tally and nothing failed. */
    public boolean intact() {
        return failureCount() == 0 && fallbackChanges.isEmpty() && clientSent.bodies() > 0 && clientSent.sameAs(serverReceived)
                && serverSent.sameAs(clientReceived) && clientSent.sameAs(clientReceived);
    }

    /** A few lines on what moved and what the allocator held. */
    public String summary() {
        StringBuilder out = new StringBuilder();
        out.append(name).append('\n');
        out.append("  client sent      ").append(clientSent).append('\n');
        out.append("  server received  ").append(serverReceived).append('\n');
        out.append("  server sent      ").append(serverSent).append('\n');
        out.append("  client received  ").append(clientReceived).append('\n');
        out.append("  residency checks ").append(residencyChecks()).append(", failures ").append(failureCount()).append('\n');
        if (serverChannelsAdopted() + clientChannelsAdopted() > 0) {
            out.append("  channels given their side's view: server ").append(serverChannelsAdopted()).append(", client ")
                    .append(clientChannelsAdopted()).append(" (e.g. ").append(adoptedFrom).append(")\n");
        }
        if (!protocolsSeen.isEmpty()) {
            out.append("  protocols seen   ").append(protocolsSeen()).append('\n');
        }
        PoolStats after = afterShutdown;
        if (after != null) {
            out.append("  allocations      ").append(serverCategory).append('=')
                    .append(allocationsSinceStart(after, serverCategory)).append(' ').append(clientCategory).append('=')
                    .append(allocationsSinceStart(after, clientCategory)).append('\n');
            out.append("  after shutdown   ").append(after.summary()).append('\n');
            out.append("  fall-back allocators ").append(fallbackChanges.isEmpty() ? "served nothing" : fallbackChanges)
                    .append('\n');
        }
        for (String failure : failures) {
            out.append("  FAILED: ").append(failure).append('\n');
        }
        return out.toString();
    }
}
