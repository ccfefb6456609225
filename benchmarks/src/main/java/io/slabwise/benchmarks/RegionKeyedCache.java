package io.slabwise.benchmarks;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.BufferEvacuation;
import io.slabwise.netty.BufferRelocator;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;

/**
 * A cache of stamped direct buffers and its owner's side of relocation, in one
 * of two ways: walking every entry on each compaction and
 * asking the evacuation about each, or filing every entry under the region
 * key of the chunk under it and looking only at the buckets under the keys
 * being emptied. The compaction scale benchmark times one against the other.
 *
 * <pre>
 *  entries   [e0 e1 e2 ... e(n-1)]            every live entry; e.slot is its index (swap-remove)
 *  buckets   key 17 ─▶ [e4 e0 e9 ...]          keyed only: the entries whose memory lies in chunk 17;
 *            key 18 ─▶ [e2 e7 ...]             e.bucket and e.position name its place (swap-remove)
 *
 *  walk:   for e in entries:            contains(e)? move, swap, release the old buffer
 *  keyed:  for k in regionKeys():       for e in buckets[k], last first:
 *                                           contains(e)? move, swap, release, re-file e under its copy's key
 * </pre>
 *
 * <p>Removing an entry (released by its user, or thinned out here) takes it
 * out of both arrays in constant time: the last element of each takes its
 * place and learns its new index. The keyed walk goes through a bucket from
 * its end, so a moved entry's removal only brings in one already looked at.
 * An empty bucket is dropped: region keys are never reused.
 *
 * <p>Every entry carries a stamp at both ends ({@link RelocatableCache#fill}),
 * which {@link #checkAll} verifies. With {@link #verify(boolean)} on, the keyed
 * owner also proves its filing during the relocation: afterwards no entry
 * of the cache may still lie in a chunk being emptied (none was missed by
 * looking only under the keys), and every entry is filed under its buffer's
 * key; a failed check throws, which fails the compaction.
 *
 * <p>One lock guards the cache; the relocator never waits for it (a busy or
 * already held lock is reported with {@code refused()}), as the relocation
 * rules ask. The keyed filing needs one key per entry: buffers from
 * {@code directBuffer} or a sequential allocator (a payload of several
 * blocks lies under several keys and is refused when added).
 */
final class RegionKeyedCache implements BufferRelocator {

    /** One entry: a buffer and where it is kept. */
    static final class Entry {
        ByteBuf buffer;
        /** Its index in the cache's array of entries. */
        int slot;
        /** The bucket it is filed in (keyed), or null. */
        Bucket bucket;
        /** Its index in that bucket. */
        int position;
    }

    /** The entries whose memory lies in one chunk, in no order. */
    static final class Bucket {
        final long key;
        Entry[] entries = new Entry[8];
        int size;

        Bucket(long key) {
            this.key = key;
        }

        void add(Entry e) {
            if (size == entries.length) {
                entries = Arrays.copyOf(entries, size * 2);
            }
            e.bucket = this;
            e.position = size;
            entries[size++] = e;
        }

        void remove(Entry e) {
            Entry last = entries[--size];
            entries[e.position] = last;
            last.position = e.position;
            entries[size] = null;
            e.bucket = null;
        }
    }

    /** Whether entries are filed by region key and only those under the keys given are looked at; else all are. */
    private final boolean keyed;
    private final ReentrantLock lock = new ReentrantLock();
    private Entry[] entries = new Entry[0];
    private int count;
    /** Keyed only: the buckets by region key. */
    private final Map<Long, Bucket> buckets = new HashMap<>();
    private boolean verify;
    /** Entries the relocator looked at (asked the evacuation about) since the last {@link #resetCounts}. */
    private long lookedAt;
    /** Region keys the relocator was given since the last {@link #resetCounts}. */
    private long keysGiven;
    /** Nanoseconds spent in {@link #relocate} since the last {@link #resetCounts}. */
    private long relocateNanos;
    /**
     * Nanoseconds of that spent on the entries that moved: the copy
     * ({@code move}), releasing the old buffer (which gives back a chunk its
     * last entry leaves) and re-filing; the rest is the owner's looking.
     */
    private long movingNanos;

    RegionKeyedCache(boolean keyed) {
        this.keyed = keyed;
    }

    /** Whether the keyed owner checks its filing during each relocation (a walk over every entry). */
    void verify(boolean on) {
        verify = on;
    }

