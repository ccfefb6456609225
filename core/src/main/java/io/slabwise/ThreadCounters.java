package io.slabwise;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * One thread's share of the pool's accounting: for each category, what the
 * thread's allocations took in and what their releases gave back.
 *
 * <h2>Layout</h2>
 * <pre>
 *  category id * FIELDS + ...
 *   ┌──────────── allocation side ─────────────┬────────────── release side ──────────────┐
 *   │ REQUESTED_IN RESERVED_IN ALLOCATIONS     │ REQUESTED_OUT RESERVED_OUT RELEASES       │
 *   │ CARVED_IN                                │ CARVED_OUT                                │
 *   └──────────────────────────────────────────┴───────────────────────────────────────────┘
 * </pre>
 * Every field only grows (a resize adds its signed change to one side), and
 * each allocation is counted whole on the allocation side before its memory
 * is handed out, and whole on the release side before its memory can be
 * reused.
 *
 * <h2>Writers</h2>
 * The owner thread writes its own array with plain increments after a
 * release fence: a single writer, no atomic instruction, and one compiler
 * barrier per count rather than one per field. The fence keeps every count
 * before it (a release's) ahead of the increments after it (the allocation
 * that may reuse that memory), which is the order readers rely on below; a
 * long store is never torn on the 64-bit JVMs Slabwise runs on. Other threads
 * count the releases (and resizes) of this thread's allocations in a second
 * array with atomic adds, made at the first such release. The shared counters
 * of virtual threads have no owner: the first array is written by whichever
 * thread holds the shared cache's lock (one writer at a time, each seeing its
 * predecessor's counts through the lock), and the second by the threads that
 * found the lock taken, or that released without taking it.
 *
 * <h2>Readers never make writers wait</h2>
 * A snapshot ({@link ThreadCaches#snapshot}) reads the allocation side of
 * every thread first, then the committed bytes, then the release side of
 * every thread. A release it counts whose allocation it missed (both came
 * after that thread's allocation side was read) only makes the figures low;
 * what it can never do is count memory twice: a release that made memory
 * reusable happened before the allocation that reused it, so if the snapshot
 * saw that allocation it also sees the release, which it reads later. Hence,
 * with negative categories raised to 0, reserved bytes never exceed the
 * committed bytes read between the two passes, and requested never exceeds
 * reserved. With no traffic during the read, the figures are exact.
 */
final class ThreadCounters {

    static final int FIELDS = 8;
    static final int REQUESTED_IN = 0;
    static final int RESERVED_IN = 1;
    static final int ALLOCATIONS = 2;
    static final int CARVED_IN = 3;
    /** The release side starts here: fields {@code OUT ..  FIELDS - 1}. */
    static final int OUT = 4;
    static final int REQUESTED_OUT = 4;
    static final int RESERVED_OUT = 5;
    static final int RELEASES = 6;
    static final int CARVED_OUT = 7;
    static final int COUNTERS = Category.MAX_CATEGORIES * FIELDS;

    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle CATEGORY_SLOT = MethodHandles.arrayElementVarHandle(long[][].class);
    private static final VarHandle OWN_ARRAY;
    private static final VarHandle REMOTE_ARRAY;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            OWN_ARRAY = lookup.findVarHandle(ThreadCounters.class, "own", long[].class);
            REMOTE_ARRAY = lookup.findVarHandle(ThreadCounters.class, "remote", long[][].class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * The owner's counts; single writer. Long enough for the categories the
     * owner has allocated in: it replaces the array with a longer copy when it
     * first allocates in a category beyond.
     */
    @SuppressWarnings("unused") // read and written through OWN_ARRAY
    private long[] own;
    /**
     * Counts made by other threads, by atomic adds: one small array per
     * category, made at the first count in it (never replaced, so no add is
     * lost); the whole table is null until the first such count. A cache whose
     * thread died with buffers live thus costs little more than its own counts.
     */
    @SuppressWarnings("unused") // read and written through REMOTE_ARRAY
    private long[][] remote;

    /** {@code shared}: the counters of a cache virtual threads share, which many threads write. */
    ThreadCounters(boolean shared) {
        this.own = new long[FIELDS];
        this.remote = shared ? new long[Category.MAX_CATEGORIES][] : null;
    }

    /**
     * Counts a new allocation: with plain writes when {@code exclusive} (the
     * owner thread, or the holder of a shared cache's lock), else with atomic adds.
     */
    void countAllocation(int categoryId, long requestedBytes, long reservedBytes, boolean carved, boolean exclusive) {
        int base = categoryId * FIELDS;
        if (!exclusive) {
            long[] r = remote(categoryId);
            SLOT.getAndAdd(r, RESERVED_IN, reservedBytes);
            if (carved) {
                SLOT.getAndAdd(r, CARVED_IN, reservedBytes);
            }
            SLOT.getAndAdd(r, REQUESTED_IN, requestedBytes);
            SLOT.getAndAdd(r, ALLOCATIONS, 1L);
            return;
        }
        long[] c = own(base);
        VarHandle.releaseFence();
        c[base + RESERVED_IN] += reservedBytes;
        if (carved) {
            c[base + CARVED_IN] += reservedBytes;
        }
        c[base + REQUESTED_IN] += requestedBytes;
        c[base + ALLOCATIONS]++;
    }

    /**
     * Counts the release of an allocation counted here, {@code carved} as when
     * it was counted; {@code exclusive} as for {@link #countAllocation}.
     */
    void countRelease(int categoryId, long requestedBytes, long reservedBytes, boolean carved, boolean exclusive) {
        int base = categoryId * FIELDS;
        if (exclusive) {
            countReleaseInto((long[]) OWN_ARRAY.get(this), base, requestedBytes, reservedBytes, carved);
        } else {
            long[] r = remote(categoryId);
            SLOT.getAndAdd(r, REQUESTED_OUT, requestedBytes);
            SLOT.getAndAdd(r, RESERVED_OUT, reservedBytes);
            if (carved) {
                SLOT.getAndAdd(r, CARVED_OUT, reservedBytes);
            }
            SLOT.getAndAdd(r, RELEASES, 1L);
        }
    }

    /**
     * {@link #countRelease} with plain writes by the holder of a shared
     * cache's lock, which may count the release of an allocation that was
     * counted with atomic adds (past the lock, or a dedicated region) in a
     * category the own array has no room for yet: room is made first.
     */
    void countReleaseLocked(int categoryId, long requestedBytes, long reservedBytes) {
        int base = categoryId * FIELDS;
        countReleaseInto(own(base), base, requestedBytes, reservedBytes, false);
    }

    /** A release counted with plain writes into the own array {@code c}, whose category starts at {@code base}. */
    private static void countReleaseInto(long[] c, int base, long requestedBytes, long reservedBytes, boolean carved) {
        VarHandle.releaseFence();
        c[base + REQUESTED_OUT] += requestedBytes;
        c[base + RESERVED_OUT] += reservedBytes;
        if (carved) {
            c[base + CARVED_OUT] += reservedBytes;
        }
        c[base + RELEASES]++;
    }

    /** The own array, with room for the category at {@code base}; the exclusive writer only. */
    private long[] own(int base) {
        long[] c = (long[]) OWN_ARRAY.get(this);
        return base + FIELDS <= c.length ? c : grownOwn(c, base);
    }

    /** Replaces the own array with a copy that has room for the category at {@code base}. */
    private long[] grownOwn(long[] c, int base) {
        long[] grown = Arrays.copyOf(c, Math.min(COUNTERS, Math.max(base + FIELDS, 2 * c.length)));
        OWN_ARRAY.setRelease(this, grown);
        return grown;
    }

    /** Counts a change of a live allocation's requested bytes (its reserved bytes stay); {@code exclusive} as above. */
    void countResize(int categoryId, long requestedDelta, boolean exclusive) {
        int base = categoryId * FIELDS;
        if (exclusive) {
            long[] c = (long[]) OWN_ARRAY.get(this);
            SLOT.setRelease(c, base + REQUESTED_IN, c[base + REQUESTED_IN] + requestedDelta);
        } else {
            SLOT.getAndAdd(remote(categoryId), REQUESTED_OUT, -requestedDelta);
        }
    }

    /** The counts other threads make in category {@code categoryId}, made by the first of them. Any thread. */
    private long[] remote(int categoryId) {
        long[][] table = (long[][]) REMOTE_ARRAY.getAcquire(this);
        if (table == null) {
            long[][] made = new long[Category.MAX_CATEGORIES][];
            table = (long[][]) REMOTE_ARRAY.compareAndExchangeRelease(this, null, made);
            if (table == null) {
                table = made;
            }
        }
        long[] counts = (long[]) CATEGORY_SLOT.getAcquire(table, categoryId);
        if (counts == null) {
            long[] made = new long[FIELDS];
            counts = (long[]) CATEGORY_SLOT.compareAndExchangeRelease(table, categoryId, null, made);
            if (counts == null) {
                counts = made;
            }
        }
        return counts;
    }

    /**
     * Adds fields {@code from} to {@code from + 3} of each of the first
     * {@code categories} categories, from the owner's counts and the other
     * threads', into {@code into} (laid out as the owner's counts are). Any thread.
     */
    void addSide(long[] into, int categories, int from) {
        long[] counts = (long[]) OWN_ARRAY.getAcquire(this);
        int n = Math.min(counts.length, categories * FIELDS);
        for (int base = 0; base < n; base += FIELDS) {
            for (int i = base + from; i < base + from + OUT; i++) {
                into[i] += (long) SLOT.getAcquire(counts, i);
            }
        }
        long[][] table = (long[][]) REMOTE_ARRAY.getAcquire(this);
        if (table == null) {
            return;
        }
        for (int c = 0; c < categories; c++) {
            long[] remoteCounts = (long[]) CATEGORY_SLOT.getAcquire(table, c);
            if (remoteCounts != null) {
                for (int f = from; f < from + OUT; f++) {
                    into[c * FIELDS + f] += (long) SLOT.getAcquire(remoteCounts, f);
                }
            }
        }
    }

    /** Adds every field of every category into {@code into}; for counters that no longer change. */
    void addAll(long[] into) {
        addSide(into, Category.MAX_CATEGORIES, 0);
        addSide(into, Category.MAX_CATEGORIES, OUT);
    }

    /** Allocations counted here not yet released: exact once the owner is dead and no release is under way. */
    long liveAllocations() {
        long live = 0;
        long[] counts = (long[]) OWN_ARRAY.getAcquire(this);
        for (int base = 0; base < counts.length; base += FIELDS) {
            live += (long) SLOT.getAcquire(counts, base + ALLOCATIONS) - (long) SLOT.getAcquire(counts, base + RELEASES);
        }
        long[][] table = (long[][]) REMOTE_ARRAY.getAcquire(this);
        if (table != null) {
            for (int c = 0; c < table.length; c++) {
                long[] remoteCounts = (long[]) CATEGORY_SLOT.getAcquire(table, c);
                if (remoteCounts != null) {
                    live += (long) SLOT.getAcquire(remoteCounts, ALLOCATIONS) - (long) SLOT.getAcquire(remoteCounts, RELEASES);
                }
            }
        }
        return live;
    }
}
