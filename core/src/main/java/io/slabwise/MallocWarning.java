package io.slabwise;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The warning for chunks that come from {@code malloc} on glibc. Once a freed
 * chunk has raised glibc's dynamic mmap threshold past the chunk size, later
 * chunks come from malloc's arenas, and freeing them may leave their pages
 * resident. Setting {@code MALLOC_MMAP_THRESHOLD_} (e.g. 131072) in the
 * environment pins the threshold so every chunk is mapped and unmapped on its
 * own. Pools carve their regions from groups of 32 MiB, which glibc always maps
 * (see {@link RegionGroups}), so the warning applies only where that is turned
 * off ({@code -Dslabwise.noRegionGroups=true}). Logged once, when the process
 * runs on glibc without the variable.
 */
final class MallocWarning {

    private static boolean warned;

    private MallocWarning() {
    }

    static synchronized void warnOnce() {
        if (warned) {
            return;
        }
        warned = true;
        boolean linux = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux");
        if (!linux || System.getenv("MALLOC_MMAP_THRESHOLD_") != null || Boolean.getBoolean("slabwise.noGlibcWarning")
                || !Boolean.getBoolean("slabwise.noRegionGroups")) {
            return;
        }
        if (Files.exists(Path.of("/proc/self/maps")) && mapsMention("libc.so.6")) {
            System.getLogger("io.slabwise").log(System.Logger.Level.WARNING,
                    "Slabwise chunks come from malloc one by one (slabwise.noRegionGroups) and this process runs on glibc"
                            + " without MALLOC_MMAP_THRESHOLD_:"
                            + " chunks given back to the OS may stay resident. Set MALLOC_MMAP_THRESHOLD_=131072 in the"
                            + " environment (or -Dslabwise.noGlibcWarning=true to silence this warning).");
        }
    }

    private static boolean mapsMention(String library) {
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.anyMatch(line -> line.endsWith(library));
        } catch (java.io.IOException | RuntimeException e) {
            return false;
        }
    }
}
