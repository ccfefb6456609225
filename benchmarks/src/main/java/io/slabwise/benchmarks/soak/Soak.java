package io.slabwise.benchmarks.soak;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import io.slabwise.CategoryStats;
import io.slabwise.ChunkSource;
import io.slabwise.CompactionStats;
import io.slabwise.PoolStats;
import io.slabwise.benchmarks.CommandLine;
import io.slabwise.netty.SlabwiseAllocator;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * A soak test: one Slabwise pool at its ceiling, used for a chosen time by
 * everything that uses a pool at once, with its invariants checked at every
 * period and at the end, where everything is released and the pool closed.
 *
 * <pre>
 *                        ┌─ log cache (sequential allocator, relocator) ── 1 writer/reader
 *                        ├─ block cache (block pool, relocator) ─────────── 1 loader/reader
 *  one pool ── ceiling ──┼─ HTTP server (network) ◀─loopback─▶ clients (http_client) ── 1 worker per connection
 *  (refusing source,     ├─ platform threads started and ended in batches (platform_threads)
 *   background           ├─ virtual threads, the same (virtual_threads; Java 21+)
 *   compaction)          └─ (beside it: small pools opened and closed on the same source)
 *
 *  every --check-seconds: pause every worker (PauseGate), drain the event loops, hold the caches' locks,
 *                         read stats(), check, resume; print a line and a CSV row
 * </pre>
 *
 * <h2>What is checked</h2>
 * <ul>
 *   <li>requested &lt;= reserved &lt;= committed &lt;= ceiling;</li>
 *   <li>each category's requested bytes and live buffers equal the soak's own
 *       {@link Tally} of what it holds (exact: the workers are paused, the
 *       event loops drained, and the caches' locks held, so no compaction
 *       moves anything while the pool is read); a category the soak holds
 *       nothing in must be empty;</li>
 *   <li>Netty's leak detector (a {@link LeakRecorder}, paranoid by default)
 *       reported nothing;</li>
 *   <li>the process's resident memory less the JVM's own ({@link NativeMemory})
 *       is at most committed + a margin (64 MiB);</li>
 *   <li>no error that no refusal explains, on any thread; every extra pool
 *       held nothing once closed;</li>
 *   <li>at the end, everything released: every category empty, then the pool
 *       closed and nothing committed.</li>
 * </ul>
 * A violated invariant is printed and the program exits with status 1 (2 for
 * a bad command line). {@code --inject-miscount} counts one byte and one
 * buffer too many in the log cache's tally before the first check, to show
 * that a miscount fails the run.
 *
 * <pre>
 * java -Xmx1g -XX:NativeMemoryTracking=summary -cp benchmarks/target/benchmarks.jar \
 *     io.slabwise.benchmarks.soak.Soak --minutes 10 --csv soak.csv
 * </pre>
 *
 * {@code benchmarks/run-soak.sh} runs it with those options; its README lists every option.
 */
public final class Soak {

    private static final Set<String> OPTIONS = Set.of("minutes", "check-seconds", "ceiling-mib", "cache-fraction",
            "cache-mib-per-second", "compaction-mib-per-second", "refuse-one-in", "connections", "platform-threads",
            "virtual-threads", "extra-pool-mib", "leak-level", "rss-margin-mib", "seed", "csv", "port");
    private static final Set<String> FLAGS = Set.of("inject-miscount", "help");
    private static final String USAGE = "usage: Soak [--minutes 10] [--check-seconds 60] [--ceiling-mib 256]"
            + " [--cache-fraction 0.9] [--cache-mib-per-second 32] [--compaction-mib-per-second 16]"
            + " [--refuse-one-in 50] [--connections 4] [--platform-threads 16] [--virtual-threads 200]"
            + " [--extra-pool-mib 8] [--leak-level paranoid] [--rss-margin-mib 64] [--seed 1] [--csv soak.csv]"
            + " [--port 0] [--inject-miscount]";
    private static final String CSV_HEADER = "seconds,minute,requested,reserved,committed,ceiling,rss,rssBeyondJvm,"
            + "rssLimit,heapUsed,requestsPerSecond,httpFailures,refusals,sourceRefusals,compactions,"
            + "compactionBytesFreed,compactionBytesMoved,logCacheBytes,blockCacheBytes,platformThreads,virtualThreads,"
            + "extraPools,leaks,liveThreads,pauseMillis";
    /** The longest the checker waits for every worker to stop. */
    private static final long PAUSE_TIMEOUT_MILLIS = 60_000;
    /** The longest the end waits for every worker to finish. */
    private static final long JOIN_TIMEOUT_MILLIS = 60_000;
    private static final String LOG_CACHE = "log_cache";
    private static final String BLOCK_CACHE = "block_cache";
    private static final String NETWORK = "network";
    private static final String HTTP_CLIENT = "http_client";
    private static final String PLATFORM_THREADS = "platform_threads";
    private static final String VIRTUAL_THREADS = "virtual_threads";
    private static final int LOG_MIN = 64;
    private static final int LOG_MAX = 256 << 10;
    private static final int BLOCK_MIN = 64 << 10;
    private static final int BLOCK_MAX = 4 << 20;
    private static final int HTTP_MIN = 256;
    private static final int HTTP_MAX = 64 << 10;
    private static final long MIB = 1 << 20;

