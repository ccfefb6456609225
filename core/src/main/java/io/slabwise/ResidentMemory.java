package io.slabwise;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads the process's resident set size. On Linux it is the second field of
 * {@code /proc/self/statm} times the page size (4 KiB, the size Linux reports
 * {@code statm} in on the platforms Slabwise runs on); elsewhere it is unknown,
 * and -1 is returned rather than a guess.
 */
final class ResidentMemory {

    private static final Path STATM = Path.of("/proc/self/statm");
    private static final boolean AVAILABLE = Files.isReadable(STATM);
    private static final long PAGE = 4096;

    private ResidentMemory() {
    }

    /** Resident bytes of this process, or -1 when the platform does not say. */
    static long bytes() {
        if (!AVAILABLE) {
            return -1;
        }
        try {
            String statm = new String(Files.readAllBytes(STATM), StandardCharsets.US_ASCII);
            int first = statm.indexOf(' ');
            int second = statm.indexOf(' ', first + 1);
            return Long.parseLong(statm.substring(first + 1, second)) * PAGE;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
