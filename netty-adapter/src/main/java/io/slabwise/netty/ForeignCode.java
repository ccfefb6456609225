package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.util.ByteProcessor;
import io.netty.util.internal.PlatformDependent;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.ScatteringByteChannel;

/**
 * The accesses of a {@link SlabwiseDirectByteBuf} in the middle of which code
 * we do not control runs: a stream's read or write, a {@link ByteProcessor}
 * walking the bytes, a channel's read. That code may release the buffer or
 * change its capacity (and so move it), so every access after it goes through
 * the buffer's checked methods again, or it would read or write memory that by
 * then belongs to other buffers. Netty's own buffers do not check again.
 * Plain gets and sets call nothing and pay nothing; a walk pays one check per
 * eight bytes.
 */
final class ForeignCode {

    /** The most bytes a stream copy holds on the heap at once. */
    private static final int STREAM_COPY_CHUNK = 8192;

    private ForeignCode() {
    }

    /**
     * Writes {@code length} bytes of {@code buf} from {@code index} to
     * {@code out}, a chunk at a time, each chunk read through the buffer's
     * checked {@code getBytes}.
     */
    static void copyOut(ByteBuf buf, int index, OutputStream out, int length) throws IOException {
        byte[] tmp = new byte[Math.min(length, STREAM_COPY_CHUNK)];
        for (int done = 0; done < length; ) {
            int n = Math.min(tmp.length, length - done);
            buf.getBytes(index + done, tmp, 0, n);
            out.write(tmp, 0, n);
            done += n;
        }
    }

    /**
     * Reads at most {@code length} bytes from {@code in} and writes what came
     * into {@code buf} at {@code index} through its checked {@code setBytes}.
     *
     * @return the bytes read, or what the stream answered when it read none
     */
    static int copyIn(ByteBuf buf, int index, InputStream in, int length) throws IOException {
        byte[] tmp = new byte[length];
        int read = in.read(tmp, 0, length);
        if (read <= 0) {
            return read;
        }
        buf.setBytes(index, tmp, 0, read);
        return read;
    }

    /**
     * The first index in {@code [start, end)} of {@code buf} where
     * {@code processor} stops, or -1. The bytes are read eight at a time, each
     * word with a check, and handed over from the word: what the processor
     * gets was the buffer's when it was read, whatever the processor does to
     * the buffer.
     */
    static int firstStop(ByteBuf buf, int start, int end, ByteProcessor processor) {
        try {
            int i = start;
            for (; end - i >= Long.BYTES; i += Long.BYTES) {
                long word = buf.getLong(i); // big-endian: byte i + k is the k-th from the top
                for (int k = 0; k < Long.BYTES; k++) {
                    if (!processor.process((byte) (word >>> (56 - (k << 3))))) {
                        return i + k;
                    }
                }
            }
            for (; i < end; i++) {
                if (!processor.process(buf.getByte(i))) {
                    return i;
                }
            }
        } catch (Exception e) {
            PlatformDependent.throwException(e);
        }
        return -1;
    }

    /** The last index in {@code [start, end)} where {@code processor} stops, or -1; read as {@link #firstStop} reads. */
    static int lastStop(ByteBuf buf, int start, int end, ByteProcessor processor) {
        try {
            int i = end;
            for (; i - start >= Long.BYTES; i -= Long.BYTES) {
                long word = buf.getLong(i - Long.BYTES);
                for (int k = Long.BYTES - 1; k >= 0; k--) {
                    if (!processor.process((byte) (word >>> (56 - (k << 3))))) {
                        return i - Long.BYTES + k;
                    }
                }
            }
            for (i--; i >= start; i--) {
                if (!processor.process(buf.getByte(i))) {
                    return i;
                }
            }
        } catch (Exception e) {
            PlatformDependent.throwException(e);
        }
        return -1;
    }

    /** Reads from {@code in} into {@code dst}: the bytes read, or -1 for a closed channel, as Netty's buffers answer. */
    static int readFrom(ScatteringByteChannel in, ByteBuffer dst) throws IOException {
        try {
            return in.read(dst);
        } catch (ClosedChannelException ignored) {
            return -1;
        }
    }

    /** {@link #readFrom(ScatteringByteChannel, ByteBuffer)} at {@code position} of a file. */
    static int readFrom(FileChannel in, ByteBuffer dst, long position) throws IOException {
        try {
            return in.read(dst, position);
        } catch (ClosedChannelException ignored) {
            return -1;
        }
    }
}