    /** The settings of one run, from the command line. */
    private record Settings(double minutes, int checkSeconds, long ceiling, double cacheFraction, long cacheBytesPerSecond,
                            long compactionBytesPerSecond, int refuseOneIn, int connections, int platformThreads,
                            int virtualThreads, long extraPoolBytes, ResourceLeakDetector.Level leakLevel, long rssMargin,
                            long seed, Path csv, int port, boolean injectMiscount) {

        static Settings parse(Map<String, String> o) {
            Settings s = new Settings(positive(o, "minutes", 10), (int) positive(o, "check-seconds", 60),
                    (long) (positive(o, "ceiling-mib", 256) * MIB), fraction(o, "cache-fraction", 0.9),
                    (long) (positive(o, "cache-mib-per-second", 32) * MIB),
                    (long) (atLeastZero(o, "compaction-mib-per-second", 16) * MIB),
                    (int) atLeastZero(o, "refuse-one-in", 50), (int) positive(o, "connections", 4),
                    (int) atLeastZero(o, "platform-threads", 16), (int) atLeastZero(o, "virtual-threads", 200),
                    (long) (positive(o, "extra-pool-mib", 8) * MIB),
                    ResourceLeakDetector.Level.valueOf(o.getOrDefault("leak-level", "paranoid").toUpperCase(Locale.ROOT)),
                    (long) (atLeastZero(o, "rss-margin-mib", 64) * MIB), Long.parseLong(o.getOrDefault("seed", "1")),
                    Path.of(o.getOrDefault("csv", "soak.csv")), (int) atLeastZero(o, "port", 0),
                    o.containsKey("inject-miscount"));
            if (s.ceiling < 16 * MIB) {
                throw new IllegalArgumentException("--ceiling-mib must be at least 16: the caches need room for their largest"
                        + " entries");
            }
            return s;
        }

        private static double positive(Map<String, String> o, String name, double otherwise) {
            double value = number(o, name, otherwise);
            if (!(value > 0)) {
                throw new IllegalArgumentException("--" + name + " must be positive: " + value);
            }
            return value;
        }

        private static double atLeastZero(Map<String, String> o, String name, double otherwise) {
            double value = number(o, name, otherwise);
            if (!(value >= 0)) {
                throw new IllegalArgumentException("--" + name + " must not be negative: " + value);
            }
            return value;
        }

        private static double fraction(Map<String, String> o, String name, double otherwise) {
            double value = number(o, name, otherwise);
            if (!(value > 0 && value < 1)) {
                throw new IllegalArgumentException("--" + name + " must be between 0 and 1: " + value);
            }
            return value;
        }

        private static double number(Map<String, String> o, String name, double otherwise) {
            String text = o.get(name);
            try {
                return text == null ? otherwise : Double.parseDouble(text);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--" + name + " needs a number: " + text, e);
            }
        }
    }

    /** One worker: a step, repeated between checkpoints until the end. */
    @FunctionalInterface
    private interface Step {
        void run() throws Exception;
    }

