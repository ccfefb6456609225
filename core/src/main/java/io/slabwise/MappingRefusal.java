package io.slabwise;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * What the pool says when the operating system refuses to map a chunk (or
 * to unmap one, which can split a mapping in two): the
 * error number, and for {@code ENOMEM} the two figures that tell an
 * operator which limit was hit, the mappings the process holds and
 * {@code vm.max_map_count}. Read only on that failure, never on a path that
 * maps successfully.
 */
final class MappingRefusal {

    /** Linux's "out of memory" error number, also what {@code mmap} returns at {@code vm.max_map_count}. */
    static final int ENOMEM = 12;

    private MappingRefusal() {
    }

    /** The message for a call ({@code mmap}, {@code munmap}) on {@code size} bytes refused with {@code errno}. */
    static String message(String call, long size, int errno) {
        StringBuilder why = new StringBuilder(call).append(" of ").append(size).append(" bytes failed with errno ")
                .append(errno);
        if (errno == ENOMEM) {
            long mappings = countLines(Path.of("/proc/self/maps"));
            String maxMapCount = firstLine(Path.of("/proc/sys/vm/max_map_count"));
            why.append(" (ENOMEM): the process holds ").append(mappings < 0 ? "an unknown number of" : mappings)
                    .append(" mappings and vm.max_map_count is ").append(maxMapCount == null ? "unknown" : maxMapCount)
                    .append("; near that limit, raise it (sysctl vm.max_map_count) or give the pool a larger chunkSize,")
                    .append(" else the system is out of memory or address space (see vm.overcommit_memory)");
        }
        return why.toString();
    }

    private static long countLines(Path file) {
        try (Stream<String> lines = Files.lines(file)) {
            return lines.count();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static String firstLine(Path file) {
        try (Stream<String> lines = Files.lines(file)) {
            return lines.findFirst().map(String::trim).orElse(null);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
