package io.slabwise.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.slabwise.Allocation;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;

/**
 * What the relocation tests know of a buffer: a checksum of all its bytes
 * (its whole capacity, readable or not), random contents, and the pool
 * memory under it, reached through any leak-detection wrapper.
 */
final class BufferChecksums {

    private BufferChecksums() {
    }

    /** A checksum of every byte of {@code buf}'s capacity; reads absolutely, so any thread may call it. */
    static long crc(ByteBuf buf) {
        CRC32C crc = new CRC32C();
        for (ByteBuffer part : buf.nioBuffers(0, buf.capacity())) {
            crc.update(part);
        }
        return crc.getValue() ^ ((long) buf.capacity() << 32);
    }

    /** Fills the whole capacity of {@code buf} with random bytes; returns their checksum. */
    static long fill(ByteBuf buf, Random random) {
        byte[] bytes = new byte[buf.capacity()];
        random.nextBytes(bytes);
        buf.setBytes(0, bytes);
        return crc(buf);
    }

    /** Overwrites a random range of {@code buf} with random bytes; returns the new checksum of the whole buffer. */
    static long overwrite(ByteBuf buf, Random random) {
        int from = random.nextInt(buf.capacity());
        byte[] bytes = new byte[1 + random.nextInt(buf.capacity() - from)];
        random.nextBytes(bytes);
        buf.setBytes(from, bytes);
        return crc(buf);
    }

    /** The buffer under the leak detector's wrappers: a Slabwise buffer or a composite. */
    static ByteBuf root(ByteBuf buf) {
        ByteBuf b = buf;
        while (!(b instanceof SlabwiseDirectByteBuf) && !(b instanceof CompositeByteBuf) && b.unwrap() != null) {
            b = b.unwrap();
        }
        return b;
    }

    /** The pool memory of a buffer, one allocation for a plain buffer and one per part for a composite of blocks. */
    static List<Allocation> allocations(ByteBuf buf) {
        ByteBuf root = root(buf);
        List<Allocation> out = new ArrayList<>();
        if (root instanceof SlabwiseDirectByteBuf) {
            out.add(((SlabwiseDirectByteBuf) root).allocation());
        } else {
            for (ByteBuf component : (CompositeByteBuf) root) {
                out.add(((SlabwiseDirectByteBuf) root(component)).allocation());
            }
        }
        return out;
    }
}
