package io.slabwise.netty;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.ResourceLeakDetector;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * A Slabwise buffer's reference count changed by two threads at once. The
 * count is a plain {@code int} changed only by compare-and-set (see
 * {@code SlabwiseDirectByteBuf}); these tests show that the memory goes back
 * exactly once, by the release that takes the last reference, and never while
 * a reference is held. A release that lost an update would leave the count
 * above 0 or free the buffer twice (the pool then throws "double free", which
 * jcstress reports as an error).
 *
 * <p>Results: {@code [first actor, second actor, the count after both]}, an
 * actor's result being 1 when its release returned true, 0 when false, and -1
 * when it got {@link IllegalReferenceCountException}.
 */
public final class BufferReferenceCountTest {

    /** One allocator for every sample: buffers of 64 bytes, no leak detector wrapping them. */
    static final SlabwiseAllocator ALLOCATOR;

    static {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
        ALLOCATOR = SlabwiseAllocator.builder().chunkSize(1 << 20).build();
    }

    private BufferReferenceCountTest() {
    }

    static int release(ByteBuf buf) {
        try {
            return buf.release() ? 1 : 0;
        } catch (IllegalReferenceCountException e) {
            return -1;
        }
    }

    /** Two references, released at once: exactly one release is the last. */
    @JCStressTest
    @Outcome(id = {"1, 0, 0", "0, 1, 0"}, expect = ACCEPTABLE, desc = "One release took the last reference and freed the buffer.")
    @Outcome(expect = FORBIDDEN, desc = "A lost update: both or neither freed it, or a reference is left.")
    @State
    public static class TwoReleases {
        private final ByteBuf buf = ALLOCATOR.directBuffer(64).retain();

        @Actor
        public void first(III_Result r) {
            r.r1 = release(buf);
        }

        @Actor
        public void second(III_Result r) {
            r.r2 = release(buf);
        }

        @Arbiter
        public void count(III_Result r) {
            r.r3 = buf.refCnt();
        }
    }

    /** One reference, released by both threads (the caller's bug): one frees it, the other is told. */
    @JCStressTest
    @Outcome(id = {"1, -1, 0", "-1, 1, 0"}, expect = ACCEPTABLE,
            desc = "One release freed the buffer; the other got IllegalReferenceCountException.")
    @Outcome(expect = FORBIDDEN, desc = "Freed twice, or not at all.")
    @State
    public static class DoubleRelease {
        private final ByteBuf buf = ALLOCATOR.directBuffer(64);

        @Actor
        public void first(III_Result r) {
            r.r1 = release(buf);
        }

        @Actor
        public void second(III_Result r) {
            r.r2 = release(buf);
        }

        @Arbiter
        public void count(III_Result r) {
            r.r3 = buf.refCnt();
        }
    }

    /** Two references: one thread releases its own while the other retains and releases: nothing is freed. */
    @JCStressTest
    @Outcome(id = "0, 0, 1", expect = ACCEPTABLE, desc = "Neither release was the last; one reference is left.")
    @Outcome(expect = FORBIDDEN, desc = "A release freed a buffer still referenced, or the count is wrong.")
    @State
    public static class RetainAgainstRelease {
        private final ByteBuf buf = ALLOCATOR.directBuffer(64).retain();

        @Actor
        public void release(III_Result r) {
            r.r1 = BufferReferenceCountTest.release(buf);
        }

        @Actor
        public void retainAndRelease(III_Result r) {
            buf.retain();
            r.r2 = BufferReferenceCountTest.release(buf);
        }

        @Arbiter
        public void count(III_Result r) {
            r.r3 = buf.refCnt();
            if (r.r3 == 1) {
                buf.release(); // the last reference: back to the pool, so samples do not pile up
            }
        }
    }
}
