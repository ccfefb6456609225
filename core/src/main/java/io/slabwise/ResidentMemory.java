package io.slabwise;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads the process's resident set size from the operating system.
 *
 * <p>On Linux it is the {@code VmRSS} line of {@code /proc/self/status}, which
 * the kernel prints in kB (KiB), so no page size is involved: {@code
 * /proc/self/statm} counts pages, and the page size is 4 KiB on x86-64 but
 * 16 or 64 KiB on some arm64 kernels, which Java cannot ask for without
 * internal APIs. The file is about 1.5 KB; one read and a substring scan cost
 * some microseconds, and a {@link PoolStats} snapshot reads it once.
 *
 * <p>Where the file does not exist (other systems) or says nothing usable, the
 * answer is -1, never a guess; {@link PoolStats#residentBytes()} turns that
 * into an empty {@code OptionalLong}.
 */
final class ResidentMemory {

    private static final Path STATUS = Path.of("/proc/self/status");
    private static final boolean AVAILABLE = Files.isReadable(STATUS);
    private static final String FIELD = "\nVmRSS:";

    private ResidentMemory() {
    }

    /** Resident bytes of this process, or -1 when the platform does not say. */
    static long bytes() {
        if (!AVAILABLE) {
            return -1;
        }
        try {
            return parseStatus(new String(Files.readAllBytes(STATUS), StandardCharsets.US_ASCII));
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * The {@code VmRSS} of a {@code /proc/<pid>/status} text, in bytes; -1 when
     * the line is missing (kernel threads have none) or not in kB.
     */
    static long parseStatus(String status) {
        int at = status.indexOf(FIELD);
        if (at < 0) {
            return -1;
        }
        int i = at + FIELD.length();
        while (i < status.length() && (status.charAt(i) == ' ' || status.charAt(i) == '\t')) {
            i++;
        }
        long kib = 0;
        int digits = 0;
        while (i < status.length() && status.charAt(i) >= '0' && status.charAt(i) <= '9' && digits < 18) {
            kib = kib * 10 + (status.charAt(i++) - '0');
            digits++;
        }
        if (digits == 0 || !status.startsWith(" kB", i)) {
            return -1;
        }
        return kib * 1024;
    }
}
