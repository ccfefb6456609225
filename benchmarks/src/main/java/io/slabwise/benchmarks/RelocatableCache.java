package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.BufferEvacuation;
import io.slabwise.netty.BufferRelocator;

import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;

/**
 * The cache the compaction benchmarks fragment and compact: a fixed array of
 * entries, each a direct buffer, guarded by striped locks, and the owner's
 * side of relocation ({@link BufferRelocator}) for Slabwise.
 *
 * <pre>
 *  slot i  ──guarded by──▶  stripe i % 64 (a ReentrantLock)
 *  reader:     lock stripe, retain slots[i], unlock; read; release
 *  writer:     allocate and fill the new entry, then lock stripe, swap slots[i], unlock; release the old entry
 *  relocator:  per stripe: tryLock (a busy stripe is tried once more after the others, then skipped
 *              and reported refused); for each entry the evacuation contains: move, swap, release the old one
 * </pre>
 *
 * <p>A {@link #refill} makes the cache fragmented: it releases every entry,
 * allocates entries of the given sizes until they add up to the given bytes,
 * then releases a given fraction of them picked at random, so that the
 * survivors are spread thinly over all the memory the allocator took. It holds
 * every stripe lock while it does so. Every entry carries a stamp in its first
 * four bytes and the stamp's complement in its last four, which
 * {@link #check} verifies, so that a move that copied the wrong bytes fails the
 * benchmark.
 *
 * <p>The relocator never waits for a lock, as the relocation rules ask: it may
 * run on the pool's scheduler, the caller of {@code compact()}, or a thread at
 * the ceiling inside the owner's own code; a stripe held by the calling thread
 * ends the walk at once. A stripe it skips, busy or held, is reported with
 * {@code refused()}.
 */
final class RelocatableCache implements BufferRelocator {

    /** Stripes of the slot locks: a power of two. */
    static final int STRIPES = 64;
    /** The stamp of an entry is XORed with this in its last four bytes. */
    private static final int STAMP_MASK = 0x5A5A5A5A;

    private final ReentrantLock[] locks = new ReentrantLock[STRIPES];
    /** The entries; the array is replaced only while every stripe lock is held, an element under its stripe's lock. */
    private volatile ByteBuf[] slots = new ByteBuf[0];
    /** Stripes the relocator skipped because another thread held them twice in a row. */
    private final LongAdder busyStripes = new LongAdder();

    RelocatableCache() {
        for (int i = 0; i < STRIPES; i++) {
            locks[i] = new ReentrantLock();
        }
    }

    /** The number of entries. */
    int size() {
        return slots.length;
    }

    /**
     * Releases every entry, allocates entries of {@code sizes} (in turn, from
     * the start) until their bytes reach {@code bytes}, and keeps a random
     * {@code 1 - freed} of them, releasing the others.
     *
     * @param allocate makes an entry of the given size, its writer index 0
     * @param template the bytes an entry is filled with (at least the largest size)
     * @return the bytes of the entries kept
     */
    long refill(IntFunction<ByteBuf> allocate, int[] sizes, byte[] template, long bytes, double freed, long seed) {
        lockAll();
        try {
            releaseAll();
            ByteBuf[] all = new ByteBuf[estimate(sizes, bytes)];
            int count = 0;
            long filled = 0;
            while (filled < bytes) {
                if (count == all.length) {
                    all = Arrays.copyOf(all, count * 2);
                }
                ByteBuf entry = allocate.apply(sizes[count % sizes.length]);
                fill(entry, template, count);
                all[count++] = entry;
                filled += entry.readableBytes();
            }
            Random random = new Random(seed);
            for (int i = count - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                ByteBuf swap = all[i];
                all[i] = all[j];
                all[j] = swap;
            }
            int kept = (int) Math.round(count * (1 - freed));
            ByteBuf[] survivors = new ByteBuf[kept];
            long live = 0;
            for (int i = 0; i < count; i++) {
                if (i < kept) {
                    survivors[i] = all[i];
                    live += all[i].readableBytes();
                } else {
                    all[i].release();
                }
            }
            slots = survivors;
            return live;
        } finally {
            unlockAll();
        }
    }

    /** {@code count} sizes from {@code min} to {@code max} bytes, log-uniform, from a seeded sequence. */
    static int[] logUniformSizes(int count, int min, int max, long seed) {
        Random random = new Random(seed);
        int[] sizes = new int[count];
        double low = Math.log(min);
        double high = Math.log(max + 1);
        for (int i = 0; i < count; i++) {
            sizes[i] = Math.min(max, (int) Math.exp(low + random.nextDouble() * (high - low)));
        }
        return sizes;
    }

    private static int estimate(int[] sizes, long bytes) {
        long sum = 0;
        for (int size : sizes) {
            sum += size;
        }
        return (int) Math.max(16, Math.min(Integer.MAX_VALUE - 8, bytes * sizes.length / Math.max(1, sum) + 16));
    }

