package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A phase-shifting mix on the general allocator: small objects (64 B-1 KiB),
 * then medium (4-64 KiB), then large (128 KiB-2 MiB). Each phase allocates
 * until the live bytes reach the target, then deletes 90% of the live objects
 * at random; the survivors stay through the later phases. Non-moving
 * allocators cannot compact the survivors, so what matters is how little
 * memory they pin.
 */
final class PhaseShiftWorkload implements Workload {

    private static final int[][] PHASES = {{64, 1024}, {4 * 1024, 64 * 1024}, {128 * 1024, 2 * 1024 * 1024}};

    private final Settings settings;
    private final int rounds;
    private final AtomicLong live;

    PhaseShiftWorkload(Settings settings, int rounds, AtomicLong live) {
        this.settings = settings;
        this.rounds = rounds;
        this.live = live;
    }

    @Override
    public String name() {
        return "phase";
    }

    @Override
    public void run(BufferSource source, Samples samples) {
        Random random = new Random(settings.seed() + 3);
        List<ByteBuf> objects = new ArrayList<>();
        long operations = 0;
        for (int round = 0; round < rounds; round++) {
            for (int[] phase : PHASES) {
                while (live.get() < settings.cacheBytes()) {
                    int size = Distributions.logUniform(random, phase[0], phase[1]);
                    ByteBuf buf = source.generalBuffer(size);
                    if (buf == null) {
                        break; // at the ceiling: this phase is as full as it gets
                    }
                    buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
                    objects.add(buf);
                    live.addAndGet(size);
                    if (++operations % settings.sampleEvery() == 0 && samples != null) {
                        samples.add(operations, live.get(), source);
                    }
                }
                Collections.shuffle(objects, random);
                int keep = objects.size() / 10;
                for (int i = objects.size() - 1; i >= keep; i--) {
                    ByteBuf buf = objects.remove(i);
                    live.addAndGet(-buf.capacity());
                    buf.release();
                    if (++operations % settings.sampleEvery() == 0 && samples != null) {
                        samples.add(operations, live.get(), source);
                    }
                }
            }
        }
        if (samples != null) {
            samples.add(operations, live.get(), source);
        }
        for (ByteBuf buf : objects) {
            live.addAndGet(-buf.capacity());
            buf.release();
        }
    }
}
