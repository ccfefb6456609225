package io.slabwise;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The defaults that grow with the processor count stay within the bounds
 * their settings are checked against: twice the processors as arenas, and
 * a stripe per processor of the sequential allocators and block pools, at
 * most 1024 each. With more than 512 processors, a pool of the default
 * settings failed to build ("arenas must be from 1 to 1024").
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ProcessorDefaultsTest {

    @Test
    void theDefaultsBuildAPoolWithMoreThanAThousandProcessors() throws Exception {
        String output = ForkedJvm.run(List.of("-XX:ActiveProcessorCount=1100", "-Xmx256m"), false, ManyProcessorsMain.class);
        assertEquals("1100 processors: 1024 arenas", ForkedJvm.lastLine(output));
    }
}
