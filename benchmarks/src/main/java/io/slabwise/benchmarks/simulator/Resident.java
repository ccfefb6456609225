package io.slabwise.benchmarks.simulator;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The process's resident set size from {@code /proc/self/statm} (Linux), or -1 elsewhere. */
final class Resident {

    private static final Path STATM = Path.of("/proc/self/statm");
    private static final long PAGE = 4096;

    private Resident() {
    }

    static long bytes() {
        try {
            String[] fields = Files.readString(STATM).trim().split("\\s+");
            return Long.parseLong(fields[1]) * PAGE;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