    /** The number of entries. */
    int size() {
        return count;
    }

    long lookedAt() {
        return lookedAt;
    }

    long keysGiven() {
        return keysGiven;
    }

    long relocateNanos() {
        return relocateNanos;
    }

    long movingNanos() {
        return movingNanos;
    }

    void resetCounts() {
        movingNanos = 0;
        lookedAt = 0;
        keysGiven = 0;
        relocateNanos = 0;
    }

    /**
     * Releases every entry, then allocates entries of {@code sizes} (in turn)
     * until their bytes reach {@code bytes}, stamped with their index in
     * allocation order.
     *
     * @param allocate makes an entry of the given size, its writer index 0
     * @param template the bytes an entry is filled with (at least the largest size)
     * @return the entries in allocation order (the caller may thin them with {@link #remove})
     */
    List<Entry> fill(IntFunction<ByteBuf> allocate, int[] sizes, byte[] template, long bytes) {
        lock.lock();
        try {
            clearLocked();
            List<Entry> added = new ArrayList<>();
            long filled = 0;
            while (filled < bytes) {
                ByteBuf buffer = allocate.apply(sizes[added.size() % sizes.length]);
                RelocatableCache.fill(buffer, template, added.size());
                filled += buffer.readableBytes();
                added.add(add(buffer));
            }
            return added;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Releases a random {@code fraction} of the entries of {@code fillOrder}
     * from the one where the bytes allocated before it reach {@code fromBytes}
     * until those in the window reach {@code windowBytes}: memory allocated
     * together, thinned, whatever the size of the cache around it.
     *
     * @return the entries released
     */
    int thinWindow(List<Entry> fillOrder, long fromBytes, long windowBytes, double fraction, long seed) {
        lock.lock();
        try {
            List<Entry> window = new ArrayList<>();
            long offset = 0;
            for (Entry e : fillOrder) {
                long size = e.buffer.readableBytes();
                if (offset >= fromBytes + windowBytes) {
                    break;
                }
                if (offset >= fromBytes) {
                    window.add(e);
                }
                offset += size;
            }
            Collections.shuffle(window, new Random(seed));
            int released = (int) Math.round(window.size() * fraction);
            for (int i = 0; i < released; i++) {
                remove(window.get(i));
            }
            return released;
        } finally {
            lock.unlock();
        }
    }

    /** Keeps {@code buffer} as a new entry (the caller holds the lock). */
    private Entry add(ByteBuf buffer) {
        Entry e = new Entry();
        e.buffer = buffer;
        if (count == entries.length) {
            entries = Arrays.copyOf(entries, Math.max(16, count * 2));
        }
        e.slot = count;
        entries[count++] = e;
        if (keyed) {
            file(e);
        }
        return e;
    }

    /** Takes {@code e} out of the cache and releases its buffer, in constant time (the caller holds the lock). */
    private void remove(Entry e) {
        Entry last = entries[--count];
        entries[e.slot] = last;
        last.slot = e.slot;
        entries[count] = null;
        if (e.bucket != null) {
            unfile(e);
        }
        e.buffer.release();
        e.buffer = null;
    }

    /** Files {@code e} in the bucket of its buffer's region key. */
    private void file(Entry e) {
        long key = onlyKey(e.buffer);
        Bucket b = buckets.get(key);
        if (b == null) {
            b = new Bucket(key);
            buckets.put(key, b);
        }
        b.add(e);
    }

    private void unfile(Entry e) {
        Bucket b = e.bucket;
        b.remove(e);
        if (b.size == 0) {
            buckets.remove(b.key); // its chunk emptied of this cache's entries; the key will never come back
        }
    }

    private static long onlyKey(ByteBuf buffer) {
        long[] keys = BufferEvacuation.regionKeysOf(buffer);
        if (keys.length != 1) {
            throw new IllegalStateException("a keyed entry needs exactly one region key, got "
                    + Arrays.toString(keys) + " for " + buffer);
        }
        return keys[0];
    }

    /** {@link RelocatableCache#check}s every entry. */
    void checkAll() {
        lock.lock();
        try {
            for (int i = 0; i < count; i++) {
                RelocatableCache.check(entries[i].buffer);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Bytes of all entries (their writer indices). */
    long liveBytes() {
        lock.lock();
        try {
            long live = 0;
            for (int i = 0; i < count; i++) {
                live += entries[i].buffer.writerIndex();
            }
            return live;
        } finally {
            lock.unlock();
        }
    }

    /** Releases every entry; the cache is then empty. */
    void clear() {
        lock.lock();
        try {
            clearLocked();
        } finally {
            lock.unlock();
        }
    }

    private void clearLocked() {
        for (int i = 0; i < count; i++) {
            entries[i].buffer.release();
            entries[i] = null;
        }
        count = 0;
        entries = new Entry[0];
        buckets.clear();
    }

    @Override
    public void relocate(BufferEvacuation evacuation) {
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            evacuation.refused(); // called from inside the cache, or another thread is in it: next time
            return;
        }
        try {
            long start = System.nanoTime();
            int notMoved = keyed ? relocateKeyed(evacuation) : relocateAll(evacuation);
            relocateNanos += System.nanoTime() - start;
            if (verify && keyed) {
                verifyFiling(evacuation, notMoved == 0 && evacuation.budgetLeft());
            }
        } finally {
            lock.unlock();
        }
    }

    /** Returns the entries the evacuation contains that stayed (a limit or the budget refused their copy). */
    private int relocateAll(BufferEvacuation evacuation) {
        int notMoved = 0;
        for (int i = 0; i < count && evacuation.budgetLeft(); i++) {
            Entry e = entries[i];
            lookedAt++;
            if (evacuation.contains(e.buffer)) {
                long start = System.nanoTime();
                ByteBuf moved = evacuation.move(e.buffer);
                if (moved != null) {
                    ByteBuf old = e.buffer;
                    e.buffer = moved;
                    old.release();
                } else {
                    notMoved++;
                }
                movingNanos += System.nanoTime() - start;
            }
        }
        return notMoved;
    }

    /** Returns the entries the evacuation contains that stayed (a limit or the budget refused their copy). */
    private int relocateKeyed(BufferEvacuation evacuation) {
        int notMoved = 0;
        long[] keys = evacuation.regionKeys();
        keysGiven += keys.length;
        for (long key : keys) {
            Bucket b = buckets.get(key);
            // last first: removing a moved entry brings the bucket's last one, already looked at, to its place
            for (int i = b == null ? -1 : b.size - 1; i >= 0 && evacuation.budgetLeft(); i--) {
                Entry e = b.entries[i];
                lookedAt++;
                if (evacuation.contains(e.buffer)) {
                    long start = System.nanoTime();
                    ByteBuf moved = evacuation.move(e.buffer);
                    if (moved != null) {
                        ByteBuf old = e.buffer;
                        e.buffer = moved;
                        old.release();
                        unfile(e);
                        file(e);
                        if (Arrays.binarySearch(keys, e.bucket.key) >= 0) {
                            throw new IllegalStateException("a moved entry's copy lies in a chunk being emptied, key "
                                    + e.bucket.key);
                        }
                    } else {
                        notMoved++;
                    }
                    movingNanos += System.nanoTime() - start;
                }
            }
        }
        return notMoved;
    }

    /**
     * The keyed owner's proof, outside its timed walk (the caller holds the
     * lock): every entry is filed under its buffer's key, the buckets hold
     * exactly the cache's entries, and an entry that still lies in a chunk
     * being emptied is under one of the keys given; with {@code allMoved}
     * (no copy was refused, the budget never ran out) there is none.
     */
    private void verifyFiling(BufferEvacuation evacuation, boolean allMoved) {
        long filed = 0;
        for (Bucket b : buckets.values()) {
            filed += b.size;
        }
        if (filed != count) {
            throw new IllegalStateException("the buckets hold " + filed + " entries, the cache " + count);
        }
        long[] keys = evacuation.regionKeys();
        for (int i = 0; i < count; i++) {
            Entry e = entries[i];
            long key = onlyKey(e.buffer);
            if (e.bucket == null || e.bucket.key != key || e.bucket.entries[e.position] != e || buckets.get(key) != e.bucket) {
                throw new IllegalStateException("entry " + i + " is not filed under its key " + key);
            }
            if (evacuation.contains(e.buffer)) {
                if (Arrays.binarySearch(keys, key) < 0) {
                    throw new IllegalStateException("entry " + i + " lies in a chunk being emptied under key " + key
                            + ", not among the keys given: " + Arrays.toString(keys));
                }
                if (allMoved) {
                    throw new IllegalStateException("entry " + i + " under key " + key + " was not moved");
                }
            }
        }
    }
}
