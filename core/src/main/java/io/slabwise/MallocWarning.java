package io.slabwise;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Whether freed malloc memory may stay resident here, and the warning for it.
 * Once a freed chunk has raised glibc's dynamic mmap threshold past the chunk
 * size, later chunks come from malloc's arenas, and freeing them may leave
 * their pages resident. Setting {@code MALLOC_MMAP_THRESHOLD_} (e.g. 131072)
 * in the environment pins the threshold so every chunk is mapped and unmapped
 * on its own. Where that variable is missing on glibc, pools carve their
 * regions from groups of 32 MiB, which glibc always maps (see
 * {@link RegionGroups}); the warning applies only where that is turned off
 * ({@code -Dslabwise.noRegionGroups=true}). Logged once.
 */
final class MallocWarning {

    /** Whether this process runs on glibc without {@code MALLOC_MMAP_THRESHOLD_}; read once. */
    private static final boolean GLIBC_KEEPS_FREED_CHUNKS = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")
            && System.getenv("MALLOC_MMAP_THRESHOLD_") == null
            && Files.exists(Path.of("/proc/self/maps")) && mapsMention("libc.so.6");

    private static boolean warned;

    private MallocWarning() {
    }

    /**
     * Whether malloc may keep chunks freed one by one resident: glibc, and no
     * {@code MALLOC_MMAP_THRESHOLD_} in the environment.
     */
    static boolean glibcKeepsFreedChunks() {
        return GLIBC_KEEPS_FREED_CHUNKS;
    }

    /** Whether pools of the direct source carve regions from groups: where glibc would keep them, unless turned off. */
    static boolean regionGroupsWanted() {
        return GLIBC_KEEPS_FREED_CHUNKS && !Boolean.getBoolean("slabwise.noRegionGroups");
    }

    /** Logs the warning, once per process, where it applies: called by a pool over the built-in direct source. */
    static synchronized void warnOnce() {
        if (warned) {
            return;
        }
        warned = true;
        if (GLIBC_KEEPS_FREED_CHUNKS && !regionGroupsWanted() && !Boolean.getBoolean("slabwise.noGlibcWarning")) {
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
