package io.slabwise;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs several pool lifetimes one after another, each on a thread of its own:
 * a pool of the direct source takes runs and dedicated regions of mixed sizes
 * (its first regions on their own, the rest carved from groups), touches
 * them, frees them in a shuffled order, is trimmed and closed. Prints the
 * resident bytes after each lifetime, the native heap trims made and whether
 * the flight recorder was started (it must not be). Run
 * in a JVM of its own by {@link NativeHeapTrimTest}.
 */
public final class PoolLifetimesResidentMain {

    private static final int[] SIZES = {8 * 1024, 100_000, 600 * 1024, 1024 * 1024, 3 * 1024 * 1024 + 5000};

    /** Native heap trims the lifetimes' pools made, summed. */
    private static final AtomicLong TRIMS = new AtomicLong();

    private PoolLifetimesResidentMain() {
    }

    /** Entry point; the arguments are the number of lifetimes and the bytes each lifetime holds at its peak. */
    public static void main(String[] args) throws Exception {
        int lifetimes = Integer.parseInt(args[0]);
        long peakBytes = Long.parseLong(args[1]);
        StringBuilder out = new StringBuilder();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int lifetime = 0; lifetime < lifetimes; lifetime++) {
            long seed = lifetime;
            Thread thread = new Thread(() -> live(seed, peakBytes), "lifetime-" + lifetime);
            thread.setUncaughtExceptionHandler((t, e) -> failure.set(e));
            thread.start();
            thread.join();
            if (failure.get() != null) {
                throw new IllegalStateException("lifetime " + lifetime + " failed", failure.get());
            }
            out.append(residentBytes()).append(' ');
        }
        out.append(TRIMS.get()).append(' ').append(jdk.jfr.FlightRecorder.isInitialized());
        System.out.println(out);
    }

    private static void live(long seed, long peakBytes) {
        Random random = new Random(seed);
        MemoryPool pool = new MemoryPool(PoolConfig.builder().build());
        try {
            List<Allocation> live = new ArrayList<>();
            long held = 0;
            while (held < peakBytes) {
                int size = SIZES[random.nextInt(SIZES.length)];
                Allocation a = new Allocation();
                if (!pool.allocate(size, a)) {
                    throw new IllegalStateException("refused " + size);
                }
                ByteBuffer bytes = a.buffer();
                for (int at = 0; at < size; at += 4096) {
                    bytes.put(at, (byte) 1);
                }
                live.add(a);
                held += size;
                if (random.nextInt(4) == 0) { // some churn: a region freed early, its place taken again
                    held -= live.get(0).requestedBytes();
                    pool.free(live.remove(0));
                }
            }
            Collections.shuffle(live, random);
            for (Allocation a : live) {
                pool.free(a);
            }
            pool.trim();
        } finally {
            pool.close();
            TRIMS.addAndGet(pool.idle.nativeHeapTrims()); // its trim() and its close()
        }
    }

    private static long residentBytes() throws java.io.IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }
}
