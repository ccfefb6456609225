package io.slabwise;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The settings whose default depends on others (the first chunk size and
 * the dedicated threshold on the chunk size, the ceiling on the chunk
 * source) told "not set" from set by a value of their own, -1 and
 * {@link Long#MIN_VALUE}: a system property of that value was taken as not
 * set, and passed unchecked where any other out-of-range value fails.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class UnsetSettingsTest {

    @ParameterizedTest(name = "-D{0}={1}")
    @CsvSource({
            "slabwise.firstChunkSize, -1",
            "slabwise.dedicatedAbove, -1",
            "slabwise.maxMemory, -9223372036854775808",
    })
    void aPropertyOfTheValueThatMeantUnsetFailsTheBuild(String property, String value) {
        String before = System.getProperty(property);
        System.setProperty(property, value);
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PoolConfig.builder().build());
            assertTrue(e.getMessage().contains(property.substring("slabwise.".length())), e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty(property);
            } else {
                System.setProperty(property, before);
            }
        }
    }
}
