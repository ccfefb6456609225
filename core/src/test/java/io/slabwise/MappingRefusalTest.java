package io.slabwise;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A mapping the operating system refuses is an error that says why, not a
 * bare "failed": the error number the call left, and for {@code ENOMEM} the
 * mappings the process holds beside {@code vm.max_map_count}, the limit a
 * pool of hundreds of GiB in small chunks can reach.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class MappingRefusalTest {

    @Test
    void anEnomemNamesTheMappingsHeldAndTheLimit() throws Exception {
        String message = MappingRefusal.message("mmap", 4 << 20, MappingRefusal.ENOMEM);
        assertTrue(message.startsWith("mmap of 4194304 bytes failed with errno 12 (ENOMEM): the process holds "), message);
        Path limit = Path.of("/proc/sys/vm/max_map_count");
        if (Files.isReadable(limit)) {
            String expected = Files.readAllLines(limit).get(0).trim();
            assertTrue(message.contains(" mappings and vm.max_map_count is " + expected + ";"), message);
            assertTrue(message.matches(".*the process holds [0-9]+ mappings.*"), message);
        }
        assertTrue(message.contains("larger chunkSize"), message);
    }

    @Test
    void anotherErrorGivesItsNumberAlone() {
        assertEquals("munmap of 8192 bytes failed with errno 22", MappingRefusal.message("munmap", 8192, 22));
    }

    /** The mapped source reads the error number the call itself left: a mapping of no bytes is EINVAL. */
    @Test
    void theMappedSourceReportsTheErrorNumberOfTheCall() {
        ChunkSource mapped = MappedChunkSource.create();
        Assumptions.assumeTrue(mapped != null, "no mapped chunk source on this JDK (Java 22 or later on Linux)");
        OutOfMemoryError refused = assertThrows(OutOfMemoryError.class, () -> mapped.allocate(0));
        assertEquals("mmap of 0 bytes failed with errno 22", refused.getMessage());
    }
}
