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
 * <p>This is the Java 17 version: the address is the private field
 * {@code Buffer.address}, read through {@code sun.misc.Unsafe} looked up
 * reflectively (so the code compiles without proprietary-API warnings). The
 * multi-release jar carries a Java 22 version that asks the Foreign Function
 * and Memory API instead, so that on JDK 24 and later no deprecated
 * {@code Unsafe} method is called and the JVM prints no warning.
 */
final class BufferAddress {

    private static final MethodHandle ADDRESS = lookUp();

    private BufferAddress() {
    }

    private static MethodHandle lookUp() {
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
     * The native address of {@code buffer}'s first byte.
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
