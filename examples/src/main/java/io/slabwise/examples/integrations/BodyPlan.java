package io.slabwise.examples.integrations;

import io.netty.buffer.ByteBuf;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.CRC32C;

/**
 * The bodies an example sends: sizes drawn with a seeded {@link Random} from
 * 1 byte to a largest size (log-uniform, so every order of magnitude gets its
 * share), the first two being exactly 1 byte and the largest, until their sum
 * reaches the bytes asked for. The content of body {@code i} is a window of a
 * seeded random pattern at an offset of its own, so bodies differ and any of
 * them can be written again or checked without keeping it.
 *
 * <p>Immutable and safe to share between threads.
 */
public final class BodyPlan {

    /** The least each example moves each way: 64 MiB. */
    public static final long MIN_BYTES_EACH_WAY = 64L << 20;
    /** The largest body by default: 5 MiB, above the pool's 4 MiB chunk, so it takes a dedicated region. */
    public static final int LARGEST_BODY = 5 << 20;

    private final byte[] pattern;
    private final int[] sizes;
    private final int[] offsets;
    private final int[] crcs;
    private final long totalBytes;

    private BodyPlan(byte[] pattern, int[] sizes, int[] offsets) {
        this.pattern = pattern;
        this.sizes = sizes;
        this.offsets = offsets;
        this.crcs = new int[sizes.length];
        long total = 0;
        for (int i = 0; i < sizes.length; i++) {
            CRC32C crc = new CRC32C();
            crc.update(pattern, offsets[i], sizes[i]);
            crcs[i] = (int) crc.getValue();
            total += sizes[i];
        }
        this.totalBytes = total;
    }

    /**
     * Bodies of 1 byte to {@code largest} bytes adding up to at least {@code totalBytes}.
     *
     * @throws IllegalArgumentException when {@code largest} is below 1 or {@code totalBytes} below 1
     */
    public static BodyPlan create(long seed, long totalBytes, int largest) {
        if (largest < 1 || totalBytes < 1) {
            throw new IllegalArgumentException("largest=" + largest + " totalBytes=" + totalBytes);
        }
        Random random = new Random(seed);
        byte[] pattern = new byte[largest + (64 << 10)];
        random.nextBytes(pattern);
        int[] sizes = new int[16];
        int[] offsets = new int[16];
        int n = 0;
        long sum = 0;
        double logLargest = Math.log(largest);
        while (sum < totalBytes) {
            int size = n == 0 ? 1 : n == 1 ? largest
                    : (int) Math.max(1, Math.min(largest, Math.round(Math.exp(random.nextDouble() * logLargest))));
            if (n == sizes.length) {
                sizes = Arrays.copyOf(sizes, n * 2);
                offsets = Arrays.copyOf(offsets, n * 2);
            }
            sizes[n] = size;
            offsets[n] = random.nextInt(pattern.length - size + 1);
            sum += size;
            n++;
        }
        return new BodyPlan(pattern, Arrays.copyOf(sizes, n), Arrays.copyOf(offsets, n));
    }

    /** The plan the examples and their tests use: {@link #MIN_BYTES_EACH_WAY} in bodies of 1 B to {@link #LARGEST_BODY}. */
    public static BodyPlan standard(long seed) {
        return create(seed, MIN_BYTES_EACH_WAY, LARGEST_BODY);
    }

    /** How many bodies. */
    public int bodies() {
        return sizes.length;
    }

    /** The size of body {@code i}. */
    public int size(int i) {
        return sizes[i];
    }

    /** The largest body's size. */
    public int largest() {
        return Arrays.stream(sizes).max().orElse(0);
    }

    /** The sum of every body's size. */
    public long totalBytes() {
        return totalBytes;
    }

    /** The CRC32C of body {@code i}. */
    public int crc(int i) {
        return crcs[i];
    }

    /** Writes body {@code i} into {@code out} at its writer index. */
    public void write(int i, ByteBuf out) {
        out.writeBytes(pattern, offsets[i], sizes[i]);
    }

    /** Body {@code i} as a new array. */
    public byte[] toArray(int i) {
        return Arrays.copyOfRange(pattern, offsets[i], offsets[i] + sizes[i]);
    }

    /** Whether {@code bytes} are body {@code i}, byte for byte. */
    public boolean matches(int i, byte[] bytes) {
        return Arrays.equals(pattern, offsets[i], offsets[i] + sizes[i], bytes, 0, bytes.length);
    }

    /** The CRC32C of a buffer's readable bytes; its indices do not move. */
    public static int crc(ByteBuf buf) {
        CRC32C crc = new CRC32C();
        if (buf.nioBufferCount() > 0) {
            for (ByteBuffer part : buf.nioBuffers()) {
                crc.update(part);
            }
        } else {
            byte[] copy = new byte[buf.readableBytes()];
            buf.getBytes(buf.readerIndex(), copy);
            crc.update(copy);
        }
        return (int) crc.getValue();
    }

    /** The CRC32C of an array. */
    public static int crc(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes);
        return (int) crc.getValue();
    }
}
