package io.slabwise;

import java.lang.ref.WeakReference;
import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Gives idle chunks back to the operating system once they have been idle for
 * the pool's decay time, like jemalloc's dirty-page decay. One daemon thread
 * per JVM ({@code slabwise-chunk-decay}) visits every live pool once a second;
 * it holds pools weakly, so a pool that is no longer used can be collected,
 * and it starts with the first pool that has a finite decay.
 */
final class ChunkDecay {

    private static final long PERIOD_MILLIS = 1000;
    private static final ConcurrentLinkedQueue<WeakReference<MemoryPool>> POOLS = new ConcurrentLinkedQueue<>();
    private static volatile Thread thread;

    private ChunkDecay() {
    }

    static void register(MemoryPool pool) {
        POOLS.add(new WeakReference<>(pool));
        if (thread == null) {
            synchronized (ChunkDecay.class) {
                if (thread == null) {
                    Thread t = new Thread(ChunkDecay::run, "slabwise-chunk-decay");
                    t.setDaemon(true);
                    t.start();
                    thread = t;
                }
            }
        }
    }

    /** Stops visiting {@code pool}; called when it is closed. */
    static void unregister(MemoryPool pool) {
        POOLS.removeIf(ref -> {
            MemoryPool registered = ref.get();
            return registered == null || registered == pool;
        });
    }

    private static void run() {
        while (true) {
            try {
                Thread.sleep(PERIOD_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
            for (Iterator<WeakReference<MemoryPool>> it = POOLS.iterator(); it.hasNext(); ) {
                MemoryPool pool = it.next().get();
                if (pool == null) {
                    it.remove();
                } else {
                    try {
                        pool.decay();
                    } catch (RuntimeException e) {
                        // a failing chunk source must not stop decay for the other pools
                    }
                }
            }
        }
    }
}
