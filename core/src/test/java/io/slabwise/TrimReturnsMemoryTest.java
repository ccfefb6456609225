package io.slabwise;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * After a workload releases everything, {@code trim()} gives every chunk back
 * and the process's resident memory falls back near where it started. Runs
 * {@link TrimResidentMain} in a forked JVM so the measurement is not disturbed
 * by other tests.
 */
class TrimReturnsMemoryTest {

    private static final long MIB = 1024 * 1024;

    /** Direct buffers from malloc, on this JVM whatever its version (mapping turned off). */
    @Test
    @EnabledOnOs(OS.LINUX)
    void trimBringsCommittedToZeroAndResidentMemoryDown() throws Exception {
        runAndCheck("direct", "-Dslabwise.noMappedChunks=true");
    }

    /**
     * Chunks mapped with mmap through the Foreign Function and Memory API: on
     * a Java 22+ JVM running the multi-release jar (the build runs the suite
     * on the jar as well as on the class directory, where the Java 22 classes
     * are never picked).
     */
    @Test
    @EnabledOnOs(OS.LINUX)
    void mappedChunksGoBackToTheOperatingSystem() throws Exception {
        Assumptions.assumeTrue(MappedChunkSource.create() != null,
                "mapped chunks are not in use here: Java 17, or the Java 22 classes are not on the class path as a jar");
        runAndCheck("mapped", "--enable-native-access=ALL-UNNAMED");
    }

    /** Runs the workload in a JVM like this one, on the same class path, with {@code jvmOptions}. */
    private static void runAndCheck(String expectedSource, String... jvmOptions) throws Exception {
        List<String> options = new java.util.ArrayList<>(List.of("-Xmx128m", "-XX:MaxDirectMemorySize=2g"));
        options.addAll(List.of(jvmOptions));
        String last = ForkedJvm.lastLine(ForkedJvm.run(options, false, TrimResidentMain.class, "384"));
        String[] fields = last.trim().split(" ");
        assertEquals(expectedSource, fields[4], "chunk source");
        List<Long> figures = Arrays.stream(fields).limit(4).map(Long::parseLong).toList();
        long baseline = figures.get(0);
        long peak = figures.get(1);
        long afterTrim = figures.get(2);
        long committed = figures.get(3);
        String report = expectedSource + ": baseline " + baseline / MIB + " MiB, peak " + peak / MIB + " MiB, after trim " + afterTrim / MIB
                + " MiB, committed after trim " + committed;
        System.out.println(report);
        assertEquals(0, committed, report);
        assertTrue(peak - baseline >= 300 * MIB, "the workload really touched its memory: " + report);
        assertTrue(afterTrim - baseline <= 64 * MIB, "resident memory went back near the baseline: " + report);
    }
}