    private final Settings settings;
    private final PauseGate gate = new PauseGate();
    /** What went wrong since the last check, on any thread; the check prints them and fails. */
    private final List<String> violations = new ArrayList<>();
    private final List<Thread> workers = new ArrayList<>();
    private volatile boolean stopping;

    private NativeMemory nativeMemory;
    private RefusingChunkSource source;
    private SlabwiseAllocator allocator;
    private LogCache logCache;
    private BlockCache blockCache;
    private HttpLoad http;
    private ThreadChurn platformChurn;
    private ThreadChurn virtualChurn;
    private ExtraPools extraPools;
    private final Tally networkTally = new Tally(NETWORK);
    private final Tally clientTally = new Tally(HTTP_CLIENT);
    private PrintWriter csv;

    private long startNanos;
    private long lastCheckNanos;
    private long lastResponses;
    /** The resident-memory limit the last check applied (committed then + the margin), for its CSV row. */
    private long rssLimit;

    private Soak(Settings settings) {
        this.settings = settings;
    }

    /**
     * Runs the soak; exits with status 0 when every check passed, 1 at the
     * first violated invariant, 2 for a bad command line.
     *
     * @param args the options of {@code --help}
     */
    public static void main(String[] args) throws Exception {
        Settings settings;
        try {
            Map<String, String> options = CommandLine.parse(args, OPTIONS, FLAGS);
            if (options.containsKey("help")) {
                System.out.println(USAGE);
                return;
            }
            settings = Settings.parse(options);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        }
        System.exit(new Soak(settings).run());
    }

    /** Records a violated invariant; the next check prints it and fails. */
    private void violation(String what) {
        synchronized (violations) {
            violations.add(what);
        }
    }

    /** Records an error that no refusal explains, with where it came from. */
    private void unexpected(Throwable error) {
        StringWriter trace = new StringWriter();
        error.printStackTrace(new PrintWriter(trace));
        violation("an unexpected error on thread " + Thread.currentThread().getName() + ": " + trace);
    }

