package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Netty's own pooled direct buffer as the model: the same seeded random
 * sequence of operations (indices in and out of bounds, growth and shrinking,
 * discards, NIO views, derived and retained buffers, copies within and
 * between buffers) runs on a buffer of Netty's {@link PooledByteBufAllocator}
 * and on one of each Slabwise allocator of the contract suites (native access,
 * no memory address, recycling). After every step the result (or the
 * exception's type) and the buffer's state (capacity, maximum capacity,
 * indices, reference count, contents) must be the same.
 *
 * <p>Three known differences are aligned or left out rather than compared: a
 * buffer that grows takes the capacity Netty's took (both grow first into
 * what their allocation set aside, and the two set aside different sizes
 * once a buffer has moved), the bytes past the old capacity,
 * which neither defines, are zeroed in both, and an empty NIO source is not
 * set at an index out of bounds (Netty accepts it, Slabwise refuses it).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NettyDifferentialTest {

    private static final PooledByteBufAllocator NETTY = new PooledByteBufAllocator(true);
    private static final int STEPS = 3000;

    /** One operation of the sequence, with a name for the failure message. */
    private record Op(String name, Function<ByteBuf, Object> apply) {
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
    void theSameOperationsGiveTheSameResults(long seed) {
        for (SlabwiseAllocator slabwise : new SlabwiseAllocator[] {SlabwiseContractFixture.ALLOCATOR,
                SlabwiseContractFixture.NO_ADDRESS, SlabwiseContractFixture.RECYCLING}) {
            compare(slabwise, seed);
        }
    }

    private static void compare(SlabwiseAllocator slabwise, long seed) {
        Random random = new Random(seed);
        int capacity = random.nextInt(3) == 0 ? random.nextInt(20000) : random.nextInt(300);
        int maxCapacity = random.nextBoolean() ? Integer.MAX_VALUE : capacity + random.nextInt(40000);
        ByteBuf model = NETTY.directBuffer(capacity, maxCapacity).setZero(0, capacity);
        ByteBuf tested = slabwise.directBuffer(capacity, maxCapacity).setZero(0, capacity);
        List<String> log = new ArrayList<>();
        for (int step = 0; step < STEPS && model.refCnt() > 0; step++) {
            Op op = randomOp(random, model.capacity());
            int capacityBefore = model.capacity();
            String expected = outcome(model, op);
            String actual = outcome(tested, op);
            log.add(step + ": " + op.name() + " -> " + expected);
            if (!expected.equals(actual)) {
                fail(failure(slabwise, seed, step, op, "netty=" + expected + " slabwise=" + actual, log));
            }
            if (model.refCnt() > 0 && model.capacity() > capacityBefore) {
                if (tested.capacity() != model.capacity()) {
                    tested.capacity(model.capacity()); // the growth policies differ: align them
                }
                int from = Math.max(capacityBefore, model.writerIndex()); // bytes of a growth are undefined
                model.setZero(from, model.capacity() - from);
                tested.setZero(from, tested.capacity() - from);
            }
            String modelState = state(model);
            String testedState = state(tested);
            if (!modelState.equals(testedState)) {
                fail(failure(slabwise, seed, step, op, "state: netty=" + modelState + " slabwise=" + testedState, log));
            }
        }
        if (model.refCnt() > 0) {
            model.release(model.refCnt());
        }
        if (tested.refCnt() > 0) {
            tested.release(tested.refCnt());
        }
    }

    private static String failure(SlabwiseAllocator slabwise, long seed, int step, Op op, String what, List<String> log) {
        return slabwise + " seed " + seed + " step " + step + " " + op.name() + ": " + what + "\n"
                + String.join("\n", log.subList(Math.max(0, log.size() - 15), log.size()));
    }

    /** What an operation returned, as text (a buffer's contents, not its identity), or the type of what it threw. */
    private static String outcome(ByteBuf buf, Op op) {
        try {
            Object result = op.apply().apply(buf);
            if (result instanceof ByteBuf) {
                return "buf";
            }
            if (result instanceof ByteBuffer) {
                ByteBuffer nio = (ByteBuffer) result;
                return "nio(" + nio.position() + "," + nio.limit() + "," + nio.order() + "," + nio.isDirect() + ","
                        + Arrays.toString(remaining(nio)) + ")";
            }
            if (result instanceof ByteBuffer[]) {
                StringBuilder text = new StringBuilder("[");
                for (ByteBuffer nio : (ByteBuffer[]) result) {
                    text.append(nio.remaining()).append(Arrays.toString(remaining(nio))).append(';');
                }
                return text.toString();
            }
            return String.valueOf(result);
        } catch (RuntimeException e) {
            return "threw " + e.getClass().getSimpleName();
        }
    }

    private static byte[] remaining(ByteBuffer nio) {
        byte[] bytes = new byte[nio.remaining()];
        nio.duplicate().get(bytes);
        return bytes;
    }

    private static String state(ByteBuf buf) {
        String state = "capacity=" + buf.capacity() + " max=" + buf.maxCapacity() + " reader=" + buf.readerIndex()
                + " writer=" + buf.writerIndex() + " refCnt=" + buf.refCnt();
        if (buf.refCnt() > 0) {
            byte[] bytes = new byte[buf.capacity()];
            buf.getBytes(0, bytes);
            state += " contents=" + Arrays.hashCode(bytes);
        }
        return state;
    }

    /** A random operation at an index and a length around the buffer's capacity, some out of bounds. */
    private static Op randomOp(Random random, int bufferCapacity) {
        int capacity = Math.max(1, bufferCapacity);
        int i = random.nextInt(capacity + 8) - 4;
        int len = random.nextInt(Math.min(capacity, 64) + 8) - 2;
        int n = Math.max(0, len);
        long v = random.nextLong();
        byte[] data = new byte[n];
        random.nextBytes(data);
        int kind = random.nextInt(40);
        boolean flag = random.nextBoolean();
        String name = "op" + kind + "(i=" + i + ", len=" + len + ")";
        switch (kind) {
            case 0: return new Op(name, b -> b.writeBytes(data));
            case 1: return new Op(name, b -> b.readBytes(n).release());
            case 2: return new Op(name, b -> b.setLong(i, v));
            case 3: return new Op(name, b -> b.getLong(i));
            case 4: return new Op(name, b -> b.getUnsignedMedium(i));
            case 5: return new Op(name, b -> b.setMediumLE(i, (int) v));
            case 6: return new Op(name, b -> b.capacity(Math.max(-1, i * (flag ? 1 : 3))));
            case 7: return new Op(name, b -> b.ensureWritable(n * 37, flag));
            case 8: return new Op(name, ByteBuf::discardReadBytes);
            case 9: return new Op(name, ByteBuf::discardSomeReadBytes);
            case 10: return new Op(name, b -> b.nioBuffer(i, len));
            case 11: return new Op(name, b -> b.nioBuffers(i, len));
            case 12: return new Op(name, b -> {
                ByteBuffer nio = b.internalNioBuffer(i, len);
                return nio.remaining() + Arrays.toString(remaining(nio)); // its position is the implementation's
            });
            case 13: return new Op(name, b -> {
                if (n == 0) {
                    return "skipped"; // Netty takes an empty source at any index; Slabwise checks the index
                }
                ByteBuffer source = ByteBuffer.allocateDirect(n + 3);
                source.position(3);
                source.put(data).position(3);
                b.setBytes(i, source);
                return source.position();
            });
            case 14: return new Op(name, b -> {
                ByteBuffer target = ByteBuffer.allocate(n + 2);
                target.position(1).limit(1 + n);
                b.getBytes(i, target);
                return target.position() + Arrays.toString(target.array());
            });
            case 15: return new Op(name, b -> {
                ByteBuf slice = b.retainedSlice(Math.max(0, i), n);
                try {
                    return slice.toString(ISO_8859_1) + slice.readerIndex() + "/" + slice.writerIndex();
                } finally {
                    slice.release();
                }
            });
            case 16: return new Op(name, b -> {
                ByteBuf duplicate = b.retainedDuplicate();
                try {
                    return duplicate.readerIndex() + "/" + duplicate.writerIndex() + "/" + duplicate.getByte(Math.max(0, i));
                } finally {
                    duplicate.release();
                }
            });
            case 17: return new Op(name, ByteBuf::maxWritableBytes);
            case 18: return new Op(name, b -> b.setIndex(Math.max(0, i), Math.max(0, i + len)));
            case 19: return new Op(name, b -> {
                ByteBuf copy = b.copy(Math.max(0, i), n);
                try {
                    return copy.capacity() + "/" + copy.maxCapacity() + "/" + copy.toString(ISO_8859_1);
                } finally {
                    copy.release();
                }
            });
            case 20: return new Op(name, b -> len == 0 ? "skipped" : b.setZero(i, len));
            case 21: return new Op(name, b -> b.writeZero(n));
            case 22: return new Op(name, b -> b.indexOf(i, i + len, n > 0 ? data[0] : 0));
            case 23: return new Op(name, b -> b.bytesBefore((byte) v));
            case 24: return new Op(name, b -> {
                ByteBuf duplicate = b.duplicate();
                duplicate.capacity(Math.max(0, i));
                return duplicate.capacity() + "/" + duplicate.readerIndex() + "/" + duplicate.writerIndex();
            });
            case 25: return new Op(name, b -> {
                ByteBuf slice = b.slice(Math.max(0, i), n);
                slice.writerIndex(0).writeBytes(data);
                return slice.writerIndex();
            });
            case 26: return new Op(name, b -> {
                ByteBuf slice = b.slice();
                slice.discardReadBytes();
                return slice.readerIndex() + "/" + slice.writerIndex();
            });
            case 27: return new Op(name, b -> b.isWritable(len));
            case 28: return new Op(name, b -> b.writeCharSequence("h\u00e9llo" + len, UTF_8));
            case 29: return new Op(name, b -> b.getCharSequence(i, len, US_ASCII));
            case 30: return new Op(name, b -> {
                ByteBuf target = Unpooled.directBuffer(n + 2, n + 2);
                try {
                    b.getBytes(i, target, 1, n);
                    return target.toString(ISO_8859_1);
                } finally {
                    target.release();
                }
            });
            case 31: return new Op(name, b -> b.setBytes(i, Unpooled.wrappedBuffer(data), 0, n));
            case 32: return new Op(name, b -> b.setBytes(i, b, Math.max(0, i - 3), n));
            case 33: return new Op(name, b -> b.getBytes(i, b, Math.max(0, i + 5), n));
            case 34: return new Op(name, b -> b.readSlice(n / 2).getByte(0));
            case 35: return new Op(name, b -> {
                ByteBuf slice = b.readRetainedSlice(n / 2);
                slice.release();
                return slice.capacity();
            });
            case 36: return new Op(name, b -> b.ensureWritable(n * 101));
            case 37: return new Op(name, b -> {
                ByteBuf source = Unpooled.directBuffer(n + 2).writeBytes(data);
                try {
                    return b.writeBytes(source);
                } finally {
                    source.release();
                }
            });
            case 38: return new Op(name, ByteBuf::capacity);
            default: return new Op(name, b -> b.hashCode() + "/" + b.toString(ISO_8859_1));
        }
    }
}
