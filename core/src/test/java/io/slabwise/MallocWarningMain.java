package io.slabwise;

/**
 * Run in a forked JVM by {@link MallocWarningTest}: builds and closes one
 * pool, over the built-in direct source ({@code direct}) or over a source of
 * the caller's own that takes its regions from it ({@code own}), and allocates
 * once, so that whatever the pool logs at start-up is in the output.
 */
public final class MallocWarningMain {

    private MallocWarningMain() {
    }

    /** Entry point; the argument is {@code direct} or {@code own}. */
    public static void main(String[] args) {
        PoolConfig.Builder config = PoolConfig.builder();
        if (args[0].equals("own")) {
            config.chunkSource(PoolMemory.chunkByChunk()); // a source of the caller's own
        }
        try (MemoryPool pool = new MemoryPool(config.build())) {
            Allocation a = new Allocation();
            pool.allocate(1024, a);
            pool.free(a);
        }
    }
}
