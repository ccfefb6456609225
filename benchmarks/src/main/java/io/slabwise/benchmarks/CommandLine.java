package io.slabwise.benchmarks;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The command lines of the benchmark programs (the simulator, the thread-churn
 * benchmark): {@code --name value} options and {@code --flag} flags, refused
 * when unknown.
 */
public final class CommandLine {

    private CommandLine() {
    }

    /**
     * Parses {@code args}: each option takes the next argument as its value,
     * each flag stands alone and reads {@code "true"}.
     *
     * @throws IllegalArgumentException for an unknown argument or an option without a value
     */
    public static Map<String, String> parse(String[] args, Set<String> options, Set<String> flags) {
        Map<String, String> parsed = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String key = args[i].startsWith("--") ? args[i].substring(2) : null;
            if (key == null || !(options.contains(key) || flags.contains(key))) {
                throw new IllegalArgumentException("unknown argument: " + args[i] + " (try --help)");
            }
            if (flags.contains(key)) {
                parsed.put(key, "true");
            } else if (i + 1 < args.length) {
                parsed.put(key, args[++i]);
            } else {
                throw new IllegalArgumentException("--" + key + " needs a value");
            }
        }
        return parsed;
    }
}
