package io.slabwise.netty;

import java.nio.ByteBuffer;
import java.nio.channels.ScatteringByteChannel;

/**
 * A channel for tests that reads into one buffer at a time, always open:
 * subclasses say what {@link #read(ByteBuffer)} puts there; scattering reads
 * are not supported.
 */
abstract class SingleBufferChannel implements ScatteringByteChannel {

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) {
        throw new UnsupportedOperationException();
    }

    @Override
    public long read(ByteBuffer[] dsts) {
        throw new UnsupportedOperationException();
    }

    @Override
    public boolean isOpen() {
        return true;
    }

    @Override
    public void close() {
    }
}
