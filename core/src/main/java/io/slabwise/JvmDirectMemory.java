package io.slabwise;

import java.lang.management.BufferPoolMXBean;
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

    /**
     * Whether the JVM's direct-memory limit has room for {@code bytes} more, by
     * the JVM's {@code direct} buffer pool as it stands now (others may take
     * memory meanwhile). True when that pool cannot be read.
     */
    static boolean hasRoomFor(long bytes) {
        BufferPoolMXBean direct = DirectPool.BEAN;
        return direct == null || direct.getMemoryUsed() + bytes <= max();
    }

    private static final class Holder {
        static final long MAX = readMax();
    }

    /** Found at the first {@link #hasRoomFor}, not with {@link Holder#MAX}: pools of mapped chunks never ask. */
    private static final class DirectPool {
        static final BufferPoolMXBean BEAN = findDirectPool();
    }

    private static BufferPoolMXBean findDirectPool() {
        try {
            for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
                if (pool.getName().equals("direct")) {
                    return pool;
                }
            }
        } catch (RuntimeException | LinkageError e) {
            return null; // no management: the caller goes ahead and the JVM's own check decides
        }
        return null;
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
