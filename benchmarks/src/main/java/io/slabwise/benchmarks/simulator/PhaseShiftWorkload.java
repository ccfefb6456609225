package io.slabwise.benchmarks.simulator;

import io.netty.buffer.ByteBuf;
import io.slabwise.netty.BufferEvacuation;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
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
 *
 * <p>Its objects are of a category of their own ({@link BufferSource#PHASE}).
 * In the {@code -moving} workloads it owns them as a cache owns its entries
 * ({@link Owner}): its relocator moves the survivors and the current phase's
 * objects out of sparse chunks, and on Slabwise it compacts by itself every
 * eighth of the target it frees and after each phase's frees. The sequence of
 * allocations and releases is the same either way.
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
    private final Compacting compacting;

    /**
     * @param passes     how many passes to make ({@code Integer.MAX_VALUE}: until {@code stop})
     * @param finish     where to arrive at the end, holding the survivors; null to arrive nowhere (in the mix)
     * @param compacting how the workload moves its objects as their owner; null: they never move
     */
    PhaseShiftWorkload(Settings settings, int passes, BooleanSupplier stop, AtomicLong live, FinishLine finish,
                       Compacting compacting) {
        this.target = settings.cacheBytes();
        this.seed = settings.seed();
        this.passes = passes;
        this.stop = stop;
        this.live = live;
        this.finish = finish;
        this.compacting = compacting;
    }

    @Override
    public String name() {
        return compacting == null ? "phase" : "phase-moving";
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
        Owner owner = Owner.compacting(source, compacting, target);
        List<ByteBuf> survivors = new ArrayList<>();
        List<ByteBuf> born = new ArrayList<>();
        owner.register(BufferSource.PHASE, evacuation -> {
            moveAll(evacuation, survivors, owner);
            moveAll(evacuation, born, owner);
        });
        long held = 0;
        for (int pass = 0; pass < passes && !stop.getAsBoolean(); pass++) {
            if (pass > 0) {
                held -= release(survivors, survivors.size(), owner, source, samples);
            }
            for (int[] phase : PHASES) {
                while (held < target && !stop.getAsBoolean()) {
                    int size = Distributions.logUniform(random, phase[0], phase[1]);
                    ByteBuf buf = source.generalBuffer(BufferSource.PHASE, size);
                    if (buf == null) {
                        break; // at the ceiling: this phase is as full as it gets
                    }
                    buf.setByte(0, 1).setByte(size - 1, 1).writerIndex(size);
                    owner.lock();
                    born.add(buf);
                    owner.unlock();
                    held += size;
                    live.addAndGet(size);
                    samples.operation(source);
                }
                owner.lock();
                Collections.shuffle(born, random);
                owner.unlock();
                int freed = born.size() - born.size() * SURVIVOR_PERCENT / 100;
                held -= release(born, freed, owner, source, samples);
                owner.lock();
                survivors.addAll(born);
                born.clear();
                owner.unlock();
                owner.compactNow(); // the phase is over: pack its survivors with the earlier ones
            }
        }
        if (finish != null) {
            finish.arrive(source, samples);
        }
        release(survivors, survivors.size(), owner, source, null); // after the final sample: not counted
        owner.unregister();
    }

    /**
     * Releases the first {@code count} buffers of the list, leaving nulls in
     * their places (the whole list: emptying it), and counts each release into
     * {@code samples} and the owner's compaction step, unless {@code samples}
     * is null (the end of the run); returns the bytes released.
     */
    private long release(List<ByteBuf> buffers, int count, Owner owner, BufferSource source, Samples samples) {
        long bytes = 0;
        for (int i = 0; i < count; i++) {
            owner.lock();
            ByteBuf buf = buffers.set(i, null); // read under the lock: a relocator may have moved it
            owner.unlock();
            int size = buf.capacity();
            bytes += size;
            live.addAndGet(-size);
            buf.release();
            if (samples != null) {
                samples.operation(source);
                owner.released(size);
            }
        }
        owner.lock();
        buffers.removeIf(Objects::isNull);
        owner.unlock();
        return bytes;
    }

    /** A relocator's walk over one of the lists, with the owner's lock held; nulls are released entries. */
    private static void moveAll(BufferEvacuation evacuation, List<ByteBuf> buffers, Owner owner) {
        for (int i = 0; i < buffers.size() && evacuation.budgetLeft(); i++) {
            ByteBuf buf = buffers.get(i);
            if (buf != null) {
                buffers.set(i, owner.moved(evacuation, buf));
            }
        }
    }
}