    /** Copies {@code template} into {@code entry} up to its capacity, then stamps it with {@code stamp}. */
    static void fill(ByteBuf entry, byte[] template, int stamp) {
        int size = entry.capacity();
        entry.writeBytes(template, 0, size);
        entry.setInt(0, stamp);
        entry.setInt(size - 4, stamp ^ STAMP_MASK);
    }

    /**
     * Throws when the stamps at both ends of {@code entry} do not match: its
     * bytes are not the ones its writer wrote.
     */
    static void check(ByteBuf entry) {
        int size = entry.writerIndex();
        int head = entry.getInt(0);
        int tail = entry.getInt(size - 4);
        if ((head ^ STAMP_MASK) != tail) {
            throw new IllegalStateException("an entry of " + size + " bytes lost its contents: stamp " + head + ", tail " + tail
                    + " in " + entry);
        }
    }

    /** The entry in {@code slot} with one more reference, which the caller releases. */
    ByteBuf retain(int slot) {
        ReentrantLock lock = locks[slot & (STRIPES - 1)];
        lock.lock();
        try {
            return slots[slot].retain();
        } finally {
            lock.unlock();
        }
    }

    /** Puts {@code entry} in {@code slot} and releases the entry it replaces. */
    void replace(int slot, ByteBuf entry) {
        ByteBuf old;
        ReentrantLock lock = locks[slot & (STRIPES - 1)];
        lock.lock();
        try {
            old = slots[slot];
            slots[slot] = entry;
        } finally {
            lock.unlock();
        }
        old.release();
    }

    /** The bytes of all entries (their writer indices). */
    long liveBytes() {
        long live = 0;
        for (int s = 0; s < STRIPES; s++) {
            locks[s].lock();
            try {
                ByteBuf[] entries = slots;
                for (int i = s; i < entries.length; i += STRIPES) {
                    live += entries[i].writerIndex();
                }
            } finally {
                locks[s].unlock();
            }
        }
        return live;
    }

    /** {@link #check}s every entry. */
    void checkAll() {
        for (int s = 0; s < STRIPES; s++) {
            locks[s].lock();
            try {
                ByteBuf[] entries = slots;
                for (int i = s; i < entries.length; i += STRIPES) {
                    check(entries[i]);
                }
            } finally {
                locks[s].unlock();
            }
        }
    }

    /** Stripes the relocator has skipped so far because they were busy. */
    long busyStripes() {
        return busyStripes.sum();
    }

    /** Releases every entry; the cache is then empty. */
    void clear() {
        lockAll();
        try {
            releaseAll();
        } finally {
            unlockAll();
        }
    }

    /**
     * Walks every stripe, a busy one once more after the others. A stripe
     * skipped (busy twice, or held by this thread, which ends the walk) is
     * reported with {@code refused()}, as the relocation rules ask: its
     * entries were not looked at, so the pool must not take the chunks it
     * chose for chunks with nothing movable and leave them alone for the
     * next compactions.
     */
    @Override
    public void relocate(BufferEvacuation evacuation) {
        int[] busy = new int[STRIPES];
        int busyCount = 0;
        for (int s = 0; s < STRIPES && evacuation.budgetLeft(); s++) {
            int outcome = relocateStripe(s, evacuation);
            if (outcome < 0) {
                evacuation.refused();
                return;
            }
            if (outcome == 0) {
                busy[busyCount++] = s;
            }
        }
        for (int k = 0; k < busyCount && evacuation.budgetLeft(); k++) {
            int outcome = relocateStripe(busy[k], evacuation);
            if (outcome < 0) {
                evacuation.refused();
                return;
            }
            if (outcome == 0) {
                busyStripes.increment();
                evacuation.refused();
            }
        }
    }

    /**
     * Moves the entries of one stripe that the evacuation contains; 1 when
     * the stripe was walked, 0 when another thread held its lock, -1 when
     * this thread holds it (relocation was called from inside the cache).
     */
    private int relocateStripe(int stripe, BufferEvacuation evacuation) {
        ReentrantLock lock = locks[stripe];
        if (lock.isHeldByCurrentThread()) {
            return -1;
        }
        if (!lock.tryLock()) {
            return 0;
        }
        try {
            ByteBuf[] entries = slots;
            for (int i = stripe; i < entries.length && evacuation.budgetLeft(); i += STRIPES) {
                ByteBuf old = entries[i];
                if (evacuation.contains(old)) {
                    ByteBuf moved = evacuation.move(old);
                    if (moved != null) {
                        entries[i] = moved;
                        old.release();
                    }
                }
            }
            return 1;
        } finally {
            lock.unlock();
        }
    }

    private void releaseAll() {
        ByteBuf[] entries = slots;
        for (ByteBuf entry : entries) {
            entry.release();
        }
        slots = new ByteBuf[0];
    }

    private void lockAll() {
        for (ReentrantLock lock : locks) {
            lock.lock();
        }
    }

    private void unlockAll() {
        for (int i = STRIPES - 1; i >= 0; i--) {
            locks[i].unlock();
        }
    }
}
