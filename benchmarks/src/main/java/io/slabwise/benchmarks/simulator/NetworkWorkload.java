package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Short-lived network buffers: bursts of 1 to 64 buffers of 256 B to 16 KiB,
 * written and released together, until told to stop.
 */
final class NetworkWorkload implements Workload {

    private final Settings settings;
    private final AtomicBoolean stop;
    private final AtomicLong live;

    NetworkWorkload(Settings settings, AtomicBoolean stop, AtomicLong live) {
        this.settings = settings;
        this.stop = stop;
        this.live = live;
    }

    @Override
    public String name() {
        return "network";
    }

    @Override
    public void run(BufferSource source, Samples samples) {
        Random random = new Random(settings.seed() + 4);
        ByteBuf[] burst = new ByteBuf[64];
        while (!stop.get()) {
            int n = 1 + random.nextInt(burst.length);
            long bytes = 0;
            for (int i = 0; i < n; i++) {
                int size = Distributions.logUniform(random, 256, 16 * 1024);
                ByteBuf buf = source.generalBuffer(size);
                if (buf == null) {
                    n = i;
                    break;
                }
                buf.writeZero(Math.min(size, 64));
                burst[i] = buf;
                bytes += size;
            }
            live.addAndGet(bytes);
            for (int i = 0; i < n; i++) {
                burst[i].release();
                burst[i] = null;
            }
            live.addAndGet(-bytes);
        }
    }
}