    private int run() throws Exception {
        // before any buffer class loads: Netty makes the buffers' leak detector once, with the factory's settings then
        if (System.getProperty("io.netty.customResourceLeakDetector") == null) {
            System.setProperty("io.netty.customResourceLeakDetector", LeakRecorder.class.getName());
        }
        ResourceLeakDetector.setLevel(settings.leakLevel);
        // the first buffer class to load makes the buffers' detector: make it now, so the check below does not
        // depend on whether anything happened to load one yet (Netty 4.1 with Unsafe loads none by then)
        Unpooled.buffer(1).release();
        nativeMemory = NativeMemory.start();
        ChunkSource preferred = ChunkSource.preferred();
        source = new RefusingChunkSource(preferred, settings.refuseOneIn, settings.seed);
        allocator = SlabwiseAllocator.builder().maxMemory(settings.ceiling).chunkSource(source)
                .compactionBytesPerSecond(settings.compactionBytesPerSecond).build();
        byte[] template = new byte[64 << 10];
        new Random(settings.seed).nextBytes(template);

        long cacheBytes = cacheBound();
        logCache = new LogCache(allocator, allocator.sequential(LOG_CACHE), cacheBytes);
        blockCache = new BlockCache(allocator, allocator.blocks(BLOCK_CACHE), cacheBytes);
        http = new HttpLoad(allocator.forCategory(NETWORK), allocator.forCategory(HTTP_CLIENT), settings.port, template,
                this::unexpected);
        if (!LeakRecorder.installed()) {
            throw new IllegalStateException("Netty's leak detector is not the soak's recorder: io.netty.customResourceLeakDetector"
                    + " is " + System.getProperty("io.netty.customResourceLeakDetector"));
        }
        ThreadFactory platform = Thread::new;
        platformChurn = new ThreadChurn("soak-platform", PLATFORM_THREADS, allocator.forCategory(PLATFORM_THREADS), platform,
                settings.platformThreads, 8, 256, template, settings.seed * 1_000_003, this::unexpected);
        ThreadFactory virtual = ThreadChurn.virtualThreads();
        String virtualNote;
        if (virtual == null) {
            virtualNote = "skipped: virtual threads need Java 21, this is Java " + Runtime.version().feature();
        } else if (settings.virtualThreads == 0) {
            virtualNote = "skipped: --virtual-threads 0";
        } else {
            virtualChurn = new ThreadChurn("soak-virtual", VIRTUAL_THREADS, allocator.forCategory(VIRTUAL_THREADS), virtual,
                    settings.virtualThreads, 4, 1024, template, settings.seed * 2_000_003, this::unexpected);
            virtualNote = settings.virtualThreads + " per batch";
        }
        extraPools = new ExtraPools(source, settings.extraPoolBytes, 64, settings.seed * 3_000_003, template,
                this::violation, this::unexpected);

        System.out.println("soak: " + Instant.now() + ", Java " + Runtime.version() + ", "
                + ManagementFactory.getRuntimeMXBean().getVmName() + ", " + Runtime.getRuntime().availableProcessors()
                + " processors");
        System.out.println("pool: ceiling " + PoolStats.bytes(settings.ceiling) + ", chunk source "
                + preferred.getClass().getSimpleName() + " refusing 1 in " + settings.refuseOneIn + ", compaction "
                + PoolStats.bytes(settings.compactionBytesPerSecond) + "/s, caches " + PoolStats.bytes(cacheBytes)
                + " each at " + PoolStats.bytes(settings.cacheBytesPerSecond) + "/s");
        System.out.println("load: " + settings.connections + " HTTP connections, platform threads " + settings.platformThreads
                + " per batch, virtual threads " + virtualNote + ", extra pools of " + PoolStats.bytes(settings.extraPoolBytes));
        System.out.println("checks every " + settings.checkSeconds + " s for " + settings.minutes + " minutes; leak detection "
                + ResourceLeakDetector.getLevel() + "; resident memory beyond the JVM's own by " + nativeMemory.method()
                + ", at most committed + " + PoolStats.bytes(settings.rssMargin) + "; CSV " + settings.csv
                + (settings.injectMiscount ? "; a miscount is injected before the first check" : ""));
        Files.createDirectories(settings.csv.toAbsolutePath().getParent());
        csv = new PrintWriter(Files.newBufferedWriter(settings.csv, StandardCharsets.UTF_8));
        csv.println(CSV_HEADER);

        startWorkers(template);
        startNanos = System.nanoTime();
        lastCheckNanos = startNanos;
        long endNanos = startNanos + (long) (settings.minutes * 60e9);
        long periodNanos = TimeUnit.SECONDS.toNanos(settings.checkSeconds);
        boolean injected = false;
        for (long next = startNanos + periodNanos; ; next += periodNanos) {
            long wake = Math.min(next, endNanos);
            long sleep = wake - System.nanoTime();
            if (sleep > 0) {
                TimeUnit.NANOSECONDS.sleep(sleep);
            }
            if (settings.injectMiscount && !injected) {
                logCache.tally().add(1, 1); // one byte in one buffer that the soak does not hold
                injected = true;
            }
            if (!check()) {
                return 1;
            }
            if (wake == endNanos) {
                break;
            }
        }
        return finish() ? 0 : 1;
    }

    private void startWorkers(byte[] template) {
        SplittableRandom seeds = new SplittableRandom(settings.seed);
        SplittableRandom logRandom = seeds.split();
        long logStart = System.nanoTime();
        long[] logBytes = {0}; // touched by the worker's thread alone
        worker("soak-log-cache", () -> {
            int size = logUniform(logRandom, LOG_MIN, LOG_MAX);
            logCache.append(size, template);
            logBytes[0] += size; // appended or refused: the rate is of batches offered
            logCache.read(logRandom.nextInt(64));
            pace(logStart, logBytes[0]);
        });
        SplittableRandom blockRandom = seeds.split();
        int keys = (int) Math.max(64, 4 * cacheBound() / logUniformMean(BLOCK_MIN, BLOCK_MAX));
        int[] sizes = new int[keys];
        for (int k = 0; k < keys; k++) {
            sizes[k] = logUniform(blockRandom, BLOCK_MIN, BLOCK_MAX);
        }
        long blockStart = System.nanoTime();
        long[] touched = {0};
        worker("soak-block-cache", () -> {
            double u = blockRandom.nextDouble();
            int key = (int) (keys * u * u); // skewed to the low keys: a hot set that stays cached
            blockCache.getOrLoad(key, sizes[key], template);
            touched[0] += sizes[key]; // a hit or a load: the rate is of payloads asked for
            pace(blockStart, touched[0]);
        });
        for (int c = 0; c < settings.connections; c++) {
            HttpLoad.Connection connection = http.connection(seeds.nextLong(), HTTP_MIN, HTTP_MAX);
            worker("soak-http-" + c, connection::exchange, connection::close);
        }
        if (settings.platformThreads > 0) {
            worker("soak-platform-churn", () -> {
                platformChurn.step();
                Thread.sleep(50);
            });
        }
        if (virtualChurn != null) {
            worker("soak-virtual-churn", () -> {
                virtualChurn.step();
                Thread.sleep(50);
            });
        }
        worker("soak-extra-pools", () -> {
            extraPools.step();
            Thread.sleep(50);
        });
    }

