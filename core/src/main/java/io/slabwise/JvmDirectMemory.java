package io.slabwise;

import java.lang.management.ManagementFactory;

/**
 * The JVM's limit on direct memory ({@code -XX:MaxDirectMemorySize}), read
 * once. Mapped chunks do not count against that limit, so a pool of mapped
 * chunks with no ceiling of its own takes this one (see
 * {@link PoolConfig.Builder#maxMemory(long)}).
 */
final class JvmDirectMemory {

    private JvmDirectMemory() {
    }

    /** The JVM's maximum direct memory in bytes: the flag when given, else the maximum heap, as the JVM does. */
    static long max() {
        return Holder.MAX;
    }

    private static final class Holder {
        static final long MAX = readMax();
    }

    private static long readMax() {
        long flag = 0;
        try {
            com.sun.management.HotSpotDiagnosticMXBean hotspot =
                    ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
            if (hotspot != null) {
                flag = Long.parseLong(hotspot.getVMOption("MaxDirectMemorySize").getValue());
            }
        } catch (RuntimeException | LinkageError e) {
            flag = 0; // not a HotSpot JVM, or no management: the JVM's own default below
        }
        return flag > 0 ? flag : Runtime.getRuntime().maxMemory();
    }
}
