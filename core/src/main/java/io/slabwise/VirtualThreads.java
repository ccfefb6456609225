package io.slabwise;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Tells virtual threads apart on the Java versions that have them (21 and
 * later) while the library is compiled for Java 17: {@code Thread.isVirtual()}
 * is looked up once, and on Java 17 every thread is a platform thread.
 *
 * <p>A pool gives each platform thread a thread cache of its own; virtual
 * threads share one cache per arena (see {@link SharedCache}), because there
 * may be millions of them and each lives briefly.
 */
final class VirtualThreads {

    /** {@code Thread.isVirtual()}, or null before Java 21. */
    private static final MethodHandle IS_VIRTUAL = lookUp();

    /** Whether this JVM has virtual threads at all; lets the JIT drop the check on Java 17. */
    static final boolean SUPPORTED = IS_VIRTUAL != null;

    private VirtualThreads() {
    }

    private static MethodHandle lookUp() {
        try {
            return MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
        } catch (NoSuchMethodException | IllegalAccessException e) {
            return null;
        }
    }

    /**
     * The carrier threads that run virtual threads: the scheduler's
     * parallelism, {@code jdk.virtualThreadScheduler.parallelism} if set (and
     * valid), else the available processors, as the JDK's scheduler takes it.
     */
    static int carriers() {
        int processors = Runtime.getRuntime().availableProcessors();
        String configured = System.getProperty("jdk.virtualThreadScheduler.parallelism");
        if (configured != null) {
            try {
                int parallelism = Integer.parseInt(configured.trim());
                if (parallelism > 0) {
                    return parallelism;
                }
            } catch (NumberFormatException e) {
                return processors; // the JDK refuses it too; its default is what runs
            }
        }
        return processors;
    }

    /** Whether {@code thread} is a virtual thread. */
    static boolean isVirtual(Thread thread) {
        if (!SUPPORTED) {
            return false;
        }
        try {
            return (boolean) IS_VIRTUAL.invokeExact(thread);
        } catch (Throwable t) {
            throw new IllegalStateException("Thread.isVirtual() failed", t);
        }
    }
}
