package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.slabwise.Allocation;
import io.slabwise.CompactionStats;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A seeded model of a cache that owns relocatable buffers, run against the
 * allocator step by step: every step does one random thing an owner, its
 * readers or the pool's operator does, and then the whole model is checked
 * against the pool.
 *
 * <p>The owner's entries, all of category {@value #OWN}, come from the general
 * pool through the category's view, from a sequential allocator (slices, and
 * requests too large for a slice, which it serves from the general pool) and
 * from a block pool (composites of blocks, sub-blocks and mini-blocks), mixed.
 * The owner adds, removes, overwrites and resizes entries. Readers retain
 * entries and keep them across later moves, then release them, some on a
 * thread bound to the other arena, so that old memory is let go by a thread
 * that did not allocate it. Buffers of category {@value #FOREIGN}, which has
 * no relocator, share the chunks of the general-pool entries. Compactions
 * take a random occupancy and budget, a tenth of them while the owner holds
 * its lock; trims come in between. Some seeds put every buffer behind a leak
 * detector's wrapper, some recycle buffer objects.
 *
 * <p>After every step: every buffer alive in the model (entries, and the old
 * buffers readers still hold) reads back the checksum it was given; the
 * requested bytes of each category are the model's live bytes; the
 * sequential allocator's live bytes and the block pool's parts in use are
 * those of the model's slices and payloads (a copy comes from the
 * allocator of its original); the foreign buffers never moved. During
 * every compaction the relocator checks that every copy lies outside the
 * chunks being emptied, with the capacity, indices and bytes of its
 * original, and, when it walked all its entries, that no entry it did not
 * refuse is left in one. After every compaction the figures it returns are
 * the moves, refusals and readers' buffers the owner counted. At the end,
 * with everything released, nothing is requested and a compaction and a trim
 * leave nothing committed.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class RelocationModelTest {

    private static final String OWN = "cache";
    private static final String FOREIGN = "network";
    private static final int SEEDS = 20;
    private static final int STEPS = 2000;
    private static final int CHUNK = 256 * 1024;
    private static final int BLOCK = 64 * 1024;
    /** A sub-block: a sixteenth of a block, at least a page. */
    private static final int SUB_BLOCK = 8 * 1024;
    private static final int MINI_BLOCK = SUB_BLOCK / 32;
    /** The largest slice the sequential allocator carves; larger requests go to the general pool. */
    private static final int MAX_SLICE = CHUNK / 4;

    /** Where an entry's memory comes from. */
    private enum Kind { GENERAL, SEQUENTIAL, BLOCKS }

    static IntStream seeds() {
        return IntStream.rangeClosed(1, SEEDS);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void relocationKeepsEveryByteAndEveryFigure(int seed) throws Exception {
        ResourceLeakDetector.Level level = ResourceLeakDetector.getLevel();
        if (seed % 5 == 0) {
            ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID); // every buffer behind a leak wrapper
        }
        try (Model model = new Model(seed)) {
            model.run();
        } finally {
            ResourceLeakDetector.setLevel(level);
        }
    }

    /** One seeded run: the owner's cache, its readers, the foreign buffers and what the pool must show. */
    private static final class Model implements AutoCloseable {
        final int seed;
        final Random random;
        final SlabwiseAllocator allocator;
        final ByteBufAllocator general;
        final ByteBufAllocator foreignView;
        final SequentialByteBufAllocator sequential;
        final BlockByteBufAllocator blocks;
        final List<Thread> releaseThreads = new ArrayList<>();
        final ExecutorService releaser;
        final ReentrantLock lock = new ReentrantLock();

        /** The owner's entries. */
        final List<ByteBuf> entries = new ArrayList<>();
        /** One element per reference a reader holds (a buffer retained twice is here twice). */
        final List<ByteBuf> readerHeld = new ArrayList<>();
        /** Every live buffer of {@link #OWN} in the model, entries or held by readers, with the checksum of its bytes. */
        final Map<ByteBuf, Long> checksums = new IdentityHashMap<>();
        /** The kind of every buffer in {@link #checksums}. */
        final Map<ByteBuf, Kind> kinds = new IdentityHashMap<>();
        /** Entries moved, by kind, over the whole run. */
        final long[] movedByKind = new long[Kind.values().length];
        final List<ByteBuf> foreign = new ArrayList<>();
        final Map<ByteBuf, Long> foreignChecksums = new IdentityHashMap<>();
        final Map<ByteBuf, Allocation> foreignMemory = new IdentityHashMap<>();
        final Map<ByteBuf, Long> foreignAddresses = new IdentityHashMap<>();

        /** What the relocator did in the compaction under way. */
        long moved;
        long movedBytes;
        long refused;
        long held;
        int relocateCalls;
        CompactionStats totals = CompactionStats.NONE;
        int step;
        String lastOp = "";

        Model(int seed) {
            this.seed = seed;
            this.random = new Random(seed);
            // two arenas in use from the start: the releasing thread frees into the other arena; every third seed
            // recycles buffer objects, as Netty's pooled allocator does
            this.allocator = SlabwiseAllocator.builder().chunkSize(CHUNK).arenas(2).arenaSpreadBytes(0)
                    .recycleBuffers(seed % 3 == 0).build();
            this.general = allocator.forCategory(OWN);
            this.foreignView = allocator.forCategory(FOREIGN);
            this.sequential = allocator.sequential(OWN, 1, CHUNK);
            this.blocks = allocator.blocks(OWN, BLOCK, 1);
            this.releaser = Executors.newSingleThreadExecutor(r -> {
                Thread thread = new Thread(r, "reader-release-" + seed);
                releaseThreads.add(thread);
                return thread;
            });
            allocator.setRelocator(OWN, this::relocate);
        }

        void run() throws Exception {
            for (step = 0; step < STEPS; step++) {
                int op = random.nextInt(100);
                if (op < 30) {
                    addEntry();
                } else if (op < 48 || entries.size() > 150) {
                    removeEntry();
                } else if (op < 58) {
                    readerRetains();
                } else if (op < 68) {
                    readerReleases();
                } else if (op < 73) {
                    overwrite();
                } else if (op < 76) {
                    resize();
                } else if (op < 81) {
                    addForeign();
                } else if (op < 85) {
                    removeForeign();
                } else if (op < 95) {
                    compact();
                } else if (op < 98) {
                    lastOp = "trim";
                    allocator.trim();
                } else {
                    lastOp = "sequential trim";
                    sequential.trim(); // its open chunks retire: pinned chunks a compaction may empty
                }
                check();
            }
            for (Kind kind : Kind.values()) {
                assertTrue(movedByKind[kind.ordinal()] > 0, () -> where() + ": no " + kind + " entry ever moved");
            }
            assertTrue(totals.heldByReaders() > 0, () -> where() + ": no moved entry was held by a reader");
            releaseEverything();
        }

        private String where() {
            return "seed " + seed + ", step " + step + " (" + lastOp + ")";
        }

        private void addEntry() {
            int kind = random.nextInt(100);
            ByteBuf buf;
            Kind k = kind < 40 ? Kind.GENERAL : kind < 75 ? Kind.SEQUENTIAL : Kind.BLOCKS;
            if (kind < 40) {
                int size = random.nextInt(4) == 0 ? 1 + random.nextInt(16 * 1024) : 1 + random.nextInt(2048);
                lastOp = "add general " + size;
                buf = general.directBuffer(size, size * 2);
            } else if (kind < 75) {
                // now and then larger than a quarter chunk: the sequential allocator serves those from the general pool
                int size = random.nextInt(20) == 0 ? 70 * 1024 + random.nextInt(20 * 1024) : 1 + random.nextInt(12 * 1024);
                lastOp = "add sequential " + size;
                buf = sequential.allocate(size);
            } else {
                int size = 1 + random.nextInt(random.nextBoolean() ? 4096 : 100 * 1024);
                lastOp = "add block payload " + size;
                buf = blocks.allocate(size);
            }
            assertNotNull(buf, this::where);
            checksums.put(buf, BufferChecksums.fill(buf, random));
            kinds.put(buf, k);
            int writer = random.nextInt(buf.capacity() + 1);
            buf.setIndex(random.nextInt(writer + 1), writer);
            entries.add(buf);
        }

        private void removeEntry() {
            if (entries.isEmpty()) {
                return;
            }
            lastOp = "remove entry";
            ByteBuf buf = entries.remove(random.nextInt(entries.size()));
            release(buf);
        }

        private void release(ByteBuf buf) {
            buf.release();
            if (buf.refCnt() == 0) {
                checksums.remove(buf);
                kinds.remove(buf);
            }
        }

        private void readerRetains() {
            if (entries.isEmpty()) {
                return;
            }
            lastOp = "reader retains";
            ByteBuf buf = entries.get(random.nextInt(entries.size()));
            readerHeld.add(buf.retain());
        }

        private void readerReleases() throws Exception {
            if (readerHeld.isEmpty()) {
                return;
            }
            ByteBuf buf = readerHeld.remove(random.nextInt(readerHeld.size()));
            if (random.nextBoolean()) {
                lastOp = "reader releases";
                release(buf);
            } else {
                lastOp = "reader releases on another thread";
                releaser.submit(() -> {
                    buf.release();
                }).get(10, TimeUnit.SECONDS); // a bound for a stuck thread: the release itself is what is waited for
                if (buf.refCnt() == 0) {
                    checksums.remove(buf);
                    kinds.remove(buf);
                }
            }
        }

        private void overwrite() {
            if (entries.isEmpty()) {
                return;
            }
            lastOp = "overwrite";
            ByteBuf buf = entries.get(random.nextInt(entries.size()));
            if (buf.capacity() == 0) {
                return; // resized to nothing
            }
            checksums.put(buf, BufferChecksums.overwrite(buf, random)); // readers holding this same buffer see it too
        }

        /** Changes the capacity of a general-pool entry, in place or by a move of its own, and writes it anew. */
        private void resize() {
            if (entries.isEmpty()) {
                return;
            }
            ByteBuf buf = entries.get(random.nextInt(entries.size()));
            if (kinds.get(buf) != Kind.GENERAL) {
                return;
            }
            int capacity = random.nextInt(buf.maxCapacity() + 1);
            lastOp = "resize " + buf.capacity() + " to " + capacity;
            buf.capacity(capacity);
            checksums.put(buf, BufferChecksums.fill(buf, random));
        }

        private void addForeign() {
            lastOp = "add foreign";
            int size = 1 + random.nextInt(random.nextBoolean() ? 1024 : 16 * 1024);
            ByteBuf buf = foreignView.directBuffer(size);
            foreignChecksums.put(buf, BufferChecksums.fill(buf, random));
            Allocation memory = BufferChecksums.allocations(buf).get(0);
            foreignMemory.put(buf, memory);
            foreignAddresses.put(buf, memory.address() + memory.offset());
            foreign.add(buf);
        }

        private void removeForeign() {
            if (foreign.isEmpty()) {
                return;
            }
            lastOp = "remove foreign";
            ByteBuf buf = foreign.remove(random.nextInt(foreign.size()));
            foreignChecksums.remove(buf);
            foreignMemory.remove(buf);
            foreignAddresses.remove(buf);
            buf.release();
        }

        private void compact() {
            double maxOccupancy = random.nextDouble() * 0.95;
            int budgetKind = random.nextInt(4);
            long budget = budgetKind == 0 ? 0 : budgetKind == 1 ? random.nextInt(256 * 1024) : Long.MAX_VALUE;
            boolean ownerBusy = random.nextInt(10) == 0;
            lastOp = "compact(" + maxOccupancy + ", " + budget + ")" + (ownerBusy ? " while the owner holds its lock" : "");
            moved = 0;
            movedBytes = 0;
            refused = 0;
            held = 0;
            relocateCalls = 0;
            CompactionStats done = ownerBusy ? compactHoldingTheLock(maxOccupancy, budget)
                    : allocator.pool().compact(maxOccupancy, budget);
            assertEquals(1, done.compactions(), this::where);
            assertTrue(relocateCalls <= 1, this::where);
            assertEquals(moved, done.movedEntries(), () -> where() + ": " + done);
            assertEquals(movedBytes, done.movedBytes(), () -> where() + ": " + done);
            assertEquals(refused, done.refusedEntries(), () -> where() + ": " + done);
            assertEquals(held, done.heldByReaders(), () -> where() + ": " + done);
            assertTrue(done.chunksFreed() <= done.chunksEvacuated(), () -> where() + ": " + done);
            assertTrue(done.movedBytes() <= budget, () -> where() + ": " + done);
            if (done.chunksEvacuated() == 0) {
                assertEquals(0, relocateCalls, () -> where() + ": the owner was called with nothing to empty");
            }
            totals = totals.plus(done);
            CompactionStats all = allocator.pool().compactionTotals();
            assertEquals(totals.compactions(), all.compactions(), this::where);
            assertEquals(totals.movedEntries(), all.movedEntries(), this::where);
            assertEquals(totals.chunksFreed(), all.chunksFreed(), this::where);
        }

        /** A compaction while this thread holds the owner's lock: the relocator finds it held and returns at once. */
        private CompactionStats compactHoldingTheLock(double maxOccupancy, long budget) {
            lock.lock();
            try {
                CompactionStats done = allocator.pool().compact(maxOccupancy, budget);
                assertEquals(0, done.movedEntries(), this::where);
                return done;
            } finally {
                lock.unlock();
            }
        }

        /** The owner's relocator: moves what the evacuation contains, refusing a tenth, as the protocol says. */
        private void relocate(BufferEvacuation evacuation) {
            relocateCalls++;
            assertEquals(OWN, evacuation.category());
            if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
                return;
            }
            try {
                Set<ByteBuf> kept = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
                boolean walkedAll = true;
                for (int i = 0; i < entries.size(); i++) {
                    if (!evacuation.budgetLeft()) {
                        walkedAll = false;
                        break;
                    }
                    ByteBuf old = entries.get(i);
                    if (!evacuation.contains(old)) {
                        continue;
                    }
                    assertTrue(underAnyKey(BufferEvacuation.regionKeysOf(old), evacuation.regionKeys()),
                            () -> where() + ": an entry to move lies under none of the evacuation's region keys");
                    if (random.nextInt(10) == 0) {
                        evacuation.refused(); // in use: it stays
                        refused++;
                        kept.add(old);
                        continue;
                    }
                    boolean sharedWithReaders = old.refCnt() > 1;
                    ByteBuf copy = evacuation.move(old);
                    if (copy == null) {
                        refused++; // the budget or a limit kept it in place
                        kept.add(old);
                        continue;
                    }
                    assertFalse(evacuation.contains(copy), () -> where() + ": a copy landed in a chunk being emptied");
                    assertFalse(underAnyKey(BufferEvacuation.regionKeysOf(copy), evacuation.regionKeys()),
                            () -> where() + ": a copy lies under a region key being emptied");
                    assertEquals(old.capacity(), copy.capacity(), this::where);
                    assertEquals(old.maxCapacity(), copy.maxCapacity(), this::where);
                    assertEquals(old.readerIndex(), copy.readerIndex(), this::where);
                    assertEquals(old.writerIndex(), copy.writerIndex(), this::where);
                    assertEquals(1, copy.refCnt(), this::where);
                    long expected = checksums.get(old);
                    assertEquals(expected, BufferChecksums.crc(copy), () -> where() + ": the copy's bytes differ");
                    checksums.put(copy, expected);
                    Kind kind = kinds.get(old);
                    kinds.put(copy, kind);
                    movedByKind[kind.ordinal()]++;
                    assertEquals(BufferChecksums.allocations(old).size(), BufferChecksums.allocations(copy).size(), this::where);
                    entries.set(i, copy);
                    release(old); // readers that retained it keep it valid
                    moved++;
                    movedBytes += copy.capacity();
                    if (sharedWithReaders) {
                        held++;
                    }
                }
                if (walkedAll) {
                    for (ByteBuf entry : entries) {
                        assertTrue(!evacuation.contains(entry) || kept.contains(entry),
                                () -> where() + ": an entry is left in a chunk being emptied: " + entry);
                    }
                }
                for (ByteBuf buf : foreign) {
                    assertFalse(evacuation.contains(buf), () -> where() + ": a buffer of another category is offered");
                }
            } finally {
                lock.unlock();
            }
        }

        /** Whether any of an entry's region keys is among {@code evacuated} (ascending). */
        private static boolean underAnyKey(long[] keys, long[] evacuated) {
            for (long key : keys) {
                if (java.util.Arrays.binarySearch(evacuated, key) >= 0) {
                    return true;
                }
            }
            return false;
        }

        private void check() {
            long live = 0;
            long slices = 0;
            long[] parts = new long[3];
            for (Map.Entry<ByteBuf, Long> e : checksums.entrySet()) {
                ByteBuf buf = e.getKey();
                assertTrue(buf.refCnt() > 0, this::where);
                assertEquals(e.getValue(), BufferChecksums.crc(buf), () -> where() + ": bytes changed under " + buf);
                live += buf.capacity();
                int size = buf.capacity();
                Kind kind = kinds.get(buf);
                if (kind == Kind.SEQUENTIAL && size <= MAX_SLICE) {
                    slices += (size + 7) & -8;
                } else if (kind == Kind.BLOCKS) {
                    parts[0] += size / BLOCK;
                    parts[1] += size % BLOCK / SUB_BLOCK;
                    parts[2] += (size % BLOCK % SUB_BLOCK + MINI_BLOCK - 1) / MINI_BLOCK;
                }
            }
            // a copy comes from the allocator of its original: slices stay slices, payloads keep their shape
            assertEquals(slices, sequential.stats().liveBytes(), () -> where() + ": " + sequential.stats());
            io.slabwise.BlockStats blockStats = blocks.stats();
            assertEquals(parts[0], blockStats.liveBlocks(), () -> where() + ": " + blockStats);
            assertEquals(parts[1], blockStats.liveSubBlocks(), () -> where() + ": " + blockStats);
            assertEquals(parts[2], blockStats.liveMiniBlocks(), () -> where() + ": " + blockStats);
            long foreignLive = 0;
            for (ByteBuf buf : foreign) {
                assertEquals(foreignChecksums.get(buf), BufferChecksums.crc(buf), () -> where() + ": a foreign buffer changed");
                Allocation memory = BufferChecksums.allocations(buf).get(0);
                assertSame(foreignMemory.get(buf), memory, () -> where() + ": a foreign buffer moved");
                assertEquals(foreignAddresses.get(buf), memory.address() + memory.offset(), this::where);
                foreignLive += buf.capacity();
            }
            long expectedLive = live;
            long expectedForeign = foreignLive;
            assertEquals(expectedLive, allocator.stats().category(OWN).requested(), () -> where() + ": " + allocator.stats().report());
            assertEquals(expectedForeign, allocator.stats().category(FOREIGN).requested(), this::where);
        }

        private void releaseEverything() throws Exception {
            lastOp = "release everything";
            for (ByteBuf buf : readerHeld) {
                buf.release();
            }
            readerHeld.clear();
            for (ByteBuf buf : entries) {
                buf.release();
            }
            entries.clear();
            checksums.clear();
            for (ByteBuf buf : foreign) {
                buf.release();
            }
            foreign.clear();
            assertEquals(0, allocator.stats().category(OWN).requested(), this::where);
            assertEquals(0, allocator.stats().category(FOREIGN).requested(), this::where);
            releaser.shutdown();
            assertTrue(releaser.awaitTermination(10, TimeUnit.SECONDS), this::where);
            for (Thread thread : releaseThreads) {
                thread.join(); // dead: its cache goes back at the trim
            }
            CompactionStats last = allocator.compact();
            assertEquals(0, last.movedEntries(), () -> where() + ": " + last);
            allocator.trim();
            assertEquals(0, allocator.stats().liveAllocations(), this::where);
            assertEquals(0, allocator.pool().committedBytes(), () -> where() + ": " + allocator.stats().report());
        }

        @Override
        public void close() {
            releaser.shutdownNow();
            allocator.close();
        }
    }
}
