package io.slabwise;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * A named accounting bucket ({@code network}, {@code log_cache},
 * {@code block_cache}, ...). Every allocation belongs to exactly one category,
 * and the pool keeps its requested and reserved bytes per category.
 *
 * <p>Categories are created by {@link MemoryPool#category(String)}, which
 * returns the same instance for the same name; they are cheap, immutable and
 * safe to share between threads. Names are lowercase letters, digits, {@code _}
 * and {@code -} (they become metric tag values).
 */
public final class Category {

    /** The most categories a pool has; they are metric tag values and must stay few. */
    public static final int MAX_CATEGORIES = 64;

    /** The name of the category of buffers allocated without one. */
    public static final String DEFAULT_NAME = "network";

    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_\\-]{0,63}");

    private final String name;
    /** Index into the per-thread counter arrays; dense from 0. */
    final int id;
    /** The pool this category belongs to. */
    private final MemoryPool pool;
    /** The general pool for this category. */
    final CategoryAllocator allocator;
    /** Whether reserved bytes are tracked exactly, so that a quota can be enforced. */
    final boolean tracked;
    /** The highest reserved bytes a snapshot has seen for this category. */
    final AtomicLong peakReservedSeen = new AtomicLong();
    /** Reserved bytes of live allocations; maintained only when {@link #tracked}. */
    final AtomicLong trackedReserved = new AtomicLong();
    /** The quota on reserved bytes; {@link Long#MAX_VALUE} for none. */
    volatile long quota;
    /** Callers of this category waiting for its quota. */
    final MemoryLimit.WaitQueue quotaQueue = new MemoryLimit.WaitQueue();
    /** The policy at the ceiling or quota; null to use the pool's. */
    volatile LimitPolicy policy;

    Category(MemoryPool pool, GeneralPool general, String name, int id, boolean tracked, long quota, LimitPolicy policy) {
        this.name = checkName(name);
        this.id = id;
        this.pool = pool;
        this.allocator = new CategoryAllocator(this, general);
        this.tracked = tracked;
        this.quota = quota;
        this.policy = policy;
    }

    /**
     * Takes {@code reserved} bytes of the quota; false when that would pass it.
     * Free for categories without a quota.
     */
    boolean admit(long reserved) {
        if (!tracked) {
            return true;
        }
        while (true) {
            long current = trackedReserved.get();
            if (current + reserved > quota) {
                return false;
            }
            if (trackedReserved.compareAndSet(current, current + reserved)) {
                return true;
            }
        }
    }

    /** Gives back quota taken by {@link #admit}; returns whether anything was given back. */
    boolean release(long reserved) {
        if (!tracked) {
            return false;
        }
        trackedReserved.addAndGet(-reserved);
        return true;
    }

    /** The quota on reserved bytes, or {@link Long#MAX_VALUE} when there is none. */
    public long quota() {
        return quota;
    }

    static String checkName(String name) {
        Objects.requireNonNull(name, "category name");
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("category name must be 1-64 characters of a-z, 0-9, '_' or '-',"
                    + " starting with a letter or digit: \"" + name + '"');
        }
        return name;
    }

    /**
     * The pool this category belongs to: the one that frees what was
     * allocated in it ({@code allocation.category().pool().free(allocation)}).
     */
    public MemoryPool pool() {
        return pool;
    }

    /** The category's name. */
    public String name() {
        return name;
    }

    @Override
    public String toString() {
        return name;
    }
}
