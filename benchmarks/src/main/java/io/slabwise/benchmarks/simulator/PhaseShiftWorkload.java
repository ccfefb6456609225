package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * A phase-shifting mix on the general allocator. One pass is three phases:
 *
 * <pre>
 *  small  64 B-1 KiB    fill to target ─▶ free 90% of the small objects at random
 *  medium 4-64 KiB      fill to target ─▶ free 90% of the medium objects at random
 *  large  128 KiB-2 MiB fill to target ─▶ free 90% of the large objects at random
 * </pre>
 *
 * A phase allocates until everything the workload holds (its own objects and
 * the survivors of earlier phases) reaches the target; the 10% of each phase
 * that survive stay to the end of the pass. A non-moving allocator cannot
 * compact them, so what this measures is how much memory the survivors pin
 * and whether the next phase, of another size, can use the space around them.
 *
 * <p>On its own the workload makes one pass and takes its final sample with
 * the survivors of all three phases live. In the mix it makes passes until
 * told to stop, releasing a pass's survivors before the next pass.
 */
final class PhaseShiftWorkload implements Workload {

    private static final int[][] PHASES = {{64, 1024}, {4 * 1024, 64 * 1024}, {128 * 1024, 2 * 1024 * 1024}};
    private static final int SURVIVOR_PERCENT = 10;

    private final long target;
    private final long seed;
    private final int passes;
    private final BooleanSupplier stop;
    private final AtomicLong live;
    private final FinishLine finish;

    /**
     * @param passes how many passes to make ({@code Integer.MAX_VALUE}: until {@code stop})
     * @param finish where to arrive at the end, holding the survivors; null to arrive nowhere (in the mix)
     */
    PhaseShiftWorkload(Settings settings, int passes, BooleanSupplier stop, AtomicLong live, FinishLine finish) {
        this.target = settings.cacheBytes();
        this.seed = settings.seed();
        this.passes = passes;
        this.stop = stop;
        this.live = live;
        this.finish = finish;
    }

    @Override
    public String name() {
        return "phase";
    }

    @Override
    public long expectedOperations() {
        double perPass = 0;
        for (int[] phase : PHASES) {
            perPass += (2 - SURVIVOR_PERCENT / 100.0) * target / Distributions.logUniformMean(phase[0], phase[1]);
        }
        return (long) (perPass * Math.min(passes, 1000));
    }

    @Override
    public void run(BufferSource source, Samples samples) throws InterruptedException {
        Random random = new Random(seed + 3);
        List<ByteBuf> survivors = new ArrayList<>();
        long held = 0;
        for (int pass = 0; pass < passes && !stop.getAsBoolean(); pass++) {
            if (pass > 0) {
                held -= release(survivors, source, samples);
            }
            for (int[] phase : PHASES) {
                List<ByteBuf> born = new ArrayList<>();
                while (held < target && !stop.getAsBoolean()) {
                    int size = Distributions.logUniform(random, phase[0], phase[1]);
                    ByteBuf buf = source.generalBuffer(size);
                    if (buf == null) {
                        break; // at the ceiling: this phase is as full as it gets
                    }
                    buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
                    born.add(buf);
                    held += size;
                    live.addAndGet(size);
                    samples.operation(source);
                }
                Collections.shuffle(born, random);
                int freed = born.size() - born.size() * SURVIVOR_PERCENT / 100;
                held -= release(born.subList(0, freed), source, samples);
                survivors.addAll(born);
            }
        }
        if (finish != null) {
            finish.arrive(source, samples);
        }
        release(survivors, source, null); // after the final sample: not counted
    }

    /**
     * Releases and removes every buffer of the list, counting each release
     * into {@code samples} unless it is null; returns the bytes released.
     */
    private long release(List<ByteBuf> buffers, BufferSource source, Samples samples) {
        long bytes = 0;
        for (ByteBuf buf : buffers) {
            int size = buf.capacity();
            bytes += size;
            live.addAndGet(-size);
            buf.release();
            if (samples != null) {
                samples.operation(source);
            }
        }
        buffers.clear();
        return bytes;
    }
}
