package io.slabwise;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * Reads the native address of a direct {@link ByteBuffer}.
 *
 * <p>This is the Java 17 version. Where the running JVM has the Foreign
 * Function and Memory API (Java 22 and later, when this jar was built without
 * the Java 22 classes), it asks that API, looked up reflectively; otherwise
 * it reads the private field {@code Buffer.address} through
 * {@code sun.misc.Unsafe}, also looked up reflectively (so the code compiles
 * without proprietary-API warnings). Either way no deprecated {@code Unsafe}
 * method is called on JDK 24 and later, where the JVM would warn about it.
 * The multi-release jar carries a Java 22 version that calls the API directly.
 */
final class BufferAddress {

    private static final MethodHandle ADDRESS = lookUp();

    private BufferAddress() {
    }

    private static MethodHandle lookUp() {
        MethodHandle segments = lookUpSegmentAddress();
        return segments != null ? segments : lookUpUnsafeAddress();
    }

    /** {@code MemorySegment.ofBuffer(buffer).address()} (the buffer's position is 0), or null before Java 22. */
    private static MethodHandle lookUpSegmentAddress() {
        if (Runtime.version().feature() < 22) {
            return null;
        }
        try {
            Class<?> segment = Class.forName("java.lang.foreign.MemorySegment");
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            MethodHandle ofBuffer = lookup.findStatic(segment, "ofBuffer", MethodType.methodType(segment, Buffer.class));
            MethodHandle address = lookup.findVirtual(segment, "address", MethodType.methodType(long.class));
            return MethodHandles.filterReturnValue(ofBuffer, address).asType(MethodType.methodType(long.class, ByteBuffer.class));
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static MethodHandle lookUpUnsafeAddress() {
        try {
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
            theUnsafe.setAccessible(true);
            Object unsafe = theUnsafe.get(null);
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            MethodHandle fieldOffset = lookup.findVirtual(unsafeClass, "objectFieldOffset",
                    MethodType.methodType(long.class, Field.class)).bindTo(unsafe);
            long addressOffset = (long) fieldOffset.invoke(Buffer.class.getDeclaredField("address"));
            MethodHandle getLong = lookup.findVirtual(unsafeClass, "getLong",
                    MethodType.methodType(long.class, Object.class, long.class)).bindTo(unsafe);
            return MethodHandles.insertArguments(getLong, 1, addressOffset)
                    .asType(MethodType.methodType(long.class, ByteBuffer.class));
        } catch (Throwable t) {
            return null;
        }
    }

    /**
     * The native address of {@code buffer}'s first byte; its position must be 0.
     *
     * @throws IllegalStateException when the address cannot be read on this JVM
     */
    static long of(ByteBuffer buffer) {
        if (ADDRESS != null) {
            try {
                long address = (long) ADDRESS.invokeExact(buffer);
                if (address != 0) {
                    return address;
                }
            } catch (Throwable t) {
                throw new IllegalStateException("cannot read the address of a direct buffer", t);
            }
        }
        throw new IllegalStateException("cannot read the address of a direct buffer on this JVM (sun.misc.Unsafe is unavailable)");
    }
}
