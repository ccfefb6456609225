package io.slabwise;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs a main class in a JVM of its own, like this one and on its class path,
 * for tests that need a fresh process: resident memory, malloc's state, the
 * classes a JVM loads. Public, in core's test jar, for the other modules' tests.
 */
public final class ForkedJvm {

    private ForkedJvm() {
    }

    /**
     * Runs {@code main} with {@code jvmOptions} and {@code args}, without the
     * environment's {@code MALLOC_*} variables when {@code withoutMalloc};
     * fails the test unless it ends with status 0 within 100 s. Returns its
     * output, standard error included.
     */
    public static String run(List<String> jvmOptions, boolean withoutMalloc, Class<?> main, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command);
        if (withoutMalloc) {
            builder.environment().keySet().removeIf(name -> name.startsWith("MALLOC_"));
        }
        builder.redirectErrorStream(true);
        Process process = builder.start();
        String output;
        try (InputStream in = process.getInputStream()) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            in.transferTo(bytes);
            output = bytes.toString(StandardCharsets.UTF_8);
        }
        assertTrue(process.waitFor(100, TimeUnit.SECONDS), "the forked JVM did not finish");
        assertEquals(0, process.exitValue(), "the forked JVM failed: " + tail(output));
        return output;
    }

    /** The last line of {@code output}, trimmed. */
    public static String lastLine(String output) {
        String trimmed = output.strip();
        return trimmed.substring(trimmed.lastIndexOf('\n') + 1).trim();
    }

    /** The end of {@code output}, for failure messages. */
    public static String tail(String output) {
        return output.substring(Math.max(0, output.length() - 2000));
    }
}
