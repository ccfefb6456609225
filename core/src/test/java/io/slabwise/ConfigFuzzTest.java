package io.slabwise;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Configurations and requests fuzzed together: pools built from random but
 * valid settings, every one at its extremes and at odd values (the smallest
 * and largest chunks, first chunks of every size up to the chunk size,
 * dedicated thresholds at a page, off a page and at the chunk size, thread
 * caches off, tiny and larger than a chunk, per-class limits of 0 and 1, no
 * idle chunks, a ceiling just above one chunk, quotas, every limit policy,
 * region groups, a relocator), then random allocations, resizes in place and
 * frees of boundary sizes (0, 1, class edges, a page, the thresholds and the
 * chunk size, each +-1, the largest request and one above it) through every
 * allocation path (holders of the caller's, stashed holders, try-allocates,
 * sequential slices, block payloads, relocatable entries), with trims,
 * decays, compactions, bursts long enough for cache sweeps and short-lived
 * threads, on one thread and on two that free each other's memory (half the
 * time as a producer and a consumer).
 *
 * <p>Checked after every few steps (one thread) or every batch (two): live
 * allocations never overlap; each reserves at least what it asked for, and
 * exactly {@link MemoryPool#reservedSizeFor} below the dedicated threshold;
 * the bytes written into each survive until it is freed, and moves by a
 * compaction; the pool's requested and reserved bytes (a quota's tracked
 * bytes too) are the model's; requested &lt;= reserved &lt;= committed &lt;=
 * the ceiling; a thread's cache within its limits; idle chunks and blocks
 * within theirs; on one thread, a refusal at the ceiling only when the
 * smallest region the request needs does not fit; and after everything is
 * freed, decayed, trimmed and closed (or closed first, then freed), nothing
 * is live, reserved or committed, and the chunk source holds nothing.
 * Nothing but a refusal at a limit, or an {@link IllegalArgumentException}
 * for a request out of range, may come out of an allocation. Settings out of
 * range, alone or against the others, must be refused naming the setting.
 *
 * <p>Fixed seeds and counts: about ten seconds. The environment variables
 * {@code FUZZ_SEED}, {@code FUZZ_CONFIGS}, {@code FUZZ_ONLY} (one
 * configuration's index) and {@code FUZZ_TIMING} widen or narrow a run by hand.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ConfigFuzzTest {

    private static final int PAGE = PoolConfig.PAGE_SIZE;
    private static final int MAX_REQUEST = Integer.MAX_VALUE & -PAGE;
    /** The largest region the fuzzer lets a request commit; larger requests are made only where a limit refuses them. */
    private static final long BIG = 300L << 20;
    /** The most the fuzzer lets a pool commit before it only frees. */
    private static final long BUDGET = 900L << 20;
    private static final int CONFIGS = Integer.parseInt(System.getenv().getOrDefault("FUZZ_CONFIGS", "48"));
    private static final int ONLY = Integer.parseInt(System.getenv().getOrDefault("FUZZ_ONLY", "-1"));
    private static final long SEED_BASE = Long.parseLong(System.getenv().getOrDefault("FUZZ_SEED", "20260301"));
    private static final boolean TIMING = System.getenv("FUZZ_TIMING") != null;
    private static final int SINGLE_STEPS = 500;
    private static final int BATCHES = 8;
    private static final int BATCH_STEPS = 40;

    // ---- the chunk source ----------------------------------------------------------------------

    /** Direct buffers, with every region it handed out known: a region released twice or never is an error. */
    static final class TrackingSource implements ChunkSource {
        private final Set<NativeRegion> held = ConcurrentHashMap.newKeySet();
        final AtomicLong heldBytes = new AtomicLong();
        final Queue<String> errors = new ConcurrentLinkedQueue<>();

        @Override
        public NativeRegion allocate(int size) {
            if (size <= 0) {
                errors.add("asked for a region of " + size + " bytes");
            }
            NativeRegion region = ChunkSource.direct().allocate(size);
            held.add(region);
            heldBytes.addAndGet(size);
            return region;
        }

        @Override
        public void release(NativeRegion region) {
            if (!held.remove(region)) {
                errors.add("given back a region it does not hold (" + region.size() + " bytes)");
                return; // never free the memory twice
            }
            heldBytes.addAndGet(-region.size());
            ChunkSource.direct().release(region);
        }

        @Override
        public String toString() {
            return "tracking";
        }
    }

    // ---- configurations ------------------------------------------------------------------------

    /** One fuzzed configuration with what the checks need to know of it. */
    static final class Fuzzed {
        final PoolConfig config;
        final String description;
        final ManualTime time;
        final TrackingSource source;
        final long quota;
        /** Whether category "r" has a relocator that moves its entries. */
        final boolean relocating;

        Fuzzed(PoolConfig config, String description, ManualTime time, TrackingSource source, long quota,
               boolean relocating) {
            this.relocating = relocating;
            this.config = config;
            this.description = description;
            this.time = time;
            this.source = source;
            this.quota = quota;
        }
    }

    private static int pick(SplittableRandom r, int... values) {
        return values[r.nextInt(values.length)];
    }

    private static long pick(SplittableRandom r, long... values) {
        return values[r.nextInt(values.length)];
    }

    /** A random power of two from {@code from} to {@code to}, both powers of two. */
    private static int powerOfTwo(SplittableRandom r, int from, int to) {
        int fromShift = Integer.numberOfTrailingZeros(from);
        int toShift = Integer.numberOfTrailingZeros(to);
        return 1 << (fromShift + r.nextInt(toShift - fromShift + 1));
    }

    /** A valid configuration, every setting drawn from its extremes and odd values. */
    static Fuzzed randomConfig(SplittableRandom r, boolean twoThreads) {
        StringBuilder d = new StringBuilder();
        ManualTime time = ManualTime.waitsRunOut(); // a wait at a limit lasts its timeout on this clock, unless a release ends it
        PoolConfig.Builder b = PoolConfig.builder().ticker(time).scheduler(time);
        int chunk = r.nextInt(80) == 0 ? PoolConfig.MAX_CHUNK_SIZE
                : pick(r, PoolConfig.MIN_CHUNK_SIZE, PoolConfig.MIN_CHUNK_SIZE, 128 << 10, 256 << 10, 1 << 20, 4 << 20);
        b.chunkSize(chunk);
        d.append(".chunkSize(").append(chunk).append(')');
        switch (r.nextInt(3)) {
            case 0 -> { }
            case 1 -> {
                b.firstChunkSize(chunk);
                d.append(".firstChunkSize(").append(chunk).append(')');
            }
            default -> {
                int first = powerOfTwo(r, PoolConfig.MIN_CHUNK_SIZE, Math.min(chunk, 4 << 20));
                b.firstChunkSize(first);
                d.append(".firstChunkSize(").append(first).append(')');
            }
        }
        int arenas = r.nextInt(30) == 0 ? 1024 : pick(r, 1, 1, 2, 3, 5, 64);
        b.arenas(arenas);
        d.append(".arenas(").append(arenas).append(')');
        long spread = pick(r, 0L, 1L, 32L << 20, Long.MAX_VALUE, chunk);
        b.arenaSpreadBytes(spread);
        d.append(".arenaSpreadBytes(").append(spread).append(')');
        if (r.nextInt(4) != 0) {
            int dedicated = switch (r.nextInt(8)) {
                case 0 -> PAGE;
                case 1 -> PAGE + 1;
                case 2 -> chunk - 1;
                case 3 -> chunk;
                case 4 -> chunk / 2 + 1;
                case 5 -> Math.min(chunk, 8 * PAGE + 1);
                default -> PAGE + r.nextInt(chunk - PAGE + 1);
            };
            b.dedicatedAbove(dedicated);
            d.append(".dedicatedAbove(").append(dedicated).append(')');
        }
        int maxCached = switch (r.nextInt(12)) {
            case 0 -> 0;
            case 1 -> 1;
            case 2 -> pick(r, 15, 16, 17, 127, 129);
            case 3 -> pick(r, PAGE - 1, PAGE, PAGE + 1);
            case 4 -> pick(r, 8 * PAGE - 1, 8 * PAGE, 8 * PAGE + 1);
            case 5 -> chunk - 1;
            case 6 -> chunk;
            case 7 -> chunk + 1;
            case 8 -> Integer.MAX_VALUE;
            case 9 -> (1 << 20) + 1;
            default -> 1 + r.nextInt(chunk + 1);
        };
        b.maxCachedSize(maxCached);
        d.append(".maxCachedSize(").append(maxCached).append(')');
        int bytesPerClass = pick(r, 0, 1, 16, 1 << 20, 1 << 20, Integer.MAX_VALUE);
        b.maxCachedBytesPerClass(bytesPerClass);
        d.append(".maxCachedBytesPerClass(").append(bytesPerClass).append(')');
        int entriesPerClass = pick(r, 0, 1, 2, 3, 8, 256, 256, Integer.MAX_VALUE);
        b.maxCachedEntriesPerClass(entriesPerClass);
        d.append(".maxCachedEntriesPerClass(").append(entriesPerClass).append(')');
        int idleChunks = pick(r, 0, 0, 1, 2, Integer.MAX_VALUE);
        b.maxIdleChunksPerArena(idleChunks);
        d.append(".maxIdleChunksPerArena(").append(idleChunks).append(')');
        int idleBlocks = pick(r, 0, 1, 4, Integer.MAX_VALUE);
        b.maxIdleBlocks(idleBlocks);
        d.append(".maxIdleBlocks(").append(idleBlocks).append(')');
        int minIdle = pick(r, 0, 0, 0, 1, 3, Integer.MAX_VALUE);
        b.minIdleChunks(minIdle);
        d.append(".minIdleChunks(").append(minIdle).append(')');
        int remote = pick(r, 2, 3, 64, 4096);
        b.remoteFreeQueueCapacity(remote);
        d.append(".remoteFreeQueueCapacity(").append(remote).append(')');
        long maxMemory = switch (r.nextInt(9)) {
            case 0 -> 0; // unset
            case 1 -> chunk;
            case 2 -> chunk + 1L;
            case 3 -> chunk + (long) PAGE;
            case 4 -> 2L * chunk + 1;
            case 5 -> 3L * chunk + PAGE - 1;
            case 6 -> Math.max(chunk, 64L << 20);
            case 7 -> Long.MAX_VALUE;
            default -> chunk + (long) r.nextInt(4 * chunk);
        };
        if (maxMemory != 0) {
            b.maxMemory(maxMemory);
            d.append(".maxMemory(").append(maxMemory).append(')');
        }
        LimitPolicy policy = LimitPolicy.values()[r.nextInt(LimitPolicy.values().length)];
        b.limitPolicy(policy);
        d.append(".limitPolicy(").append(policy).append(')');
        long waitMillis = twoThreads ? pick(r, 0L, 2L, 5L) : pick(r, 0L, 1L, 3L); // on two, the other may free meanwhile
        b.waitTimeout(Duration.ofMillis(waitMillis));
        d.append(".waitTimeout(").append(waitMillis).append("ms)");
        long quota = -1;
        if (r.nextInt(3) != 0) {
            quota = pick(r, 0L, 1L, PAGE, chunk, 3L * chunk + 1, 64L << 20, Long.MAX_VALUE);
            b.quota("q", quota);
            d.append(".quota(q, ").append(quota).append(')');
        }
        if (r.nextBoolean()) {
            LimitPolicy p = LimitPolicy.values()[r.nextInt(LimitPolicy.values().length)];
            b.categoryPolicy("q", p);
            d.append(".categoryPolicy(q, ").append(p).append(')');
        }
        Duration decay = switch (r.nextInt(4)) {
            case 0 -> Duration.ZERO;
            case 1 -> Duration.ofMillis(1);
            case 2 -> Duration.ofSeconds(1);
            default -> PoolConfig.Settings.LONGEST.plusDays(1);
        };
        b.idleChunkDecay(decay);
        d.append(".idleChunkDecay(").append(decay).append(')');
        long compaction = pick(r, 0L, 0L, 1L << 20);
        b.compactionBytesPerSecond(compaction);
        d.append(".compactionBytesPerSecond(").append(compaction).append(')');
        TrackingSource source = null;
        if (r.nextInt(6) == 0) {
            b.chunkSource(ChunkSource.direct()); // region groups: the pool's own carving of the source's memory
            d.append(".chunkSource(direct)");
        } else {
            source = new TrackingSource();
            b.chunkSource(source);
            d.append(".chunkSource(tracking)");
        }
        boolean relocating = r.nextBoolean();
        if (relocating) {
            d.append(" with a relocator for 'r'");
        }
        return new Fuzzed(b.build(), d.toString(), time, source, quota, relocating);
    }

    // ---- the model of live allocations -----------------------------------------------------------

    /** How an allocation was made. */
    enum Path { ALLOCATE, CATEGORY, TRY, STASHED, SEQUENTIAL, BLOCK, RELOCATABLE, RELOCATABLE_SLICE }

    /** A live allocation as the model knows it. */
    static final class Live {
        final Allocation allocation;
        final Path path;
        final Category category;
        final long address;
        final int reserved;
        final long stamp;
        final boolean dedicated;
        volatile int requested;

        Live(Allocation allocation, Path path, long stamp) {
            this.allocation = allocation;
            this.path = path;
            this.category = allocation.category();
            this.address = allocation.address();
            this.reserved = allocation.reservedBytes();
            this.requested = allocation.requestedBytes();
            this.stamp = stamp;
            this.dedicated = allocation.chunk.huge;
        }

        @Override
        public String toString() {
            return path + "(" + category.name() + ", requested=" + requested + ", reserved=" + reserved + ", at "
                    + Long.toHexString(address) + (dedicated ? ", dedicated" : "") + ")";
        }
    }

    /** The byte a stamp puts at {@code position}. */
    private static byte stampByte(long stamp, int position) {
        long x = stamp * 0x9E3779B97F4A7C15L + position;
        return (byte) (x ^ (x >>> 29) ^ (x >>> 13));
    }

    /** Where a stamp writes in an allocation of {@code reserved} bytes: all of a small one, ends and samples of others. */
    private static int[] stampPositions(long stamp, int reserved) {
        if (reserved <= 256) {
            int[] all = new int[reserved];
            for (int i = 0; i < reserved; i++) {
                all[i] = i;
            }
            return all;
        }
        int[] positions = new int[80];
        for (int i = 0; i < 32; i++) {
            positions[i] = i;
            positions[32 + i] = reserved - 1 - i;
        }
        SplittableRandom r = new SplittableRandom(stamp);
        for (int i = 64; i < positions.length; i++) {
            positions[i] = r.nextInt(reserved);
        }
        return positions;
    }

    private static void writeStamp(Live live) {
        ByteBuffer memory = live.allocation.chunkMemory();
        int offset = live.allocation.offset();
        for (int p : stampPositions(live.stamp, live.reserved)) {
            memory.put(offset + p, stampByte(live.stamp, p));
        }
    }

    private static String checkStamp(Live live) {
        ByteBuffer memory = live.allocation.chunkMemory();
        int offset = live.allocation.offset();
        for (int p : stampPositions(live.stamp, live.reserved)) {
            if (memory.get(offset + p) != stampByte(live.stamp, p)) {
                return "byte " + p + " of " + live + " was overwritten";
            }
        }
        return null;
    }

    /** The live allocations of one run, by address; any thread. */
    static final class Model {
        private final TreeMap<Long, Live> byAddress = new TreeMap<>();
        private final Map<Allocation, Live> byHolder = new IdentityHashMap<>();

        synchronized String add(Live live) {
            if (byHolder.containsKey(live.allocation)) {
                return "holder handed out twice: " + live;
            }
            Map.Entry<Long, Live> below = byAddress.floorEntry(live.address);
            if (below != null && below.getKey() + below.getValue().reserved > live.address) {
                return live + " overlaps " + below.getValue();
            }
            Map.Entry<Long, Live> above = byAddress.ceilingEntry(live.address);
            if (above != null && live.address + live.reserved > above.getKey()) {
                return live + " overlaps " + above.getValue();
            }
            byAddress.put(live.address, live);
            byHolder.put(live.allocation, live);
            return null;
        }

        synchronized void remove(Live live) {
            byAddress.remove(live.address);
            byHolder.remove(live.allocation);
        }

        synchronized List<Live> all() {
            return new ArrayList<>(byAddress.values());
        }

        synchronized long[] sums(String category) {
            long requested = 0;
            long reserved = 0;
            long categoryReserved = 0;
            for (Live live : byAddress.values()) {
                requested += live.requested;
                reserved += live.reserved;
                if (live.category.name().equals(category)) {
                    categoryReserved += live.reserved;
                }
            }
            return new long[] {requested, reserved, byAddress.size(), categoryReserved};
        }
    }

    // ---- one run ------------------------------------------------------------------------------

    /** A pool under test, its model and what the checks derive from the configuration. */
    static final class Run {
        final Fuzzed fuzzed;
        final MemoryPool pool;
        final Model model = new Model();
        final SizeClasses sizes;
        final int chunk;
        final int fittedAbove;
        final int dedicatedAbove;
        final long ceiling;
        final Category q;
        final Category p;
        final SequentialAllocator sequential;
        final BlockPool blocks;
        /** The owner of the relocatable entries (category "r", general pool and slices); null without a relocator. */
        final Owner owner;
        final SequentialAllocator relocatableSlices;
        final boolean oneThread;
        /** Allocations one worker hands to the other to free. */
        final Queue<Live> handedOver = new ConcurrentLinkedQueue<>();
        final AtomicLong stamps = new AtomicLong(1);

        Run(Fuzzed fuzzed, boolean oneThread) {
            this.fuzzed = fuzzed;
            this.oneThread = oneThread;
            this.pool = new MemoryPool(fuzzed.config);
            this.sizes = pool.general.sizes();
            this.chunk = fuzzed.config.chunkSize();
            int maxCached = fuzzed.config.maxCachedSize();
            // as documented: size classes up to what thread caches keep (never below 8 pages), whole pages above
            int largestCached = maxCached == 0 ? 0 : sizes.size(SizeClasses.indexOf(Math.min(maxCached, chunk)));
            this.fittedAbove = Math.min(chunk, Math.max(8 * PAGE, largestCached));
            this.dedicatedAbove = Math.min(chunk, Math.max(fittedAbove, fuzzed.config.dedicatedAbove()));
            this.ceiling = fuzzed.config.maxMemory();
            this.q = pool.category("q");
            this.p = pool.category("p");
            SplittableRandom r = new SplittableRandom(fuzzed.description.hashCode());
            int seqMax = pick(r, 1, chunk / 4, chunk / 4 + 1, chunk, MAX_REQUEST);
            this.sequential = r.nextBoolean() ? pool.sequential("seq") : pool.sequential("seq", pick(r, 1, 3, 1024), seqMax);
            this.blocks = r.nextBoolean() ? pool.blocks("blk") : pool.blocks("blk", powerOfTwo(r, PAGE, chunk), pick(r, 1, 2, 1024));
            this.relocatableSlices = pool.sequential("r", pick(r, 1, 2), pick(r, chunk / 4, chunk, MAX_REQUEST));
            this.owner = fuzzed.relocating ? new Owner(this) : null;
            if (owner != null) {
                pool.setRelocator("r", owner);
            }
        }

        /** The request sizes worth trying on this configuration. */
        int randomSize(SplittableRandom r) {
            if (r.nextInt(3) == 0) {
                return cachedSize(r);
            }
            int around = switch (r.nextInt(16)) {
                case 0 -> 0;
                case 1 -> 1;
                case 2 -> sizes.size(r.nextInt(sizes.count()));
                case 3 -> pick(r, 16, 128, PAGE, 8 * PAGE, 1 << 20);
                case 4 -> fuzzed.config.maxCachedSize();
                case 5 -> fittedAbove;
                case 6 -> dedicatedAbove;
                case 7 -> fuzzed.config.dedicatedAbove();
                case 8 -> chunk;
                case 9 -> fuzzed.config.firstChunkSize();
                case 10 -> 2 * chunk;
                case 11 -> r.nextInt(64) == 0 ? MAX_REQUEST : chunk / 2;
                default -> r.nextInt(Math.min(2 * chunk, 4 << 20) + 1);
            };
            long size = (long) around + r.nextInt(3) - 1;
            return (int) Math.max(0, Math.min(Integer.MAX_VALUE, size));
        }

        /** A size thread caches keep: a small class, or a run of a few pages. */
        int cachedSize(SplittableRandom r) {
            int cached = Math.max(16, Math.min(Math.min(fuzzed.config.maxCachedSize(), chunk), 64 << 10));
            return sizes.size(r.nextInt(SizeClasses.indexOf(cached) + 1)) - r.nextInt(2);
        }

        /** A random request of the size class of {@code size} (of its pages above the chunk size). */
        int sameClass(int size, SplittableRandom r) {
            if (size <= 0 || size > MAX_REQUEST) {
                return size;
            }
            if (size > chunk) {
                int pages = sizes.pageRound(size);
                return pages - r.nextInt(PAGE);
            }
            int index = SizeClasses.indexOf(size);
            int below = index == 0 ? 0 : sizes.size(index - 1);
            return below + 1 + r.nextInt(sizes.size(index) - below);
        }

        /** Whether a request of {@code size} bytes in {@code category} may be made without committing too much. */
        boolean affordable(int size, Category category) {
            if (size < 0 || size > MAX_REQUEST) {
                return true; // refused before anything is committed
            }
            long reserved = pool.reservedSizeFor(size);
            if (reserved > ceiling || (category == q && fuzzed.quota >= 0 && reserved > fuzzed.quota)) {
                return true; // never satisfiable: refused at once (or, waiting, at once too)
            }
            return reserved <= BIG && pool.committedBytes() + reserved + chunk <= BUDGET;
        }

        /** What a reserved size must be for a request, or null when the allocation is fine; see the class comment. */
        String checkAllocation(Allocation a, int requested, Path path) {
            if (!a.isLive()) {
                return "an allocation that succeeded is not live";
            }
            if (a.requestedBytes() != requested) {
                return "requested " + requested + " but the allocation says " + a.requestedBytes();
            }
            if (a.reservedBytes() < Math.max(1, requested)) {
                return "reserved " + a.reservedBytes() + " for a request of " + requested;
            }
            if (a.address() == 0 || a.offset() < 0
                    || (long) a.offset() + a.reservedBytes() > a.chunkMemory().capacity()) {
                return "allocation out of its region: offset " + a.offset() + " + " + a.reservedBytes() + " > "
                        + a.chunkMemory().capacity();
            }
            if (a.address() != BufferAddress.of(a.chunkMemory()) + a.offset()) {
                return "address is not the region's plus the offset";
            }
            if (path == Path.SEQUENTIAL || path == Path.BLOCK || path == Path.RELOCATABLE_SLICE) {
                return null; // their own reservations; the general pool's rules for what they pass on are not theirs
            }
            int pages = sizes.pageRound(requested);
            if (a.chunk.huge) {
                if (requested <= dedicatedAbove) {
                    return "a request of " + requested + " got a dedicated region, at most " + dedicatedAbove;
                }
                if (!DedicatedRegions.fits(a.reservedBytes(), pages)) {
                    return "a dedicated region of " + a.reservedBytes() + " serves a request of " + requested;
                }
            } else {
                if (requested > dedicatedAbove) {
                    return "a request of " + requested + " above the dedicated threshold " + dedicatedAbove + " got a run";
                }
                int expected = requested > fittedAbove ? pages : sizes.size(SizeClasses.indexOf(Math.max(1, requested)));
                if (a.reservedBytes() != expected || a.reservedBytes() != pool.reservedSizeFor(requested)) {
                    return "a request of " + requested + " reserved " + a.reservedBytes() + ", expected " + expected
                            + " (reservedSizeFor says " + pool.reservedSizeFor(requested) + ")";
                }
            }
            return null;
        }

        /**
         * The most one thread's cache may hold: per cached class, the entries
         * and bytes its limits allow, and the large slot's one run of up to 1 MiB.
         */
        long cacheBound() {
            int maxCached = fuzzed.config.maxCachedSize();
            if (maxCached == 0) {
                return 0;
            }
            long bound = Math.min(LargeSlots.LIMIT, chunk);
            for (int i = 0; i <= SizeClasses.indexOf(Math.min(maxCached, chunk)); i++) {
                long size = sizes.size(i);
                long entries = Math.min(fuzzed.config.maxCachedEntriesPerClass(), fuzzed.config.maxCachedBytesPerClass() / size);
                bound += entries * size;
            }
            return bound;
        }

        /** The quiet-time checks: accounting agrees with the model, requested <= reserved <= committed <= ceiling. */
        void checkQuiet(String when) {
            long[] sums = model.sums("q");
            assertEquals(sums[0], pool.requestedBytes(), when + ": requested bytes");
            assertEquals(sums[1], pool.reservedBytes(), when + ": reserved bytes");
            PoolStats stats = pool.stats();
            assertEquals(sums[2], stats.liveAllocations(), when + ": live allocations");
            assertEquals(sums[0], stats.requestedBytes(), when + ": stats' requested bytes");
            assertEquals(sums[1], stats.reservedBytes(), when + ": stats' reserved bytes");
            assertTrue(stats.requestedBytes() <= stats.reservedBytes() && stats.reservedBytes() <= stats.committedBytes(),
                    when + ": requested <= reserved <= committed: " + stats.summary());
            assertTrue(stats.committedBytes() <= ceiling, when + ": committed above the ceiling: " + stats.committedBytes());
            int idleBound = fuzzed.config.minIdleChunks() == 0 ? fuzzed.config.maxIdleChunksPerArena()
                    : Math.max(fuzzed.config.maxIdleChunksPerArena(), fuzzed.config.minIdleChunks());
            for (ArenaSnapshot arena : stats.arenaSnapshots()) {
                assertTrue(arena.idleChunks() <= idleBound, when + ": arena " + arena.index() + " holds "
                        + arena.idleChunks() + " idle chunks, at most " + idleBound + " allowed");
            }
            if (q.tracked) {
                assertEquals(sums[3], q.trackedReserved.get(), when + ": q's tracked reserved bytes");
            }
            if (fuzzed.source != null) {
                assertEquals(fuzzed.source.heldBytes.get(), pool.committedBytes(), when + ": committed against the source");
                assertTrue(fuzzed.source.errors.isEmpty(), when + ": " + fuzzed.source.errors);
            }
            if (owner != null) {
                assertTrue(owner.errors.isEmpty(), when + ": the relocator found " + owner.errors);
            }
            BlockStats blockStats = blocks.stats();
            assertTrue(blockStats.idleBlocks() <= fuzzed.config.maxIdleBlocks(), when + ": idle blocks " + blockStats);
            ThreadCache own = pool.threadCaches.own();
            if (own != null) {
                assertTrue(own.cachedBytes() <= cacheBound(), when + ": this thread caches " + own.cachedBytes()
                        + " bytes, more than its limits allow: " + cacheBound());
            }
            for (Live live : model.all()) {
                String broken = checkStamp(live);
                if (broken != null) {
                    fail(when + ": " + broken);
                }
            }
        }
    }

    /**
     * The owner of the entries of category "r": it holds them under its lock,
     * and moves those a compaction asks for, checking that the bytes came
     * along and that the new memory overlaps nothing.
     */
    static final class Owner implements Relocator {
        final ReentrantLock lock = new ReentrantLock();
        final List<Live> entries = new ArrayList<>();
        final Queue<String> errors = new ConcurrentLinkedQueue<>();
        private final Run run;

        Owner(Run run) {
            this.run = run;
        }

        @Override
        public void relocate(Evacuation evacuation) {
            if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
                evacuation.refused();
                return;
            }
            try {
                for (int i = 0; i < entries.size() && evacuation.budgetLeft(); i++) {
                    Live old = entries.get(i);
                    if (!evacuation.contains(old.allocation)) {
                        continue;
                    }
                    Allocation to = new Allocation();
                    if (!evacuation.moveInto(old.allocation, to)) {
                        continue;
                    }
                    String wrong = run.checkAllocation(to, old.requested, old.path);
                    if (wrong == null) {
                        ByteBuffer memory = to.chunkMemory();
                        for (int p : stampPositions(old.stamp, old.reserved)) {
                            if (p < old.requested && memory.get(to.offset() + p) != stampByte(old.stamp, p)) {
                                wrong = "byte " + p + " of " + old + " did not move along";
                                break;
                            }
                        }
                    }
                    run.model.remove(old);
                    run.pool.free(old.allocation);
                    Live moved = new Live(to, old.path, run.stamps.getAndIncrement());
                    if (wrong == null) {
                        wrong = run.model.add(moved);
                    }
                    if (wrong != null) {
                        errors.add("moving " + old + ": " + wrong);
                        return;
                    }
                    writeStamp(moved);
                    entries.set(i, moved);
                }
            } catch (RuntimeException | Error e) {
                errors.add("moving: " + e);
                throw e;
            } finally {
                lock.unlock();
            }
        }
    }

    /** One thread's random steps on a run. */
    static final class Worker {
        final Run run;
        final SplittableRandom r;
        final List<Live> mine = new ArrayList<>();
        final ArrayDeque<String> log = new ArrayDeque<>();
        final boolean twoThreads;
        Path lastFreedPath;
        int lastFreedSize;
        /**
         * 0: any step; 1: a producer, which mostly allocates a few sizes and
         * hands them over; 2: a consumer, which mostly frees what it is handed
         * (the way buffers allocated on one thread are released on another).
         */
        int role;
        private int[] produced;

        Worker(Run run, long seed, boolean twoThreads) {
            this.run = run;
            this.r = new SplittableRandom(seed);
            this.twoThreads = twoThreads;
        }

        void note(String step) {
            if (log.size() == 24) {
                log.removeFirst();
            }
            log.addLast(step);
        }

        /** Fails with the configuration and the last steps. */
        AssertionError failure(String what, Throwable cause) {
            return new AssertionError(what + "\n  config: PoolConfig.builder()" + run.fuzzed.description
                    + "\n  last steps: " + String.join("\n    ", log), cause);
        }

        void step() {
            if (role != 0 && r.nextInt(4) != 0) {
                produceOrConsume();
                return;
            }
            int op = r.nextInt(100);
            if (op < 35 || mine.isEmpty()) {
                allocate(null, -1);
            } else if (op < 45) {
                // the size just freed, the same way, or another of its class: what caches and slots keep
                allocate(lastFreedPath, r.nextBoolean() ? lastFreedSize : run.sameClass(lastFreedSize, r));
            } else if (op < 46) {
                if (r.nextBoolean()) {
                    churn();
                } else {
                    burst();
                }
            } else if (op < 75) {
                Live other = twoThreads && r.nextBoolean() ? run.handedOver.poll() : null;
                free(other != null ? other : mine.remove(r.nextInt(mine.size()))); // the other thread's, often
            } else if (op < 85) {
                resize(mine.get(r.nextInt(mine.size())));
            } else if (op < 88) {
                Live live = mine.get(r.nextInt(mine.size()));
                String broken = checkStamp(live);
                if (broken != null) {
                    throw failure(broken, null);
                }
            } else if (op < 94 && twoThreads) {
                for (int i = r.nextInt(1, 8); i > 0 && !mine.isEmpty(); i--) {
                    Live live = mine.remove(r.nextInt(mine.size()));
                    note("hand over " + live);
                    run.handedOver.add(live);
                }
            } else if (op < 94) {
                Live other = run.handedOver.poll();
                if (other != null) {
                    free(other);
                }
            } else if (op < 95) {
                ownerStep();
            } else if (op < 96) {
                note("trim");
                run.pool.trim();
            } else if (op < 98) {
                long millis = pick(r, 1L, 999L, 1000L, 20_000L);
                note("decay after " + millis + " ms");
                run.fuzzed.time.advance(Duration.ofMillis(millis));
                run.fuzzed.time.runScheduled();
            } else if (op < 99 && run.q.tracked) {
                long quota = pick(r, 0L, PAGE, run.chunk, Long.MAX_VALUE);
                note("setQuota(q, " + quota + ")");
                run.pool.setQuota("q", quota);
            } else {
                PoolStats stats = run.pool.stats(); // under traffic on two threads: the order still holds
                note("stats " + stats.summary());
                if (!(stats.requestedBytes() <= stats.reservedBytes() && stats.reservedBytes() <= stats.committedBytes()
                        && stats.committedBytes() <= run.ceiling)) {
                    throw failure("stats out of order: " + stats.summary(), null);
                }
            }
        }

        /**
         * A short-lived thread allocates and frees a few, and dies with the
         * rest live; this thread frees them later (its cache is then a dead
         * thread's, reclaimed with its buffers still out).
         */
        void churn() {
            note("churn");
            Worker child = new Worker(run, r.nextLong(), false);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    for (int i = 0, n = 1 + child.r.nextInt(12); i < n; i++) {
                        if (child.mine.isEmpty() || child.r.nextInt(3) != 0) {
                            child.allocate(null, -1);
                        } else {
                            child.free(child.mine.remove(child.r.nextInt(child.mine.size())));
                        }
                    }
                } catch (Throwable e) {
                    failed.set(e);
                }
            }, "fuzz-churn");
            t.start();
            try {
                t.join(20_000);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            if (failed.get() != null) {
                throw failure("in a short-lived thread: " + failed.get() + "\n  its steps: "
                        + String.join("\n    ", child.log), failed.get());
            }
            mine.addAll(child.mine);
        }

        /**
         * Allocates and frees one size thousands of times, through a holder of
         * its own or a stashed one: enough operations for the thread cache's
         * sweeps (every {@link ThreadCache#SWEEP_INTERVAL}), which give back
         * what was not used and may move the cache to another arena.
         */
        void burst() {
            int size = run.randomSize(r);
            if (size > run.chunk) {
                // above a chunk every cycle maps a region (with region groups, a whole group): too slow for thousands
                size = r.nextInt(4 * PAGE);
            }
            boolean stashed = r.nextBoolean();
            int times = ThreadCache.SWEEP_INTERVAL / 2 + r.nextInt(ThreadCache.SWEEP_INTERVAL);
            note("burst of " + times + " x " + size + (stashed ? " stashed" : ""));
            Allocation own = new Allocation();
            for (int i = 0; i < times; i++) {
                Allocation a;
                try {
                    a = stashed ? run.pool.general.allocateStashed(run.p, size, true) : own;
                    if (!stashed && !run.pool.tryAllocate(run.p, size, a, true)) {
                        a = null;
                    }
                } catch (RuntimeException | Error e) {
                    throw failure("burst: unexpected " + e, e);
                }
                if (a == null) {
                    continue; // at the ceiling
                }
                String wrong = run.checkAllocation(a, size, Path.CATEGORY);
                Live live = wrong == null ? new Live(a, Path.CATEGORY, 0) : null;
                if (wrong == null) {
                    wrong = run.model.add(live); // it overlaps nothing live
                }
                if (wrong != null) {
                    throw failure("burst, allocation " + i + ": " + wrong, null);
                }
                run.model.remove(live);
                run.pool.free(a);
            }
        }

        /** A producer's or a consumer's step (see {@link #role}). */
        void produceOrConsume() {
            if (role == 1) {
                if (produced == null) {
                    produced = new int[3];
                    for (int i = 0; i < produced.length; i++) {
                        produced[i] = r.nextInt(3) == 0 ? run.randomSize(r) : run.cachedSize(r);
                    }
                }
                if (mine.size() < 8 || r.nextInt(3) != 0) {
                    allocate(r.nextBoolean() ? Path.STASHED : Path.CATEGORY, run.sameClass(produced[r.nextInt(3)], r));
                } else {
                    while (!mine.isEmpty()) {
                        Live live = mine.remove(mine.size() - 1);
                        note("hand over " + live);
                        run.handedOver.add(live);
                    }
                }
            } else {
                Live other = run.handedOver.poll();
                if (other != null) {
                    free(other);
                } else if (!mine.isEmpty()) {
                    free(mine.remove(r.nextInt(mine.size())));
                }
            }
        }

        /** Frees, resizes or checks one of the relocatable entries, or compacts. */
        void ownerStep() {
            Owner owner = run.owner;
            if (owner == null) {
                return;
            }
            if (r.nextInt(4) == 0) {
                double occupancy = pick(r, 0, 1, 2) / 4.0 + 0.2;
                long budget = pick(r, 0L, PAGE, run.chunk, Long.MAX_VALUE);
                note("compact(" + occupancy + ", " + budget + ")");
                CompactionStats stats = run.pool.compact(occupancy, budget);
                note("  " + stats);
                return;
            }
            owner.lock.lock();
            try {
                if (owner.entries.isEmpty()) {
                    return;
                }
                int i = r.nextInt(owner.entries.size());
                Live live = owner.entries.get(i);
                switch (r.nextInt(3)) {
                    case 0 -> {
                        owner.entries.remove(i);
                        free(live);
                    }
                    case 1 -> resize(live);
                    default -> {
                        String broken = checkStamp(live);
                        if (broken != null) {
                            throw failure(broken, null);
                        }
                    }
                }
            } finally {
                owner.lock.unlock();
            }
        }

        void allocate(Path again, int againSize) {
            Path path = again != null ? again : Path.values()[r.nextInt(Path.values().length)];
            if ((path == Path.RELOCATABLE || path == Path.RELOCATABLE_SLICE) && run.owner == null) {
                path = Path.CATEGORY;
            }
            Category category = switch (path) {
                case ALLOCATE -> run.pool.defaultCategory();
                case SEQUENTIAL -> run.sequential.category();
                case BLOCK -> run.blocks.category();
                case RELOCATABLE, RELOCATABLE_SLICE -> run.relocatableSlices.category();
                default -> r.nextBoolean() ? run.q : pick3(run.pool.defaultCategory(), run.p);
            };
            int size = again != null ? againSize : run.randomSize(r);
            if (r.nextInt(200) == 0) {
                size = pick(r, -1, MAX_REQUEST + 1, Integer.MAX_VALUE, Integer.MIN_VALUE);
            }
            if (!run.affordable(size, category)) {
                size = r.nextInt(4 * PAGE);
            }
            if (path == Path.BLOCK && size > 4 * run.chunk) {
                size = 1 + r.nextInt(4 * run.chunk); // a payload of many blocks: keep it within reason
            }
            boolean valid = size >= 0 && size <= MAX_REQUEST;
            if (path == Path.SEQUENTIAL) {
                valid = size >= 1 && size <= run.sequential.maxRequest();
            } else if (path == Path.RELOCATABLE_SLICE) {
                valid = size >= 1 && size <= run.relocatableSlices.maxRequest();
            } else if (path == Path.BLOCK) {
                valid = size >= 1;
            }
            String step = path + " " + category.name() + " " + size;
            note(step);
            long committedBefore = run.pool.committedBytes();
            List<Allocation> made = new ArrayList<>();
            try {
                boolean ok;
                switch (path) {
                    case STASHED -> {
                        Allocation a = run.pool.general.allocateStashed(category, size, r.nextBoolean());
                        ok = a != null;
                        if (ok) {
                            made.add(a);
                        }
                    }
                    case BLOCK -> {
                        List<Allocation> parts = r.nextBoolean() ? run.blocks.allocate(size) : run.blocks.tryAllocate(size);
                        ok = parts != null;
                        if (ok) {
                            made.addAll(parts);
                        }
                    }
                    default -> { // the paths that fill a holder of the caller's
                        Allocation a = new Allocation();
                        ok = switch (path) {
                            case ALLOCATE -> run.pool.allocate(size, a);
                            case CATEGORY, RELOCATABLE -> run.pool.allocate(category, size, a);
                            case TRY -> run.pool.tryAllocate(category, size, a, r.nextBoolean());
                            case SEQUENTIAL -> r.nextBoolean() ? run.sequential.allocate(size, a) : run.sequential.tryAllocate(size, a);
                            case RELOCATABLE_SLICE -> run.relocatableSlices.allocate(size, a);
                            default -> throw new AssertionError(path);
                        };
                        made.add(a);
                    }
                }
                if (!valid) {
                    throw failure(step + ": a request out of range was served", null);
                }
                if (!ok) {
                    for (Allocation a : made) {
                        if (a.isLive()) {
                            throw failure(step + ": refused, but the holder is live", null);
                        }
                    }
                    note("  refused");
                    if (run.oneThread && !category.tracked) { // no quota: it was the ceiling
                        checkCeilingRefusal(path, size, committedBefore, null);
                    }
                    return;
                }
                long total = 0;
                for (Allocation a : made) {
                    int requested = a.requestedBytes();
                    total += requested;
                    String wrong = run.checkAllocation(a, path == Path.BLOCK ? requested : size, path);
                    if (wrong != null) {
                        throw failure(step + ": " + wrong, null);
                    }
                    Live live = new Live(a, path, run.stamps.getAndIncrement());
                    String overlap = run.model.add(live);
                    if (overlap != null) {
                        throw failure(step + ": " + overlap, null);
                    }
                    writeStamp(live);
                    if (path == Path.RELOCATABLE || path == Path.RELOCATABLE_SLICE) {
                        run.owner.lock.lock();
                        try {
                            run.owner.entries.add(live);
                        } finally {
                            run.owner.lock.unlock();
                        }
                    } else {
                        mine.add(live);
                    }
                    note("  -> " + live);
                }
                if (path == Path.BLOCK && total != size) {
                    throw failure(step + ": the parts hold " + total + " bytes", null);
                }
            } catch (IllegalArgumentException e) {
                if (valid) {
                    throw failure(step + ": a valid request failed", e);
                }
                note("  refused as out of range");
            } catch (MemoryLimitException e) {
                note("  " + e.getMessage());
                if (!valid) {
                    throw failure(step + ": out of range, but refused at a limit", e);
                }
                if (e.kind() == MemoryLimitException.Kind.CEILING && run.ceiling == Long.MAX_VALUE) {
                    throw failure(step + ": refused at a ceiling the pool does not have", e);
                }
                if (e.kind() == MemoryLimitException.Kind.QUOTA && !category.tracked) {
                    throw failure(step + ": refused at a quota its category does not have", e);
                }
                for (Allocation a : made) {
                    if (a.isLive()) {
                        throw failure(step + ": refused, but the holder is live", e);
                    }
                }
                if (run.oneThread && e.kind() == MemoryLimitException.Kind.CEILING) {
                    checkCeilingRefusal(path, size, committedBefore, e);
                }
            } catch (AssertionError e) {
                throw e;
            } catch (RuntimeException | Error e) {
                throw failure(step + ": unexpected " + e, e);
            }
        }

        /**
         * On one thread, a refusal at the ceiling must mean the smallest region
         * the request could take does not fit under it, once everything idle went back.
         */
        private void checkCeilingRefusal(Path path, int size, long committedBefore, MemoryLimitException e) {
            long least;
            if (path == Path.BLOCK) {
                return; // a payload of many parts: how much it needs depends on the blocks free
            } else if ((path == Path.SEQUENTIAL || path == Path.RELOCATABLE_SLICE) && size <= run.chunk / 4) {
                least = run.chunk; // a slice: a whole chunk to carve it from
            } else if (size > run.dedicatedAbove) {
                least = run.sizes.pageRound(size);
            } else {
                int index = SizeClasses.indexOf(Math.max(1, size));
                int runPages = run.sizes.isSmall(index) ? run.sizes.subpageRunPages(index)
                        : (size > run.fittedAbove ? run.sizes.pageRound(size) : run.sizes.size(index)) / PAGE;
                long chunkSize = run.fuzzed.config.firstChunkSize();
                while (chunkSize < (long) runPages * PAGE) {
                    chunkSize *= 2;
                }
                least = Math.min(chunkSize, run.chunk);
            }
            long committed = run.pool.committedBytes();
            long reserve = run.owner != null && run.chunk <= run.ceiling / 4 ? run.chunk : 0; // kept for compactions
            if (committed + least <= run.ceiling - reserve) {
                throw failure("a request of " + size + " was refused at the ceiling " + run.ceiling + " with "
                        + committed + " bytes committed (" + committedBefore + " before), though " + least
                        + " bytes would do", e);
            }
        }

        private Category pick3(Category a, Category b) {
            return r.nextBoolean() ? a : b;
        }

        void free(Live live) {
            note("free " + live);
            if (live.path != Path.BLOCK) {
                lastFreedPath = live.path;
                lastFreedSize = live.requested;
            }
            String broken = checkStamp(live);
            if (broken != null) {
                throw failure(broken, null);
            }
            run.model.remove(live);
            try {
                run.pool.free(live.allocation);
            } catch (RuntimeException | Error e) {
                throw failure("free of " + live + ": unexpected " + e, e);
            }
            if (live.allocation.isLive()) {
                throw failure("a freed holder is still live: " + live, null);
            }
        }

        void resize(Live live) {
            int now = live.requested;
            int to = switch (r.nextInt(6)) {
                case 0 -> now + 1;
                case 1 -> Math.max(0, now - 1);
                case 2 -> live.reserved;
                case 3 -> live.reserved + 1;
                case 4 -> r.nextInt(live.reserved + 1);
                default -> run.randomSize(r);
            };
            if (r.nextInt(50) == 0) {
                to = -1;
            }
            note("resize " + live + " to " + to);
            boolean done;
            try {
                done = run.pool.resizeInPlace(live.allocation, to);
            } catch (RuntimeException | Error e) {
                throw failure("resize of " + live + " to " + to + ": unexpected " + e, e);
            }
            if (!done) {
                if (live.allocation.requestedBytes() != now || live.allocation.reservedBytes() != live.reserved) {
                    throw failure("a refused resize changed " + live, null);
                }
                return;
            }
            if (to < 0 || to > live.reserved || live.allocation.requestedBytes() != to
                    || live.allocation.reservedBytes() != live.reserved) {
                throw failure("resize to " + to + " made " + live.allocation, null);
            }
            if (live.allocation.releaser == null && live.path != Path.BLOCK) {
                if (live.dedicated ? to <= run.dedicatedAbove || !DedicatedRegions.fits(live.reserved, run.sizes.pageRound(to))
                        : run.pool.reservedSizeFor(to) != live.reserved) {
                    throw failure("resized in place to " + to + " though that reserves otherwise: " + live, null);
                }
            }
            live.requested = to;
        }
    }

    // ---- the tests ----------------------------------------------------------------------------

    @Test
    void fuzzedConfigurationsOnOneThread() {
        SplittableRandom seeds = new SplittableRandom(SEED_BASE);
        for (int i = 0; i < CONFIGS; i++) {
            long seed = seeds.nextLong();
            Fuzzed fuzzed = randomConfig(new SplittableRandom(seed), false);
            if (ONLY >= 0 && i != ONLY) {
                continue;
            }
            long started = System.nanoTime();
            Run run = new Run(fuzzed, true);
            Worker worker = new Worker(run, seed, false);
            try {
                for (int s = 0; s < SINGLE_STEPS; s++) {
                    worker.step();
                    if (s % 8 == 0) {
                        run.checkQuiet("config " + i + " step " + s);
                    }
                }
                finish(run, List.of(worker), "config " + i);
                if (TIMING) {
                    System.out.println("config " + i + ": " + (System.nanoTime() - started) / 1_000_000 + " ms " + fuzzed.description);
                }
            } catch (AssertionError e) {
                throw worker.failure("config " + i + " (seed " + seed + "): " + e.getMessage(), e);
            } finally {
                run.pool.close();
            }
        }
    }

    @Test
    void fuzzedConfigurationsOnTwoThreads() throws Exception {
        SplittableRandom seeds = new SplittableRandom(SEED_BASE + 1);
        for (int i = 0; i < CONFIGS / 2; i++) {
            long seed = seeds.nextLong();
            if (ONLY >= 0 && i != ONLY) {
                continue;
            }
            Fuzzed fuzzed = randomConfig(new SplittableRandom(seed), true);
            Run run = new Run(fuzzed, false);
            Worker[] workers = {new Worker(run, seed + 1, true), new Worker(run, seed + 2, true)};
            if (i % 2 == 1) {
                workers[0].role = 1;
                workers[1].role = 2;
            }
            AtomicReference<Throwable> failed = new AtomicReference<>();
            CyclicBarrier barrier = new CyclicBarrier(3);
            Thread[] threads = new Thread[2];
            for (int w = 0; w < 2; w++) {
                Worker worker = workers[w];
                threads[w] = new Thread(() -> {
                    try {
                        for (int batch = 0; batch < BATCHES; batch++) {
                            for (int s = 0; s < BATCH_STEPS && failed.get() == null; s++) {
                                worker.step();
                            }
                            barrier.await(20, TimeUnit.SECONDS);
                            barrier.await(20, TimeUnit.SECONDS); // the checks run in between
                        }
                    } catch (Throwable t) {
                        failed.compareAndSet(null, t);
                        barrier.reset();
                    }
                }, "fuzz-" + w);
                threads[w].start();
            }
            try {
                for (int batch = 0; batch < BATCHES; batch++) {
                    try {
                        barrier.await(20, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        break;
                    }
                    if (failed.get() == null) {
                        try {
                            run.checkQuiet("config " + i + " batch " + batch);
                        } catch (AssertionError e) {
                            failed.compareAndSet(null, workers[0].failure("config " + i + " (seed " + seed + "): "
                                    + e.getMessage() + "\n  other thread: " + String.join("\n    ", workers[1].log), e));
                        }
                    }
                    try {
                        barrier.await(20, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        break;
                    }
                }
                for (Thread t : threads) {
                    t.join(30_000);
                }
                if (failed.get() != null) {
                    Throwable t = failed.get();
                    throw t instanceof AssertionError a ? a : new AssertionError("config " + i + " (seed " + seed + ")", t);
                }
                Worker cleaner = new Worker(run, seed + 3, false);
                for (Worker w : workers) {
                    cleaner.mine.addAll(w.mine);
                }
                for (Live live; (live = run.handedOver.poll()) != null; ) {
                    cleaner.mine.add(live);
                }
                try {
                    finish(run, List.of(cleaner), "config " + i);
                } catch (AssertionError e) {
                    throw workers[0].failure("config " + i + " (seed " + seed + "): " + e.getMessage()
                            + "\n  other thread: " + String.join("\n    ", workers[1].log), e);
                }
            } finally {
                run.pool.close();
            }
        }
    }

    /** Frees everything, trims and closes: nothing live, reserved or committed is left, and the source holds nothing. */
    private static void finish(Run run, List<Worker> workers, String what) {
        if (run.owner != null) {
            run.owner.lock.lock();
            try {
                workers.get(0).mine.addAll(run.owner.entries);
                run.owner.entries.clear();
            } finally {
                run.owner.lock.unlock();
            }
        }
        if (workers.get(0).r.nextInt(4) == 0) {
            closeFirst(run, workers, what);
            return;
        }
        for (Worker w : workers) {
            Collections.shuffle(w.mine, new java.util.Random(w.r.nextLong()));
            while (!w.mine.isEmpty()) {
                w.free(w.mine.remove(w.mine.size() - 1));
            }
        }
        for (Live live; (live = run.handedOver.poll()) != null; ) {
            workers.get(0).free(live);
        }
        run.checkQuiet(what + " all freed");
        // two decays past the decay time (what the first finds newly idle, the second gives back): minIdleChunks stay
        Duration past = run.fuzzed.config.idleChunkDecay().plusSeconds(1);
        for (int i = 0; i < 2; i++) {
            run.fuzzed.time.advance(past);
            run.fuzzed.time.runScheduled();
        }
        int idleAfterDecay = 0;
        for (ArenaSnapshot arena : run.pool.stats().arenaSnapshots()) {
            idleAfterDecay += arena.idleChunks();
        }
        assertTrue(idleAfterDecay <= run.fuzzed.config.minIdleChunks(), what + ": " + idleAfterDecay
                + " idle chunks after the decay, minIdleChunks " + run.fuzzed.config.minIdleChunks());
        run.pool.trim();
        run.checkQuiet(what + " trimmed");
        PoolStats stats = run.pool.stats();
        assertEquals(0, stats.liveAllocations(), what);
        int minIdle = run.fuzzed.config.minIdleChunks();
        if (minIdle == 0 && run.fuzzed.source != null) {
            assertEquals(0, run.pool.committedBytes(), what + ": committed after everything was freed and trimmed: "
                    + stats.summary());
        }
        run.pool.close();
        assertEquals(0, run.pool.committedBytes(), what + ": committed after close");
        assertEquals(0, run.pool.requestedBytes(), what + ": requested after close");
        assertEquals(0, run.pool.reservedBytes(), what + ": reserved after close");
        if (run.fuzzed.source != null) {
            assertEquals(0, run.fuzzed.source.heldBytes.get(), what + ": the source still holds regions");
            assertTrue(run.fuzzed.source.errors.isEmpty(), what + ": " + run.fuzzed.source.errors);
        }
    }

    /**
     * Closes with buffers live, then frees them: new allocations are refused,
     * each free gives its memory back, and the last leaves nothing committed.
     */
    private static void closeFirst(Run run, List<Worker> workers, String what) {
        run.pool.close();
        try {
            run.pool.allocate(16, new Allocation());
            fail(what + ": a closed pool allocated");
        } catch (IllegalStateException expected) {
            // refused
        }
        for (Worker w : workers) {
            Collections.shuffle(w.mine, new java.util.Random(w.r.nextLong()));
            while (!w.mine.isEmpty()) {
                w.free(w.mine.remove(w.mine.size() - 1));
            }
        }
        for (Live live; (live = run.handedOver.poll()) != null; ) {
            workers.get(0).free(live);
        }
        assertEquals(0, run.pool.requestedBytes(), what + ": requested after close and the last free");
        assertEquals(0, run.pool.reservedBytes(), what + ": reserved after close and the last free");
        assertEquals(0, run.pool.committedBytes(), what + ": committed after close and the last free: "
                + run.pool.stats().summary());
        if (run.fuzzed.source != null) {
            assertEquals(0, run.fuzzed.source.heldBytes.get(), what + ": the source still holds regions");
            assertTrue(run.fuzzed.source.errors.isEmpty(), what + ": " + run.fuzzed.source.errors);
        }
    }

    // ---- what build() must refuse -------------------------------------------------------------

    /** A setting made out of range, alone or against the others: the name the refusal must give, and how. */
    private record Bad(String setting, java.util.function.Consumer<PoolConfig.Builder> apply) {
    }

    private static List<Bad> badSettings(int chunk) {
        List<Bad> bad = new ArrayList<>();
        for (int v : new int[] {Integer.MIN_VALUE, -1, 0, PAGE, PoolConfig.MIN_CHUNK_SIZE - 1, 3 * PoolConfig.MIN_CHUNK_SIZE,
                2 * PoolConfig.MAX_CHUNK_SIZE, Integer.MAX_VALUE}) {
            bad.add(new Bad("chunkSize", b -> b.chunkSize(v)));
            bad.add(new Bad("firstChunkSize", b -> b.firstChunkSize(v)));
        }
        bad.add(new Bad("firstChunkSize", b -> b.chunkSize(chunk).firstChunkSize(Math.min(PoolConfig.MAX_CHUNK_SIZE, 2 * chunk))
                .chunkSize(Math.min(PoolConfig.MAX_CHUNK_SIZE, 2 * chunk) / 2)));
        for (int v : new int[] {Integer.MIN_VALUE, -1, 0, 1025, Integer.MAX_VALUE}) {
            bad.add(new Bad("arenas", b -> b.arenas(v)));
        }
        for (long v : new long[] {Long.MIN_VALUE, -1}) {
            bad.add(new Bad("arenaSpreadBytes", b -> b.arenaSpreadBytes(v)));
            bad.add(new Bad("compactionBytesPerSecond", b -> b.compactionBytesPerSecond(v)));
            bad.add(new Bad("maxMemory", b -> b.maxMemory(v)));
            bad.add(new Bad("quota", b -> b.quota("q", v)));
        }
        bad.add(new Bad("maxMemory", b -> b.maxMemory(0)));
        bad.add(new Bad("maxMemory", b -> b.chunkSize(chunk).maxMemory(chunk - 1L)));
        bad.add(new Bad("maxMemory", b -> b.maxMemory(PoolConfig.MIN_CHUNK_SIZE).chunkSize(2 * PoolConfig.MIN_CHUNK_SIZE)));
        for (int v : new int[] {Integer.MIN_VALUE, -1}) {
            bad.add(new Bad("maxCachedSize", b -> b.maxCachedSize(v)));
            bad.add(new Bad("maxCachedBytesPerClass", b -> b.maxCachedBytesPerClass(v)));
            bad.add(new Bad("maxCachedEntriesPerClass", b -> b.maxCachedEntriesPerClass(v)));
            bad.add(new Bad("maxIdleChunksPerArena", b -> b.maxIdleChunksPerArena(v)));
            bad.add(new Bad("maxIdleBlocks", b -> b.maxIdleBlocks(v)));
            bad.add(new Bad("minIdleChunks", b -> b.minIdleChunks(v)));
        }
        for (int v : new int[] {Integer.MIN_VALUE, -1, 0, 1, PAGE - 1}) {
            bad.add(new Bad("dedicatedAbove", b -> b.dedicatedAbove(v)));
        }
        bad.add(new Bad("dedicatedAbove", b -> b.chunkSize(chunk).dedicatedAbove(chunk + 1)));
        bad.add(new Bad("dedicatedAbove", b -> b.dedicatedAbove(PoolConfig.MIN_CHUNK_SIZE + 1).chunkSize(PoolConfig.MIN_CHUNK_SIZE)));
        for (int v : new int[] {Integer.MIN_VALUE, 0, 1, PoolConfig.Builder.MAX_REMOTE_FREE_QUEUE_CAPACITY + 1}) {
            bad.add(new Bad("remoteFreeQueueCapacity", b -> b.remoteFreeQueueCapacity(v)));
        }
        bad.add(new Bad("waitTimeout", b -> b.waitTimeout(Duration.ofNanos(-1))));
        bad.add(new Bad("idleChunkDecay", b -> b.idleChunkDecay(Duration.ofDays(-1))));
        bad.add(new Bad("category name", b -> b.quota("No Such Name", 1)));
        bad.add(new Bad("category name", b -> b.categoryPolicy("", LimitPolicy.FAIL)));
        bad.add(new Bad("quotas", b -> {
            for (int i = 0; i < Category.MAX_CATEGORIES; i++) {
                b.quota("c" + i, i);
            }
        }));
        return bad;
    }

    /** The same, through the system properties: the property's name and a value out of range. */
    private static final String[][] BAD_PROPERTIES = {
        {"chunkSize", "-1"}, {"chunkSize", "0"}, {"chunkSize", "65535"}, {"chunkSize", "536870912"}, {"chunkSize", "4 MiB"},
        {"chunkSize", "4294967296"}, {"firstChunkSize", "-1"}, {"firstChunkSize", "1000"}, {"arenas", "0"},
        {"arenas", "-1"}, {"arenas", "1025"}, {"arenaSpreadBytes", "-1"}, {"compactionBytesPerSecond", "-1"},
        {"maxCachedSize", "-1"}, {"dedicatedAbove", "-1"}, {"dedicatedAbove", "0"}, {"dedicatedAbove", "8191"},
        {"dedicatedAbove", "2147483647"}, {"maxCachedBytesPerClass", "-1"}, {"maxCachedEntriesPerClass", "-1"},
        {"maxIdleChunksPerArena", "-1"}, {"maxIdleBlocks", "-1"}, {"maxMemory", "-1"}, {"maxMemory", "0"},
        {"maxMemory", "65535"}, {"maxMemory", "-9223372036854775808"}, {"limitPolicy", "NEVER"},
        {"waitTimeoutMillis", "-1"}, {"idleChunkDecayMillis", "-1"}, {"minIdleChunks", "-1"},
    };

    /**
     * Every setting out of range, alone or against the others (after a
     * random valid configuration), and every property out of range, is
     * refused, by its builder method or by build(), with a message naming
     * the setting; and the extremes allowed build.
     */
    @Test
    void whatIsOutOfRangeIsRefusedNamingTheSetting() {
        SplittableRandom r = new SplittableRandom(SEED_BASE + 2);
        for (int round = 0; round < 4; round++) {
            int chunk = pick(r, PoolConfig.MIN_CHUNK_SIZE, 1 << 20, PoolConfig.MAX_CHUNK_SIZE);
            for (Bad bad : badSettings(chunk)) {
                PoolConfig.Builder b = randomConfigBuilder(r);
                IllegalArgumentException e = null;
                try {
                    bad.apply().accept(b);
                    b.build();
                } catch (IllegalArgumentException refused) {
                    e = refused;
                }
                assertTrue(e != null, bad.setting() + ": accepted");
                assertTrue(e.getMessage().contains(bad.setting()), bad.setting() + ": " + e.getMessage());
            }
        }
        for (String[] bad : BAD_PROPERTIES) {
            String name = "slabwise." + bad[0];
            String before = System.getProperty(name);
            System.setProperty(name, bad[1]);
            try {
                IllegalArgumentException e = null;
                try {
                    PoolConfig.builder().build();
                } catch (IllegalArgumentException refused) {
                    e = refused;
                }
                assertTrue(e != null, "-D" + name + "=" + bad[1] + ": accepted");
                String setting = bad[0].replace("Millis", "");
                assertTrue(e.getMessage().contains(setting), "-D" + name + "=" + bad[1] + ": " + e.getMessage());
            } finally {
                if (before == null) {
                    System.clearProperty(name);
                } else {
                    System.setProperty(name, before);
                }
            }
        }
        // the extremes allowed
        PoolConfig.builder().chunkSize(PoolConfig.MIN_CHUNK_SIZE).firstChunkSize(PoolConfig.MIN_CHUNK_SIZE)
                .dedicatedAbove(PAGE).arenas(1).maxMemory(PoolConfig.MIN_CHUNK_SIZE).remoteFreeQueueCapacity(2)
                .waitTimeout(Duration.ZERO).idleChunkDecay(Duration.ZERO).quota("q", 0).build();
        PoolConfig.builder().chunkSize(PoolConfig.MAX_CHUNK_SIZE).firstChunkSize(PoolConfig.MAX_CHUNK_SIZE)
                .dedicatedAbove(PoolConfig.MAX_CHUNK_SIZE).arenas(1024).maxMemory(Long.MAX_VALUE)
                .remoteFreeQueueCapacity(PoolConfig.Builder.MAX_REMOTE_FREE_QUEUE_CAPACITY)
                .maxCachedSize(Integer.MAX_VALUE).maxCachedBytesPerClass(Integer.MAX_VALUE)
                .maxCachedEntriesPerClass(Integer.MAX_VALUE).maxIdleChunksPerArena(Integer.MAX_VALUE)
                .minIdleChunks(Integer.MAX_VALUE).arenaSpreadBytes(Long.MAX_VALUE).compactionBytesPerSecond(Long.MAX_VALUE)
                .waitTimeout(Duration.ofSeconds(Long.MAX_VALUE)).idleChunkDecay(Duration.ofSeconds(Long.MAX_VALUE))
                .quota("q", Long.MAX_VALUE).build();
    }

    /** A builder of a random valid configuration, for the refusals to start from. */
    private static PoolConfig.Builder randomConfigBuilder(SplittableRandom r) {
        PoolConfig.Builder b = PoolConfig.builder();
        if (r.nextBoolean()) {
            b.chunkSize(pick(r, PoolConfig.MIN_CHUNK_SIZE, 1 << 20));
        }
        if (r.nextBoolean()) {
            b.arenas(pick(r, 1, 1024)).maxCachedSize(pick(r, 0, Integer.MAX_VALUE)).limitPolicy(LimitPolicy.WAIT);
        }
        if (r.nextBoolean()) {
            b.quota("q", pick(r, 0L, Long.MAX_VALUE)).minIdleChunks(pick(r, 0, Integer.MAX_VALUE));
        }
        return b;
    }

    /**
     * The largest request (the largest int that is a whole number of pages)
     * gets a region of its own and all of its bytes; one byte more is refused
     * as out of range, by the general pool and the sequential allocator alike.
     */
    @Test
    void theLargestRequestIsServedAndOneMoreRefused() {
        TrackingSource source = new TrackingSource();
        PoolConfig config = PoolConfig.builder().chunkSize(PoolConfig.MIN_CHUNK_SIZE).arenas(1).chunkSource(source).build();
        try (MemoryPool pool = new MemoryPool(config)) {
            assertEquals(MAX_REQUEST, pool.maxRequest());
            assertEquals(MAX_REQUEST, pool.reservedSizeFor(MAX_REQUEST - 1));
            Allocation a = new Allocation();
            assertTrue(pool.allocate(MAX_REQUEST - 1, a));
            assertEquals(MAX_REQUEST, a.reservedBytes());
            ByteBuffer memory = a.chunkMemory();
            memory.put(a.offset(), (byte) 1).put(a.offset() + MAX_REQUEST - 1, (byte) 2);
            assertTrue(pool.resizeInPlace(a, MAX_REQUEST));
            assertEquals(MAX_REQUEST, pool.requestedBytes());
            assertEquals(2, memory.get(a.offset() + MAX_REQUEST - 1));
            for (int tooLarge : new int[] {MAX_REQUEST + 1, Integer.MAX_VALUE}) {
                Allocation b = new Allocation();
                org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> pool.allocate(tooLarge, b));
                org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                        () -> pool.sequential("log").allocate(tooLarge, b));
                assertTrue(!b.isLive());
                assertTrue(!pool.resizeInPlace(a, tooLarge));
            }
            pool.free(a);
            pool.trim();
            assertEquals(0, pool.committedBytes());
        }
        assertEquals(0, source.heldBytes.get());
        assertTrue(source.errors.isEmpty(), source.errors.toString());
    }
}
