package io.slabwise;

/**
 * Builds a pool of the default settings, with a sequential allocator and a
 * block pool of the default stripes, closes it, and prints how many arenas
 * it got, last (after what the JVM prints when the pool frees its chunks);
 * run in a JVM told it has many processors.
 */
public final class ManyProcessorsMain {

    private ManyProcessorsMain() {
    }

    public static void main(String[] args) {
        PoolConfig config = PoolConfig.builder().chunkSize(1 << 20).chunkSource(ChunkSource.direct()).build();
        try (MemoryPool pool = new MemoryPool(config)) {
            Allocation a = new Allocation();
            pool.sequential("log").allocate(100, a);
            pool.free(a);
            pool.blocks("blocks").allocateBlock(a);
            pool.free(a);
        }
        System.out.println(Runtime.getRuntime().availableProcessors() + " processors: " + config.arenas() + " arenas");
    }
}
