package io.slabwise.netty;

/**
 * The owner's side of relocation for Netty buffers: a cache that holds its
 * entries as {@code ByteBuf}s registers one for its category
 * ({@link SlabwiseAllocator#setRelocator}), and a compaction calls it to move
 * the entries that lie in sparsely used chunks, so those chunks can go back to
 * the operating system. See {@link io.slabwise.Relocator} for the protocol
 * and its rules; in short:
 *
 * <pre>{@code
 * allocator.setRelocator("log_cache", evacuation -> {
 *     if (!lock.tryLock()) {                          // never wait: it may run inside an allocation
 *         evacuation.refused();                       // say the entries could not be looked at this time
 *         return;
 *     }
 *     try {
 *         for (Entry e : entries) {
 *             if (!evacuation.budgetLeft()) break;
 *             if (!evacuation.contains(e.buffer)) continue;
 *             ByteBuf moved = evacuation.move(e.buffer);  // a copy, elsewhere; null if it cannot move now
 *             if (moved != null) {
 *                 ByteBuf old = e.buffer;
 *                 e.buffer = moved;                      // readers that retained old keep reading it
 *                 old.release();
 *             }
 *         }
 *     } finally {
 *         lock.unlock();
 *     }
 * });
 * }</pre>
 *
 * <p>A cache of many entries walks them all on every call that way. It can
 * instead keep its buffers by region key
 * ({@link BufferEvacuation#regionKeysOf(io.netty.buffer.ByteBuf)} when it adds
 * one) and look only at the buckets under {@link BufferEvacuation#regionKeys()},
 * filing a moved buffer under its copy's keys: a compaction then costs the
 * owner in proportion to what lies in the chunks being emptied.
 */
@FunctionalInterface
public interface BufferRelocator {

    /** Moves the entries that {@code evacuation} contains, as far as the owner can and the budget allows. */
    void relocate(BufferEvacuation evacuation);
}
