package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * Short-lived network buffers, as a server's I/O threads use them: bursts of
 * 1 to 64 buffers of 256 B to 16 KiB (log-uniform) from the general
 * allocator, written and then released together, until told to stop. Runs
 * only inside the mix.
 */
final class NetworkWorkload implements Workload {

    private static final int MAX_BURST = 64;

    private final long seed;
    private final BooleanSupplier stop;
    private final AtomicLong live;

    NetworkWorkload(Settings settings, BooleanSupplier stop, AtomicLong live) {
        this.seed = settings.seed();
        this.stop = stop;
        this.live = live;
    }

    @Override
    public String name() {
        return "network";
    }

    @Override
    public long expectedOperations() {
        return 0; // runs as long as the others do
    }

    @Override
    public void run(BufferSource source, Samples samples) {
        Random random = new Random(seed + 4);
        ByteBuf[] burst = new ByteBuf[MAX_BURST];
        while (!stop.getAsBoolean()) {
            int n = 1 + random.nextInt(MAX_BURST);
            for (int i = 0; i < n; i++) {
                int size = Distributions.logUniform(random, 256, 16 * 1024);
                ByteBuf buf = source.generalBuffer(size);
                if (buf == null) {
                    n = i; // at the ceiling under a wait that timed out: send what we have
                    break;
                }
                buf.writeZero(Math.min(size, 64));
                burst[i] = buf;
                live.addAndGet(size);
                samples.operation(source);
            }
            for (int i = 0; i < n; i++) {
                live.addAndGet(-burst[i].capacity());
                burst[i].release();
                burst[i] = null;
                samples.operation(source);
            }
        }
    }
}
