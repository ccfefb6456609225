package io.slabwise.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The resident set size of this process: the {@code VmRSS} line of
 * {@code /proc/self/status} (Linux). It covers the whole JVM (heap, code,
 * thread stacks, malloc's arenas and the allocator's native memory), so only
 * its changes within one fork say something about the allocator.
 */
final class ProcessMemory {

    private static final Path STATUS = Path.of("/proc/self/status");

    private ProcessMemory() {
    }

    /** Resident bytes, or -1 where they cannot be read. */
    static long residentBytes() {
        try {
            for (String line : Files.readAllLines(STATUS, StandardCharsets.US_ASCII)) {
                if (line.startsWith("VmRSS:")) {
                    String kilobytes = line.substring("VmRSS:".length()).trim().split("\\s+")[0];
                    return Long.parseLong(kilobytes) * 1024;
                }
            }
            return -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
