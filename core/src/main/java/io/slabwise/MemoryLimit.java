package io.slabwise;

import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * The ceiling on committed bytes, and the queue of callers waiting for memory.
 *
 * <h2>The ceiling</h2>
 * {@link #tryCommit} adds to the committed count with a CAS that never takes it
 * past {@code max}; it is the only way memory is taken from the chunk source,
 * so committed bytes never exceed the ceiling, under any concurrency.
 *
 * <h2>The compaction reserve</h2>
 * While a category has a relocator, the last {@link #compactionReserve} bytes
 * under the ceiling are kept for the thread that runs a compaction: a move
 * needs new memory before the chunk it empties goes back, and at the ceiling
 * there would be none. Other commits stop that far below {@code max}; the
 * ceiling itself still holds for everyone.
 *
 * <h2>Waiting</h2>
 * Callers whose policy is to wait line up in the {@link WaitQueue} of the
 * resource that refused them: the ceiling's queue, or the queue of their
 * category's quota. Each queue serves in ticket order: only the caller holding
 * its current ticket retries, so a stream of small requests cannot starve a
 * large one waiting for the same resource, while callers that compete for
 * another resource never wait behind it: a caller whose turn came and that
 * the other limit refuses moves to the end of that limit's queue
 * ({@link #requeue}), letting the next caller in its first line try. Releases
 * of memory call {@link #released()}, which is a volatile read when nobody
 * waits, and otherwise bumps a counter and wakes the waiters. The lock here is
 * never held while an arena lock is taken; arena code may call
 * {@link #released()} under its own lock.
 *
 * <p>Deadlines are read on the pool's {@link Ticker}, and waiters park
 * through its {@link Parking}: a test that advances the ticker past a
 * deadline wakes the callers waiting for it, which then time out.
 */
final class MemoryLimit {

    final long max;
    private final Ticker ticker;
    private final Parking parking;
    private final AtomicLong committed = new AtomicLong();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /** Waiters in every queue together. */
    private volatile int waiters;
    private final AtomicLong releases = new AtomicLong();
    /** Whether the pool was closed: nothing new is admitted, and the parts that hold this limit see it. */
    private volatile boolean closed;
    /**
     * The waiters whose turn it is, retrying (the head of the ceiling's line
     * and of quotas' lines may retry at once); their own releases do not
     * count as releases they wait for.
     */
    private final Set<Thread> retrying = ConcurrentHashMap.newKeySet();
    /** Callers waiting for committed memory under the ceiling. */
    final WaitQueue ceilingQueue = new WaitQueue();
    /** Bytes under the ceiling only {@link #compacting} may commit; 0 when no category has a relocator. */
    private volatile long compactionReserve;
    /** The thread running a compaction now, or null; one at a time. */
    private volatile Thread compacting;
    /**
     * Bytes the compacting thread committed, and gave back, since it was
     * marked: what its compaction took for moves and what left the pool
     * through it. Written and read by that thread alone.
     */
    private long committedByCompaction;
    private long uncommittedByCompaction;

    /**
     * The callers waiting for one resource (the ceiling, or one category's
     * quota), served in ticket order. Its fields are guarded by the limit's
     * lock, but for {@link #hasWaiters()}, a volatile read.
     */
    static final class WaitQueue {
        private volatile int waiters;
        private long nextTicket;
        private long servingTicket;
        private final TreeSet<Long> abandoned = new TreeSet<>();

        /** Whether anyone waits in this queue. */
        boolean hasWaiters() {
            return waiters != 0;
        }
    }

    /** A limit whose waits read their deadlines on {@link Ticker#system()}. */
    MemoryLimit(long max) {
        this(max, Ticker.system());
    }

    /** A limit whose waits read their deadlines on {@code ticker} and park through its {@link Parking}. */
    MemoryLimit(long max, Ticker ticker) {
        this.max = max;
        this.ticker = ticker;
        this.parking = Parking.on(ticker);
    }

    long committed() {
        return committed.get();
    }

    /**
     * Closes the limit for good: nothing is admitted from now on, and the
     * callers waiting at it wake up to find it closed.
     *
     * @return false when it was closed already
     */
    synchronized boolean close() {
        if (closed) {
            return false;
        }
        closed = true;
        released();
        return true;
    }

    /** Whether {@link #close()} was called; one volatile read. */
    boolean isClosed() {
        return closed;
    }

    /**
     * Adds {@code bytes} to the committed count unless that would pass the
     * ceiling, or reach into the compaction reserve from any thread but the
     * compacting one.
     */
    boolean tryCommit(long bytes) {
        while (true) {
            long current = committed.get();
            if (current + bytes > max) {
                return false;
            }
            // read only near the ceiling: the fast path stays one comparison
            if (current + bytes > max - compactionReserve && Thread.currentThread() != compacting) {
                return false;
            }
            if (committed.compareAndSet(current, current + bytes)) {
                if (Thread.currentThread() == compacting) {
                    committedByCompaction += bytes;
                }
                return true;
            }
        }
    }

    /**
     * Keeps {@code bytes} under the ceiling for compactions' moves (0: none);
     * nothing when the pool has no ceiling, or one under four times the
     * reserve, which would leave too little to everything else.
     */
    void reserveForCompaction(long bytes) {
        compactionReserve = max == Long.MAX_VALUE || bytes > max / 4 ? 0 : bytes;
    }

    /**
     * The most {@code thread} can ever have committed: the ceiling for the
     * thread running a compaction, the ceiling less the compaction reserve for
     * any other.
     */
    long ceilingFor(Thread thread) {
        return thread == compacting ? max : max - compactionReserve;
    }

    /**
     * Marks the calling thread as the one running a compaction ({@code true}),
     * or unmarks it; marking starts the count of {@link #givenBackByCompaction}.
     */
    void compacting(boolean running) {
        if (running) {
            committedByCompaction = 0;
            uncommittedByCompaction = 0;
        }
        compacting = running ? Thread.currentThread() : null;
    }

    /**
     * What the compacting thread (the caller) gave back less what it
     * committed since it was marked: the bytes by which its compaction
     * lowered committed memory, negative when its moves took more than it
     * freed. Whatever other threads commit or give back meanwhile is not in it.
     */
    long givenBackByCompaction() {
        return uncommittedByCompaction - committedByCompaction;
    }

    void uncommit(long bytes) {
        committed.addAndGet(-bytes);
        if (Thread.currentThread() == compacting) {
            uncommittedByCompaction += bytes;
        }
        released();
    }

    /** How many callers are waiting for memory. */
    int waiters() {
        return waiters;
    }

    /** Whether any caller is waiting for memory. */
    boolean hasWaiters() {
        return waiters != 0;
    }

    /**
     * Memory was released somewhere: wakes the waiters, if any. Any thread,
     * any lock held. A release by a retrying waiter itself (the parts of a
     * payload it took and gave back, idle memory it reclaimed) wakes nobody:
     * it would only make that waiter retry at once, again and again, and
     * leaves the pool as that waiter's try found it.
     */
    void released() {
        if (waiters != 0 && !retrying.contains(Thread.currentThread())) {
            releases.incrementAndGet();
            lock.lock();
            try {
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** Takes a ticket in {@code queue}. */
    long enqueue(WaitQueue queue) {
        lock.lock();
        try {
            waiters++;
            queue.waiters++;
            return queue.nextTicket++;
        } finally {
            lock.unlock();
        }
    }

    /** {@link #awaitTurn}: the caller's turn came. */
    static final int TURN = 0;
    /** {@link #awaitTurn}: the deadline passed first. */
    static final int TIMED_OUT = 1;
    /** {@link #awaitTurn}: the caller's request became hopeless while it waited. */
    static final int GAVE_UP = 2;

    /**
     * Waits until {@code ticket} is served in {@code queue}, checking
     * {@code hopeless} (which must take no lock) before every wait, since a
     * change of a limit wakes the waiters too: {@link #TURN},
     * {@link #TIMED_OUT} (the ticker read {@code deadlineNanos} or later) or
     * {@link #GAVE_UP}.
     */
    int awaitTurn(WaitQueue queue, long ticket, long deadlineNanos, BooleanSupplier hopeless) throws InterruptedException {
        lock.lock();
        try {
            while (queue.servingTicket != ticket) {
                if (hopeless.getAsBoolean()) {
                    return GAVE_UP;
                }
                if (deadlineNanos - ticker.read() <= 0) {
                    return TIMED_OUT;
                }
                parking.parkUntil(lock, changed, deadlineNanos);
            }
            return TURN;
        } finally {
            lock.unlock();
        }
    }

    /** Marks the calling thread as a waiter whose turn it is and that retries ({@code true}), or unmarks it. */
    void retrying(boolean retries) {
        if (retries) {
            retrying.add(Thread.currentThread());
        } else {
            retrying.remove(Thread.currentThread());
        }
    }

    /** The count of releases so far; a waiter reads it before retrying, then waits for it to change. */
    long releaseCount() {
        return releases.get();
    }

    /** The longest {@link #awaitRelease} parks without a release, in ticker nanoseconds. */
    static final long SAFETY_NET_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    /**
     * Waits for a release after {@code seen}, or at most
     * {@link #SAFETY_NET_NANOS} on the ticker (a safety net: the caller
     * retries anyway); false when the ticker has reached the deadline.
     */
    boolean awaitRelease(long seen, long deadlineNanos) throws InterruptedException {
        lock.lock();
        try {
            long now = ticker.read();
            if (deadlineNanos - now <= 0) {
                return false;
            }
            if (releases.get() == seen) {
                long safetyNet = now + SAFETY_NET_NANOS;
                parking.parkUntil(lock, changed, deadlineNanos - safetyNet < 0 ? deadlineNanos : safetyNet);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Leaves {@code queue}, served or not; the next ticket in line gets its turn. */
    void dequeue(WaitQueue queue, long ticket) {
        lock.lock();
        try {
            waiters--;
            leave(queue, ticket);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Leaves {@code from} as {@link #dequeue} does and takes a ticket at the
     * end of {@code to}, still counted as waiting throughout: a caller whose
     * turn came in one line and that the other limit refused.
     *
     * @return the ticket in {@code to}
     */
    long requeue(WaitQueue from, long ticket, WaitQueue to) {
        lock.lock();
        try {
            leave(from, ticket);
            to.waiters++;
            changed.signalAll();
            return to.nextTicket++;
        } finally {
            lock.unlock();
        }
    }

    /** Takes {@code ticket} out of {@code queue}; the lock is held. */
    private static void leave(WaitQueue queue, long ticket) {
        queue.waiters--;
        if (queue.servingTicket == ticket) {
            queue.servingTicket++;
            while (queue.abandoned.remove(queue.servingTicket)) {
                queue.servingTicket++;
            }
        } else {
            queue.abandoned.add(ticket);
        }
    }
}
