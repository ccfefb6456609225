package io.slabwise;

import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Label;
import jdk.jfr.Name;

import java.util.Locale;

/**
 * The pool's JDK Flight Recorder events: what an operator looks for when
 * memory grows, shrinks or runs out. All are in the category
 * {@code Slabwise}:
 *
 * <pre>
 *  event                      kind      emitted by        fields
 *  io.slabwise.ChunkCommitted instant   CommittedMemory   size, kind (chunk|huge|block), committed after
 *  io.slabwise.ChunkReleased  instant   CommittedMemory   size, kind, committed after
 *  io.slabwise.LimitRefused   instant   Admission         category, requested, kind (ceiling|quota), limit,
 *                                                         used, policy, reason
 *  io.slabwise.LimitWait      duration  Admission         category, requested, kind, outcome
 *                                                         (served|timeout|interrupted|closed|failed)
 *  io.slabwise.Trim           duration  IdleMemory        cause (trim|decay|reclaim), regions, bytes,
 *                                                         committed after, native heap trimmed
 *  io.slabwise.Shrink         duration  Pressure          category, cause (background|ceiling|quota), bytes asked,
 *                                                         bytes freed (the shrinker's answer), outcome
 *                                                         (freed|nothing|busy|failed), committed after
 * </pre>
 *
 * <h2>Cost</h2>
 * Every event is emitted on a slow path that already costs far more than the
 * event: a region taken from or given back to the chunk source, a refusal, a
 * wait, a trim. None is emitted on the allocation fast path. While no
 * recording enables an event its class is not instrumented, {@code begin()},
 * {@code end()} and {@code shouldCommit()} do nothing, and the fields are
 * only filled when {@code shouldCommit()} says so. Until the JVM's flight
 * recorder has been initialized (a recording started at launch, through
 * {@code jcmd} or through the API) no event object is made at all: the first
 * use of an event class would otherwise initialize the recorder's machinery,
 * some 100 ms on the thread that happened to commit the pool's first chunk.
 *
 * <p>Decay and reclaiming run often (every second, before every refusal at the
 * ceiling), so their {@code Trim} events are committed only when they gave
 * something back; an explicit {@code trim()} always is.
 *
 * <p>The classes are package-private: their JFR names are the published
 * contract, not the Java types. Any thread.
 */
final class PoolEvents {

    /** The JFR category of every event here. */
    static final String CATEGORY = "Slabwise";

    /** {@link LimitWait#outcome}: the allocation was served. */
    static final String SERVED = "served";
    /** {@link LimitWait#outcome}: the timeout passed first. */
    static final String TIMEOUT = "timeout";
    /** {@link LimitWait#outcome}: the waiting thread was interrupted. */
    static final String INTERRUPTED = "interrupted";
    /** {@link LimitWait#outcome}: the pool was closed while the caller waited. */
    static final String CLOSED = "closed";
    /** {@link LimitWait#outcome}: the attempt threw (the chunk source failed). */
    static final String FAILED = "failed";

    /** {@link LimitRefused#reason}: the policy is to fail or to return nothing. */
    static final String BY_POLICY = "policy";
    /** {@link LimitRefused#reason}: larger than the limit itself; no release could make room. */
    static final String NEVER_SATISFIABLE = "never_satisfiable";
    /** {@link LimitRefused#reason}: the policy is to wait, but this thread may not (or the timeout is zero). */
    static final String WAIT_NOT_ALLOWED = "wait_not_allowed";
    /** {@link LimitRefused#reason}: waited, and the timeout passed. */
    static final String WAIT_TIMEOUT = "wait_timeout";
    /** {@link LimitRefused#reason}: waited, and the thread was interrupted. */
    static final String WAIT_INTERRUPTED = "wait_interrupted";

    /** {@link Trim#cause}: {@code MemoryPool.trim()}. */
    static final String BY_TRIM = "trim";
    /** {@link Trim#cause}: the periodic decay of idle memory. */
    static final String BY_DECAY = "decay";
    /** {@link Trim#cause}: everything idle taken back, before a refusal at the ceiling or after close. */
    static final String BY_RECLAIM = "reclaim";

    private PoolEvents() {
    }

    @Name("io.slabwise.ChunkCommitted")
    @Label("Region Committed")
    @jdk.jfr.Category(CATEGORY)
    @Description("A region of native memory was taken from the chunk source: a pooled chunk, a huge"
            + " region for one request larger than a chunk, or a block region of a block pool")
    static final class ChunkCommitted extends Event {
        @Label("Size")
        @DataAmount
        long size;

        @Label("Kind")
        @Description("chunk, huge or block")
        String kind;

        @Label("Committed")
        @Description("The pool's committed bytes after this region was added")
        @DataAmount
        long committed;
    }

