package io.slabwise;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Run in a forked JVM by {@link TrimReturnsMemoryTest}: fills a pool from
 * several threads, touching every page, releases everything on other threads,
 * trims, and prints {@code baseline peak afterTrim committedAfterTrim source}
 * (bytes, then the chunk source's name) on one line.
 */
public final class TrimResidentMain {

    private TrimResidentMain() {
    }

    /** Entry point; the argument is the number of MiB to fill. */
    public static void main(String[] args) throws Exception {
        int mib = Integer.parseInt(args[0]);
        MemoryPool pool = new MemoryPool(PoolConfig.builder().arenas(4).build());
        long baseline = residentBytes();
        int threads = 4;
        List<List<Allocation>> perThread = new ArrayList<>();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            List<Allocation> mine = new ArrayList<>();
            perThread.add(mine);
            int seed = t;
            workers[t] = new Thread(() -> {
                java.util.Random random = new java.util.Random(seed);
                long filled = 0;
                while (filled < (long) mib * 1024 * 1024 / threads) {
                    int size = 1024 + random.nextInt(512 * 1024);
                    Allocation a = new Allocation();
                    pool.allocate(size, a);
                    for (int p = 0; p < size; p += 4096) {
                        a.chunkMemory().put(a.offset() + p, (byte) 1);
                    }
                    mine.add(a);
                    filled += size;
                }
            });
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        long peak = residentBytes();
        for (int t = 0; t < threads; t++) {
            List<Allocation> theirs = perThread.get((t + 1) % threads); // release on another thread
            workers[t] = new Thread(() -> theirs.forEach(pool::free));
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        pool.trim();
        long after = residentBytes();
        System.out.println(baseline + " " + peak + " " + after + " " + pool.committedBytes() + " "
                + pool.config().chunkSource());
    }

    static long residentBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }
}