    /** The byte bound of each cache. */
    private long cacheBound() {
        return (long) (settings.ceiling * settings.cacheFraction / 2);
    }

    /** Sleeps while {@code bytes} since {@code start} are ahead of the caches' rate. */
    private void pace(long start, long bytes) throws InterruptedException {
        long due = start + (long) (bytes * 1e9 / settings.cacheBytesPerSecond);
        long ahead = due - System.nanoTime();
        if (ahead > 0) {
            TimeUnit.NANOSECONDS.sleep(Math.min(ahead, TimeUnit.MILLISECONDS.toNanos(100)));
        }
    }

    private void worker(String name, Step step) {
        worker(name, step, () -> { });
    }

    /** Starts a platform thread that repeats {@code step} between checkpoints until the end, then runs {@code end}. */
    private void worker(String name, Step step, Step end) {
        Thread thread = new Thread(() -> {
            try {
                gate.register();
                try {
                    while (!stopping) {
                        gate.checkpoint();
                        if (stopping) {
                            break;
                        }
                        step.run();
                    }
                } finally {
                    try {
                        end.run();
                    } finally {
                        gate.deregister();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Throwable e) {
                unexpected(e);
            }
        }, name);
        workers.add(thread);
        thread.start();
    }

    private static int logUniform(SplittableRandom random, int min, int max) {
        double low = Math.log(min);
        return (int) Math.min(max, Math.exp(low + random.nextDouble() * (Math.log(max + 1.0) - low)));
    }

    private static double logUniformMean(int min, int max) {
        return (max - min) / Math.log((double) max / min);
    }

    /** The tallies of every category the soak holds memory in, and of those it must hold none in when paused. */
    private List<Tally> tallies() {
        List<Tally> tallies = new ArrayList<>(List.of(logCache.tally(), blockCache.tally(), networkTally, clientTally,
                platformChurn.tally()));
        if (virtualChurn != null) {
            tallies.add(virtualChurn.tally());
        }
        return tallies;
    }

    /**
     * Pauses the workers, checks every invariant on the quiet pool, resumes
     * them, prints the line and the CSV row.
     *
     * @return false when an invariant was violated (printed)
     */
    private boolean check() throws InterruptedException {
        long pauseStart = System.nanoTime();
        List<String> found = new ArrayList<>();
        PoolStats stats = null;
        long rss = -1;
        long jvmOwn = 0;
        if (!gate.pause(PAUSE_TIMEOUT_MILLIS)) {
            found.add("the workers did not stop within " + PAUSE_TIMEOUT_MILLIS + " ms: " + gate.describe());
        } else {
            try {
                if (!http.drainEventLoops(PAUSE_TIMEOUT_MILLIS)) {
                    found.add("an event loop did not run a task within " + PAUSE_TIMEOUT_MILLIS + " ms");
                } else {
                    // before the collection that finds leaks: it shrinks the heap at once in the JVM's count, but the
                    // collector gives the pages back later (concurrently), so a reading after it would count them twice
                    rss = NativeMemory.residentBytes();
                    jvmOwn = nativeMemory.jvmOwnBytes();
                    pollLeaks();
                    logCache.lock();
                    blockCache.lock();
                    try {
                        stats = allocator.stats();
                        checkTallies(stats, found);
                    } finally {
                        blockCache.unlock();
                        logCache.unlock();
                    }
                }
            } finally {
                gate.resume();
            }
        }
        long pauseMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - pauseStart);
        if (stats != null) {
            checkMemory(stats, rss, jvmOwn, found);
        }
        return report(stats, rss, jvmOwn, pauseMillis, found, false);
    }

    /** Collects the leak detector's reports of buffers collected unreleased so far. */
    private void pollLeaks() throws InterruptedException {
        System.gc();
        Thread.sleep(50); // the reference handler queues what the collection found
        ByteBufAllocator poll = allocator.forCategory(NETWORK);
        for (int i = 0; i < 256; i++) { // the detector reports at its next tracked allocation; below paranoid it samples
            poll.directBuffer(1).release();
        }
    }

    private void checkTallies(PoolStats stats, List<String> found) {
        long held = 0;
        List<String> named = new ArrayList<>();
        for (Tally tally : tallies()) {
            CategoryStats category = stats.category(tally.category());
            long requested = category == null ? 0 : category.requested();
            long live = category == null ? 0 : category.liveBuffers();
            if (requested != tally.bytes() || live != tally.buffers()) {
                found.add(tally.category() + ": the pool counts " + requested + " bytes requested in " + live
                        + " live buffers, the soak holds " + tally.bytes() + " bytes in " + tally.buffers() + " buffers");
            }
            held += tally.bytes();
            named.add(tally.category());
        }
        for (CategoryStats category : stats.categories()) {
            if (!named.contains(category.name()) && (category.requested() != 0 || category.liveBuffers() != 0)) {
                found.add(category.name() + ": the soak holds nothing there, the pool counts " + category.requested()
                        + " bytes requested in " + category.liveBuffers() + " live buffers");
            }
        }
        if (stats.requestedBytes() != held) {
            found.add("the pool counts " + stats.requestedBytes() + " bytes requested in all, the soak holds " + held);
        }
    }

    private void checkMemory(PoolStats stats, long rss, long jvmOwn, List<String> found) {
        long requested = stats.requestedBytes();
        long reserved = stats.reservedBytes();
        long committed = stats.committedBytes();
        rssLimit = committed + settings.rssMargin;
        if (!(requested <= reserved && reserved <= committed && committed <= settings.ceiling)) {
            found.add("requested <= reserved <= committed <= ceiling does not hold: " + requested + ", " + reserved + ", "
                    + committed + ", " + settings.ceiling);
        }
        if (rss >= 0 && rss - jvmOwn > committed + settings.rssMargin) {
            found.add("resident memory beyond the JVM's own is " + PoolStats.bytes(rss - jvmOwn) + " (resident "
                    + PoolStats.bytes(rss) + ", the JVM's own " + PoolStats.bytes(jvmOwn) + "), more than committed "
                    + PoolStats.bytes(committed) + " + " + PoolStats.bytes(settings.rssMargin));
        }
        List<String> leaks = LeakRecorder.reports();
        if (!leaks.isEmpty()) {
            found.add(leaks.size() + " leak report(s), the first: " + leaks.get(0));
        }
    }

    /** Prints the check's line (and any violation) and writes its CSV row; false when something was found. */
    private boolean report(PoolStats stats, long rss, long jvmOwn, long pauseMillis, List<String> found, boolean end) {
        synchronized (violations) {
            found.addAll(violations);
            violations.clear();
        }
        long now = System.nanoTime();
        double seconds = (now - startNanos) / 1e9;
        long responses = http.responses();
        double rate = (responses - lastResponses) / Math.max(1e-9, (now - lastCheckNanos) / 1e9);
        lastResponses = responses;
        lastCheckNanos = now;
        long refusals = logCache.ceilingRefusals() + logCache.sourceRefusals() + blockCache.ceilingRefusals()
                + blockCache.sourceRefusals() + http.serverRefusals()
                + platformChurn.refusals() + (virtualChurn == null ? 0 : virtualChurn.refusals()) + extraPools.refusals();
        CompactionStats compaction = allocator.pool().compactionTotals();
        long requested = stats == null ? -1 : stats.requestedBytes();
        long reserved = stats == null ? -1 : stats.reservedBytes();
        long committed = stats == null ? allocator.pool().committedBytes() : stats.committedBytes();
        long beyond = rss < 0 ? -1 : rss - jvmOwn;
        long heapUsed = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        int liveThreads = ManagementFactory.getThreadMXBean().getThreadCount();
        long platformThreads = platformChurn.started();
        long virtualThreads = virtualChurn == null ? 0 : virtualChurn.started();
        long leaks = LeakRecorder.reports().size();
        System.out.printf(Locale.ROOT, "[%6.0fs] %s requested=%s reserved=%s committed=%s/%s rss=%s beyondJvm=%s req/s=%.0f"
                        + " httpFail=%d refused=%d sourceRefused=%d compactions=%d freed=%s moved=%s log=%s block=%s"
                        + " threads=%d+%d pools=%d leaks=%d pause=%dms %s%n",
                seconds, end ? "end" : "check", mib(requested), mib(reserved), mib(committed), mib(settings.ceiling),
                mib(rss), mib(beyond), rate, http.failures(), refusals, source.refusals(), compaction.compactions(),
                mib(compaction.bytesFreed()), mib(compaction.movedBytes()), mib(logCache.bytes()), mib(blockCache.bytes()),
                platformThreads, virtualThreads, extraPools.opened(), leaks, pauseMillis, found.isEmpty() ? "OK" : "FAILED");
        csv.printf(Locale.ROOT, "%.1f,%.2f,%d,%d,%d,%d,%d,%d,%d,%d,%.1f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d%n",
                seconds, seconds / 60, requested, reserved, committed, settings.ceiling, rss, beyond,
                rssLimit, heapUsed, rate, http.failures(), refusals, source.refusals(),
                compaction.compactions(), compaction.bytesFreed(), compaction.movedBytes(), logCache.bytes(),
                blockCache.bytes(), platformThreads, virtualThreads, extraPools.opened(), leaks, liveThreads, pauseMillis);
        csv.flush();
        for (String violation : found) {
            System.out.println("VIOLATED: " + violation);
        }
        if (!found.isEmpty()) {
            csv.close();
            if (stats != null) {
                System.out.println(stats.report());
            }
        }
        return found.isEmpty();
    }

    private static String mib(long bytes) {
        return bytes < 0 ? "n/a" : String.format(Locale.ROOT, "%.1fMiB", bytes / (double) MIB);
    }

    /**
     * Stops the workers, releases everything the soak holds, closes the
     * pool and checks that nothing is left: every category empty before the
     * close, nothing committed after it.
     */
    private boolean finish() throws InterruptedException, IOException {
        stopping = true;
        for (Thread worker : workers) {
            worker.join(JOIN_TIMEOUT_MILLIS);
        }
        List<String> found = new ArrayList<>();
        for (Thread worker : workers) {
            if (worker.isAlive()) {
                found.add("worker " + worker.getName() + " did not end within " + JOIN_TIMEOUT_MILLIS + " ms");
            }
        }
        http.close();
        platformChurn.releaseAll();
        if (virtualChurn != null) {
            virtualChurn.releaseAll();
        }
        logCache.close(allocator);
        blockCache.close(allocator);
        long rss = NativeMemory.residentBytes();
        long jvmOwn = nativeMemory.jvmOwnBytes();
        pollLeaks();
        PoolStats released = allocator.stats();
        checkTallies(released, found);
        if (released.requestedBytes() != 0 || released.reservedBytes() != 0 || released.liveAllocations() != 0) {
            found.add("everything released, the pool still counts " + released.requestedBytes() + " bytes requested, "
                    + released.reservedBytes() + " reserved, in " + released.liveAllocations() + " live buffers");
        }
        checkMemory(released, rss, jvmOwn, found);
        allocator.close();
        long committed = allocator.pool().committedBytes();
        if (committed != 0) {
            found.add("the pool, everything released and closed, still has " + committed + " bytes committed: "
                    + allocator.stats().report());
        }
        boolean ok = report(allocator.stats(), rss, jvmOwn, 0, found, true);
        csv.close();
        if (ok) {
            System.out.println("soak passed: " + allocator.pool().compactionTotals() + "; " + http.responses()
                    + " HTTP responses, " + source.refusals() + " chunk source refusals of " + (source.refusals() + source.granted())
                    + " requests; everything released, pool closed, committed 0");
        }
        return ok;
    }
}
