package io.slabwise.benchmarks.simulator;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Resident bytes: the process's resident set size, the {@code VmRSS} line of
 * {@code /proc/self/status} (Linux). It covers the whole JVM (heap, code,
 * thread stacks, malloc arenas and every allocator's native memory), not the
 * allocator under test alone, so read it as a trend. -1 where it cannot be read.
 */
final class Resident {

    private static final Path STATUS = Path.of("/proc/self/status");

    private Resident() {
    }

    static long bytes() {
        try {
            List<String> lines = Files.readAllLines(STATUS, StandardCharsets.US_ASCII);
            for (String line : lines) {
                if (line.startsWith("VmRSS:")) {
                    String[] fields = line.substring("VmRSS:".length()).trim().split("\\s+");
                    return Long.parseLong(fields[0]) * 1024; // the kernel reports kB
                }
            }
            return -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
