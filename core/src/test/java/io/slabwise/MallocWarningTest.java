package io.slabwise;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The start-up warning about glibc keeping freed chunks comes from a pool
 * whose chunks the built-in direct source takes one by one (region groups
 * turned off), and from no other: a pool over a source of its own says
 * nothing about memory it does not take. A fresh JVM each, without the
 * environment's {@code MALLOC_*} variables, on Linux (where the JVM runs on
 * glibc).
 */
@Timeout(120)
@EnabledOnOs(OS.LINUX)
class MallocWarningTest {

    private static final List<String> JVM = List.of("-Xmx64m", "-Dslabwise.noMappedChunks=true",
            "-Dslabwise.noRegionGroups=true");
    private static final String WARNING = "MALLOC_MMAP_THRESHOLD_=131072";

    @Test
    void aPoolOverTheDirectSourceWarns() throws Exception {
        String output = ForkedJvm.run(JVM, true, MallocWarningMain.class, "direct");
        assertTrue(output.contains(WARNING), output);
    }

    @Test
    void aPoolOverASourceOfItsOwnDoesNot() throws Exception {
        String output = ForkedJvm.run(JVM, true, MallocWarningMain.class, "own");
        assertFalse(output.contains(WARNING), output);
    }
}