    @Name("io.slabwise.ChunkReleased")
    @Label("Region Released")
    @jdk.jfr.Category(CATEGORY)
    @Description("A region of native memory was given back to the chunk source")
    static final class ChunkReleased extends Event {
        @Label("Size")
        @DataAmount
        long size;

        @Label("Kind")
        @Description("chunk, huge or block")
        String kind;

        @Label("Committed")
        @Description("The pool's committed bytes after this region was taken off")
        @DataAmount
        long committed;
    }

    @Name("io.slabwise.LimitRefused")
    @Label("Allocation Refused at a Limit")
    @jdk.jfr.Category(CATEGORY)
    @Description("An allocation was refused at the pool's ceiling or its category's quota: it returned"
            + " nothing or threw MemoryLimitException")
    static final class LimitRefused extends Event {
        @Label("Category")
        String category;

        @Label("Requested")
        @DataAmount
        long requested;

        @Label("Kind")
        @Description("ceiling (committed bytes of the pool) or quota (reserved bytes of the category)")
        String kind;

        @Label("Limit")
        @DataAmount
        long limit;

        @Label("Used")
        @Description("What counted against the limit when refused: committed bytes, or the category's reserved bytes")
        @DataAmount
        long used;

        @Label("Policy")
        @Description("fail, return_null or wait")
        String policy;

        @Label("Reason")
        @Description("policy, never_satisfiable, wait_not_allowed, wait_timeout or wait_interrupted")
        String reason;
    }

    @Name("io.slabwise.LimitWait")
    @Label("Wait at a Limit")
    @jdk.jfr.Category(CATEGORY)
    @Description("An allocation waited for memory at the pool's ceiling or its category's quota")
    static final class LimitWait extends Event {
        @Label("Category")
        String category;

        @Label("Requested")
        @DataAmount
        long requested;

        @Label("Kind")
        @Description("What it waited for: ceiling or quota")
        String kind;

        @Label("Outcome")
        @Description("served, timeout, interrupted, closed or failed")
        String outcome;
    }

    @Name("io.slabwise.Trim")
    @Label("Idle Memory Given Back")
    @jdk.jfr.Category(CATEGORY)
    @Description("Idle chunks and blocks went back to the chunk source: an explicit trim, the periodic decay,"
            + " or reclaiming before a refusal at the ceiling or after close")
    static final class Trim extends Event {
        @Label("Cause")
        @Description("trim, decay or reclaim")
        String cause;

        @Label("Regions")
        @Description("Chunks and blocks given back")
        int regions;

        @Label("Bytes")
        @DataAmount
        long bytes;

        @Label("Committed")
        @Description("The pool's committed bytes afterwards")
        @DataAmount
        long committed;

        @Label("Native Heap Trimmed")
        @Description("Resident bytes glibc gave back when asked to trim malloc's arenas afterwards; -1 when not asked")
        long nativeHeapTrimmed;
    }

    @Name("io.slabwise.Compaction")
    @Label("Compaction")
    @jdk.jfr.Category(CATEGORY)
    @Description("Owners moved live entries out of sparsely used chunks so that the chunks could go back:"
            + " an explicit compact(), the background budget, or the ceiling")
    static final class Compaction extends Event {
        @Label("Cause")
        @Description("compact, background or ceiling")
        String cause;

        @Label("Chunks Evacuated")
        @Description("Chunks and blocks chosen to be emptied")
        long chunksEvacuated;

        @Label("Chunks Freed")
        @Description("Of those, the ones that emptied")
        long chunksFreed;

        @Label("Bytes Freed")
        @DataAmount
        long bytesFreed;

        @Label("Entries Moved")
        long movedEntries;

        @Label("Bytes Moved")
        @DataAmount
        long movedBytes;

        @Label("Entries Refused")
        @Description("Entries the owners kept in place (in use), or that a limit or the budget kept")
        long refusedEntries;

        @Label("Held By Readers")
        @Description("Moved entries whose old memory readers still held")
        long heldByReaders;
    }

    @Name("io.slabwise.Shrink")
    @Label("Shrink")
    @jdk.jfr.Category(CATEGORY)
    @Description("The pool asked a cache's shrinker to free memory: in the background above the high watermark,"
            + " or for an allocation at the ceiling or at its category's quota")
    static final class Shrink extends Event {
        @Label("Category")
        String category;

        @Label("Cause")
        @Description("background, ceiling or quota")
        String cause;

        @Label("Bytes Asked")
        @DataAmount
        long asked;

        @Label("Bytes Freed")
        @Description("What the shrinker answered it freed; 0 when busy or failed")
        @DataAmount
        long freed;

        @Label("Outcome")
        @Description("freed, nothing, busy or failed")
        String outcome;

        @Label("Committed")
        @Description("Committed bytes of the pool after the call")
        @DataAmount
        long committed;
    }

