package io.slabwise;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JDK Flight Recorder events: each one is recorded at its spot with the
 * right fields. A recording is started in the test's JVM, dumped to a file
 * and read back. Other pools of the same JVM (other test classes, decay
 * threads) may emit events meanwhile, so only events of the threads a test
 * runs are looked at; the pools here run decay on a manual scheduler.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PoolEventsTest {

    private static final int KIB = 1024;
    /** Every chunk of this size ({@code firstChunkSize} too): the tests count pages and bytes per chunk. */
    private static final int CHUNK = 1 << 20;
    private static final List<String> EVENTS = List.of("io.slabwise.ChunkCommitted", "io.slabwise.ChunkReleased",
            "io.slabwise.LimitRefused", "io.slabwise.LimitWait", "io.slabwise.Trim", "io.slabwise.Compaction");

    @TempDir
    Path dir;

    private final ManualTime time = new ManualTime();

    /** Runs up to a whole chunk, so that the events here are about chunks; dedicated regions have tests of their own. */
    private PoolConfig.Builder config() {
        return PoolConfig.builder().chunkSize(CHUNK).firstChunkSize(CHUNK).arenas(1).maxCachedSize(0).ticker(time).scheduler(time)
                .chunkSource(ChunkSource.direct()).dedicatedAbove(CHUNK);
    }

    @Test
    void regionsCommittedAndReleasedWithTheirKind() throws IOException {
        MemoryPool pool = new MemoryPool(config().minIdleChunks(0).build());
        List<RecordedEvent> events = record(() -> {
            Allocation small = new Allocation();
            pool.allocate(1000, small);
            Allocation huge = new Allocation();
            pool.allocate(CHUNK + 1, huge); // a page more than a chunk
            Allocation block = new Allocation();
            BlockPool blocks = pool.blocks("blocks", 64 * KIB, 1);
            assertTrue(blocks.allocateBlock(block));
            pool.free(huge);
            pool.free(small);
            pool.free(block);
            blocks.trim();
            pool.trim();
        });
        int page = pool.config().pageSize();
        List<RecordedEvent> committed = named(events, "io.slabwise.ChunkCommitted");
        assertEquals(3, committed.size(), committed::toString);
        assertRegion(committed.get(0), "chunk", CHUNK, CHUNK);
        assertRegion(committed.get(1), "huge", CHUNK + page, 2L * CHUNK + page);
        assertRegion(committed.get(2), "block", 64 * KIB, 2L * CHUNK + page + 64 * KIB);

        List<RecordedEvent> released = named(events, "io.slabwise.ChunkReleased");
        assertEquals(3, released.size(), released::toString);
        assertRegion(released.get(0), "huge", CHUNK + page, CHUNK + 64 * KIB);
        assertRegion(released.get(1), "block", 64 * KIB, CHUNK);
        assertRegion(released.get(2), "chunk", CHUNK, 0);
        assertEquals(0, pool.committedBytes());
    }

    @Test
    void aTrimReportsWhatItGaveBack() throws IOException {
        MemoryPool pool = new MemoryPool(config().minIdleChunks(0).build());
        BlockPool blocks = pool.blocks("blocks", 64 * KIB, 1);
        long[] idleBefore = new long[1];
        int[] givenBack = new int[1];
        List<RecordedEvent> events = record(() -> {
            Allocation a = new Allocation();
            Allocation block = new Allocation();
            pool.allocate(CHUNK, a);
            assertTrue(blocks.allocateBlock(block));
            pool.free(a);
            pool.free(block);
            idleBefore[0] = pool.committedBytes(); // all of it idle: a chunk and a block
            givenBack[0] = pool.trim();
            assertEquals(0, pool.trim(), "nothing left to give back");
        });
        assertEquals(CHUNK + 64 * KIB, idleBefore[0]);
        assertEquals(2, givenBack[0]);
        List<RecordedEvent> trims = named(events, "io.slabwise.Trim");
        assertEquals(2, trims.size(), "an explicit trim is reported even when it gives back nothing: " + trims);
        RecordedEvent first = trims.get(0);
        assertEquals("trim", first.getString("cause"));
        assertEquals(2, first.getInt("regions"));
        assertEquals(CHUNK + 64 * KIB, first.getLong("bytes"));
        assertEquals(0, first.getLong("committed"));
        assertFalse(first.getDuration().isNegative());
        assertEquals(0, trims.get(1).getInt("regions"));
        assertEquals(0, trims.get(1).getLong("bytes"));
    }

    @Test
    void decayIsReportedOnlyWhenItGivesSomethingBack() throws IOException {
        MemoryPool pool = new MemoryPool(config().minIdleChunks(0).idleChunkDecay(Duration.ofSeconds(10)).build());
        List<RecordedEvent> events = record(() -> {
            Allocation a = new Allocation();
            pool.allocate(CHUNK, a);
            pool.free(a);
            time.runScheduled(); // not idle long enough: nothing given back, no event
            time.advance(Duration.ofSeconds(10));
            time.runScheduled();
        });
        List<RecordedEvent> trims = named(events, "io.slabwise.Trim");
        assertEquals(1, trims.size(), trims::toString);
        assertEquals("decay", trims.get(0).getString("cause"));
        assertEquals(1, trims.get(0).getInt("regions"));
        assertEquals(CHUNK, trims.get(0).getLong("bytes"));
    }

    @Test
    void refusalsCarryTheLimitAndWhy() throws IOException {
        MemoryPool pool = new MemoryPool(config().maxMemory(2L * CHUNK).quota("small", 256 * KIB)
                .categoryPolicy("small", LimitPolicy.RETURN_NULL).limitPolicy(LimitPolicy.FAIL).build());
        Category small = pool.category("small");
        Allocation held = new Allocation();
        Allocation wholeChunk = new Allocation();
        List<RecordedEvent> events = record(() -> {
            pool.allocate(small, 200 * KIB, held);
            assertFalse(pool.allocate(small, 100 * KIB, new Allocation()));
            pool.allocate(CHUNK, wholeChunk); // a second chunk: the ceiling is reached
            assertThrows(MemoryLimitException.class, () -> pool.allocate(CHUNK, new Allocation()));
            assertThrows(MemoryLimitException.class, () -> pool.allocate(3 * CHUNK, new Allocation()));
        });
        List<RecordedEvent> refused = named(events, "io.slabwise.LimitRefused");
        assertEquals(3, refused.size(), refused::toString);

        RecordedEvent quota = refused.get(0);
        assertEquals("small", quota.getString("category"));
        assertEquals(100 * KIB, quota.getLong("requested"));
        assertEquals("quota", quota.getString("kind"));
        assertEquals(256 * KIB, quota.getLong("limit"));
        assertEquals(pool.reservedSizeFor(200 * KIB), quota.getLong("used"), "the category's reserved bytes");
        assertEquals("return_null", quota.getString("policy"));
        assertEquals("policy", quota.getString("reason"));

        RecordedEvent ceiling = refused.get(1);
        assertEquals("network", ceiling.getString("category"));
        assertEquals(CHUNK, ceiling.getLong("requested"));
        assertEquals("ceiling", ceiling.getString("kind"));
        assertEquals(2L * CHUNK, ceiling.getLong("limit"));
        assertEquals(2L * CHUNK, ceiling.getLong("used"), "the committed bytes");
        assertEquals("fail", ceiling.getString("policy"));
        assertEquals("policy", ceiling.getString("reason"));

        assertEquals("never_satisfiable", refused.get(2).getString("reason"));
        assertEquals(3L * CHUNK, refused.get(2).getLong("requested"));
        pool.free(held);
        pool.free(wholeChunk);
    }

    @Test
    void aWaitIsADurationWithItsOutcome() throws Exception {
        MemoryPool pool = new MemoryPool(config().quota("small", 256 * KIB).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(Duration.ofMillis(20)).build());
        Category small = pool.category("small");
        Allocation held = new Allocation();
        pool.allocate(small, 200 * KIB, held);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Allocation served = new Allocation();
        AtomicReference<Throwable> timedOut = new AtomicReference<>();
        List<RecordedEvent> events = record(() -> {
            Thread impatient = new Thread(() -> {
                try {
                    pool.allocate(small, 100 * KIB, new Allocation());
                } catch (Throwable t) {
                    timedOut.set(t);
                }
            }, "slabwise-impatient");
            impatient.start();
            time.awaitParked(1, impatient);
            time.advance(Duration.ofMillis(20)); // the wait's timeout, on the pool's ticker
            join(impatient);
        }, "slabwise-impatient");
        assertEquals(MemoryLimitException.Kind.QUOTA, assertInstanceOf(MemoryLimitException.class, timedOut.get()).kind());
        MemoryPool patient = new MemoryPool(config().quota("small", 256 * KIB).limitPolicy(LimitPolicy.WAIT)
                .waitTimeout(Duration.ofSeconds(30)).build());
        Category patientSmall = patient.category("small");
        Allocation patientHeld = new Allocation();
        patient.allocate(patientSmall, 200 * KIB, patientHeld);
        Thread[] waiter = new Thread[1];
        List<RecordedEvent> served2 = record(() -> {
            waiter[0] = new Thread(() -> {
                try {
                    patient.allocate(patientSmall, 100 * KIB, served);
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "slabwise-waiter");
            waiter[0].start();
            ConcurrentTasks.awaitWaiting(patient, 1);
            patient.free(patientHeld);
            join(waiter[0]);
        }, "slabwise-waiter");
        assertNull(failure.get());
        assertTrue(served.isLive());

        RecordedEvent timeout = single(named(events, "io.slabwise.LimitWait"));
        assertEquals("small", timeout.getString("category"));
        assertEquals(100 * KIB, timeout.getLong("requested"));
        assertEquals("quota", timeout.getString("kind"));
        assertEquals("timeout", timeout.getString("outcome"));
        assertTrue(timeout.getDuration().toNanos() > 0, timeout::toString);
        assertEquals("slabwise-impatient", timeout.getThread().getJavaName());
        RecordedEvent afterWait = single(named(events, "io.slabwise.LimitRefused"));
        assertEquals("wait_timeout", afterWait.getString("reason"));
        assertEquals("wait", afterWait.getString("policy"));

        RecordedEvent ok = single(named(served2, "io.slabwise.LimitWait"));
        assertEquals("served", ok.getString("outcome"));
        assertEquals("slabwise-waiter", ok.getThread().getJavaName());
        assertTrue(named(served2, "io.slabwise.LimitRefused").isEmpty());
        pool.free(held);
        patient.free(served);
    }

    @Test
    void aCompactionRecordsWhatItMovedAndFreed() throws IOException {
        MemoryPool pool = new MemoryPool(config().build());
        Category cache = pool.category("cache");
        java.util.ArrayList<Allocation> kept = new java.util.ArrayList<>();
        java.util.ArrayList<Allocation> all = new java.util.ArrayList<>();
        for (int i = 0; i < 256; i++) {
            Allocation a = new Allocation();
            pool.allocate(cache, 8 * KIB, a); // two chunks of 128 runs
            all.add(a);
        }
        for (int i = 0; i < all.size(); i++) {
            if (i % 32 == 0) {
                kept.add(all.get(i));
            } else {
                pool.free(all.get(i));
            }
        }
        pool.setRelocator("cache", evacuation -> {
            for (int i = 0; i < kept.size(); i++) {
                Allocation fresh = new Allocation();
                if (evacuation.contains(kept.get(i)) && evacuation.moveInto(kept.get(i), fresh)) {
                    pool.free(kept.set(i, fresh));
                }
            }
        });
        AtomicReference<CompactionStats> done = new AtomicReference<>();
        List<RecordedEvent> events = record(() -> done.set(pool.compact()));
        RecordedEvent event = single(named(events, "io.slabwise.Compaction"));
        assertEquals("compact", event.getString("cause"));
        assertEquals(done.get().chunksEvacuated(), event.getLong("chunksEvacuated"));
        assertEquals(done.get().chunksFreed(), event.getLong("chunksFreed"));
        assertEquals(done.get().bytesFreed(), event.getLong("bytesFreed"));
        assertEquals(8, event.getLong("movedEntries"));
        assertEquals(64 * KIB, event.getLong("movedBytes"));
        assertEquals(0, event.getLong("refusedEntries"));
        assertTrue(event.getLong("chunksFreed") >= 1, event::toString);
        kept.forEach(pool::free);
    }

    @Test
    void eventsAreDeclaredInTheSlabwiseCategory() throws IOException {
        MemoryPool pool = new MemoryPool(config().build());
        List<RecordedEvent> events = record(() -> {
            pool.allocate(1, new Allocation());
            pool.trim();
        });
        assertFalse(events.isEmpty());
        for (RecordedEvent e : events) {
            assertEquals(List.of("Slabwise"), e.getEventType().getCategoryNames(), e.getEventType().getName());
            assertInstanceOf(String.class, e.getEventType().getDescription());
        }
    }

    /** Runs {@code work} under a recording of every Slabwise event; returns the events of this thread and of {@code threads}. */
    private List<RecordedEvent> record(Runnable work, String... threads) throws IOException {
        Path file = dir.resolve("events-" + System.nanoTime() + ".jfr");
        try (Recording recording = new Recording()) {
            for (String event : EVENTS) {
                recording.enable(event).withThreshold(Duration.ZERO);
            }
            recording.start();
            work.run();
            recording.stop();
            recording.dump(file);
        }
        Set<String> ours = Set.of(threads.length == 0 ? new String[] {Thread.currentThread().getName()}
                : concat(Thread.currentThread().getName(), threads));
        Predicate<RecordedEvent> fromUs = e -> e.getThread() != null && ours.contains(e.getThread().getJavaName());
        return RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().startsWith("io.slabwise."))
                .filter(fromUs)
                .sorted((a, b) -> a.getStartTime().compareTo(b.getStartTime()))
                .toList();
    }

    private static String[] concat(String first, String[] rest) {
        String[] all = new String[rest.length + 1];
        all[0] = first;
        System.arraycopy(rest, 0, all, 1, rest.length);
        return all;
    }

    private static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }

    private static RecordedEvent single(List<RecordedEvent> events) {
        assertEquals(1, events.size(), events::toString);
        return events.get(0);
    }

    private static void assertRegion(RecordedEvent event, String kind, long size, long committedAfter) {
        assertEquals(kind, event.getString("kind"), event::toString);
        assertEquals(size, event.getLong("size"), event::toString);
        assertEquals(committedAfter, event.getLong("committed"), event::toString);
    }

    private static void join(Thread thread) {
        try {
            thread.join();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * With no flight recorder in the JVM, a pool's life (chunks committed and
     * given back, huge regions, a trim, a refusal at the ceiling) loads none of
     * its event classes and does not start the recorder's machinery, which would
     * cost the thread that commits the first chunk some 100 ms. Runs
     * {@link Workload} in a JVM of its own that logs every class it loads.
     */
    @Nested
    @Timeout(120)
    class Dormant {

        @Test
        void noEventClassIsLoadedWithoutARecorder() throws Exception {
            // the native heap trim (glibc without MALLOC_ variables) goes through the platform MBean server, whose
            // diagnostic command bean loads JFR's command and management classes without starting the recorder;
            // NativeHeapTrimTest checks that the recorder stays off
            String output = ForkedJvm.run(List.of("-Xmx64m", "-Xlog:class+load=info", "-Dslabwise.noNativeHeapTrim=true"),
                    false, Workload.class);
            assertTrue(output.contains("workload done"), "the workload ran: " + ForkedJvm.tail(output));
            assertTrue(output.contains("io.slabwise.CommittedMemory "), "the class log is there: " + ForkedJvm.tail(output));
            assertFalse(output.contains("io.slabwise.PoolEvents$"), "an event class was loaded");
            assertFalse(output.contains("jdk.jfr.internal."), "the flight recorder's machinery was started");
        }

        /** A pool's whole life on the slow paths that emit events. */
        public static final class Workload {
            private Workload() {
            }

            /**
             * Commits chunks and a huge region, gives them back, trims, and is
             * refused at a small ceiling.
             *
             * @param args unused
             */
            public static void main(String[] args) {
                PoolConfig config = PoolConfig.builder().chunkSize(1 << 20).maxMemory(4L << 20).minIdleChunks(0)
                        .limitPolicy(LimitPolicy.RETURN_NULL).build();
                try (MemoryPool pool = new MemoryPool(config)) {
                    Allocation small = new Allocation();
                    Allocation huge = new Allocation();
                    Allocation refused = new Allocation();
                    if (!pool.allocate(1024, small) || !pool.allocate(2 << 20, huge)) {
                        throw new AssertionError("the pool refused below its ceiling");
                    }
                    if (pool.allocate(3 << 20, refused)) {
                        throw new AssertionError("the pool went past its ceiling");
                    }
                    pool.free(huge);
                    pool.free(small);
                    pool.trim();
                }
                System.out.println("workload done");
            }
        }
    }
}
