package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chunks from the direct source (malloc) go back to the operating system when
 * given back, with no {@code MALLOC_*} variable: regions are carved from
 * groups glibc always maps. Runs {@link GroupedResidentMain} in a JVM of its
 * own with mapped chunks turned off and the environment's {@code MALLOC_}
 * variables removed.
 */
@Timeout(120)
class GroupedRegionsResidentTest {

    private static final long MIB = 1024 * 1024;

    @Test
    @EnabledOnOs(OS.LINUX)
    void chunksGivenBackLeaveTheProcess() throws Exception {
        String last = ForkedJvm.lastLine(ForkedJvm.run(List.of("-Xmx64m", "-XX:MaxDirectMemorySize=2g", "-Dslabwise.noMappedChunks=true"),
                true, GroupedResidentMain.class, "64"));
        String[] fields = last.trim().split(" ");
        List<Long> figures = Arrays.stream(fields).limit(4).map(Long::parseLong).toList();
        String report = "baseline " + figures.get(0) / MIB + " MiB, peak " + figures.get(1) / MIB + " MiB, after "
                + figures.get(2) / MIB + " MiB, committed " + figures.get(3) + ", grouped " + fields[4];
        System.out.println(report);
        assertEquals("true", fields[4], report);
        assertEquals(0, figures.get(3), report);
        assertTrue(figures.get(1) - figures.get(0) >= 200 * MIB, "the chunks were resident: " + report);
        // what may stay: what malloc keeps of the regions a pool takes on their own (CommittedMemory.ALONE_BUDGET)
        // after the native heap trim, and the JVM's own growth (about 10 MiB here); each chunk taken on its own
        // leaves about 190 MiB
        assertTrue(figures.get(2) - figures.get(0) <= 40 * MIB, "resident memory went back near the baseline: " + report);
    }
}