    /** A shrink event, begun, or null when no recorder exists; pass it to {@link #endShrink}. */
    static Shrink beginShrink() {
        if (!recorderPresent()) {
            return null;
        }
        Shrink event = new Shrink();
        event.begin();
        return event;
    }

    /** Commits the event if enabled. */
    static void endShrink(Shrink event, String category, String cause, long asked, long freed, String outcome,
                          long committedAfter) {
        if (event == null) {
            return;
        }
        event.end();
        if (event.shouldCommit()) {
            event.category = category;
            event.cause = cause;
            event.asked = asked;
            event.freed = freed;
            event.outcome = outcome;
            event.committed = committedAfter;
            event.commit();
        }
    }

    /** A compaction event, begun, or null when no recorder exists; pass it to {@link #endCompaction}. */
    static Compaction beginCompaction() {
        if (!recorderPresent()) {
            return null;
        }
        Compaction event = new Compaction();
        event.begin();
        return event;
    }

    /** Commits the event if enabled and the compaction chose anything to empty. */
    static void endCompaction(Compaction event, String cause, CompactionStats done) {
        if (event == null) {
            return;
        }
        event.end();
        if (done.chunksEvacuated() > 0 && event.shouldCommit()) {
            event.cause = cause;
            event.chunksEvacuated = done.chunksEvacuated();
            event.chunksFreed = done.chunksFreed();
            event.bytesFreed = done.bytesFreed();
            event.movedEntries = done.movedEntries();
            event.movedBytes = done.movedBytes();
            event.refusedEntries = done.refusedEntries();
            event.heldByReaders = done.heldByReaders();
            event.commit();
        }
    }

    /** Whether events can be recorded at all: a flight recorder exists in this JVM. A volatile read. */
    static boolean recorderPresent() {
        return FlightRecorder.isInitialized();
    }

    static void chunkCommitted(long size, CommittedMemory.RegionKind kind, long committedAfter) {
        if (!recorderPresent()) {
            return;
        }
        ChunkCommitted event = new ChunkCommitted();
        if (event.shouldCommit()) {
            event.size = size;
            event.kind = kind.label();
            event.committed = committedAfter;
            event.commit();
        }
    }

    static void chunkReleased(long size, CommittedMemory.RegionKind kind, long committedAfter) {
        if (!recorderPresent()) {
            return;
        }
        ChunkReleased event = new ChunkReleased();
        if (event.shouldCommit()) {
            event.size = size;
            event.kind = kind.label();
            event.committed = committedAfter;
            event.commit();
        }
    }

    static void limitRefused(String category, long requested, MemoryLimitException.Kind kind, long limit, long used,
                             LimitPolicy policy, String reason) {
        if (!recorderPresent()) {
            return;
        }
        LimitRefused event = new LimitRefused();
        if (event.shouldCommit()) {
            event.category = category;
            event.requested = requested;
            event.kind = label(kind);
            event.limit = limit;
            event.used = used;
            event.policy = policy.name().toLowerCase(Locale.ROOT);
            event.reason = reason;
            event.commit();
        }
    }

    /** A wait event, begun, or null when no recorder exists; pass it to {@link #endWait} when the wait is over. */
    static LimitWait beginWait() {
        if (!recorderPresent()) {
            return null;
        }
        LimitWait event = new LimitWait();
        event.begin();
        return event;
    }

    static void endWait(LimitWait event, String category, long requested, MemoryLimitException.Kind kind,
                        String outcome) {
        if (event == null) {
            return;
        }
        event.end();
        if (event.shouldCommit()) {
            event.category = category;
            event.requested = requested;
            event.kind = label(kind);
            event.outcome = outcome;
            event.commit();
        }
    }

    /** A trim event, begun, or null when no recorder exists; pass it to {@link #endTrim} when the memory is back. */
    static Trim beginTrim() {
        if (!recorderPresent()) {
            return null;
        }
        Trim event = new Trim();
        event.begin();
        return event;
    }

    /** Commits the event if enabled and, unless {@code cause} is an explicit trim, if something was given back. */
    static void endTrim(Trim event, String cause, int regions, long bytes, long committedAfter, long nativeTrimmed) {
        if (event == null) {
            return;
        }
        event.end();
        if ((regions > 0 || BY_TRIM.equals(cause)) && event.shouldCommit()) {
            event.cause = cause;
            event.regions = regions;
            event.bytes = bytes;
            event.committed = committedAfter;
            event.nativeHeapTrimmed = nativeTrimmed;
            event.commit();
        }
    }

    /** {@code ceiling} or {@code quota}: the value of the {@code kind} fields and of the meters' {@code kind} tag. */
    static String label(MemoryLimitException.Kind kind) {
        return kind.name().toLowerCase(Locale.ROOT);
    }
}
