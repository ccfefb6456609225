/**
 * The Slabwise memory engine: native memory in fixed-size chunks, carved into
 * runs and subpages, with thread caches and exact accounting. No Netty here.
 *
 * <h2>Public front</h2>
 * {@link io.slabwise.MemoryPool} (built from a {@link io.slabwise.PoolConfig}),
 * {@link io.slabwise.Allocation}, the cache allocators, the statistics, the
 * limit types and the {@link io.slabwise.ChunkSource}, {@link io.slabwise.Ticker}
 * and {@link io.slabwise.Scheduler} plug-in points. Everything else is
 * package-private, and {@code ApiBoundaryTest} keeps it so.
 *
 * <h2>The façade, its parts and the carving engine</h2>
 * {@code MemoryPool} routes; each job is a part of its own, and parts depend
 * on the parts they use, never on the façade:
 * <table>
 *   <caption>The engine's layout</caption>
 *   <tr><th>layer</th><th>classes</th><th>job</th></tr>
 *   <tr><td>façade</td><td>{@code MemoryPool}</td><td>the API; builds and wires the parts, then routes to them</td></tr>
 *   <tr><td>parts</td><td>{@code GeneralPool}</td><td>the drop-in hot path: allocate, free, resize, dedicated regions</td></tr>
 *   <tr><td></td><td>{@code Admission}, {@code MemoryLimit}, {@code Categories}</td><td>open or closed, policies, quotas,
 *       the ceiling and its fair waits; the categories</td></tr>
 *   <tr><td></td><td>{@code CommittedMemory}, {@code DedicatedRegions}, {@code WholeChunks}</td><td>regions from and to the chunk source</td></tr>
 *   <tr><td></td><td>{@code ThreadCaches}, {@code ThreadCache}, {@code SharedCache}, {@code LargeSlots},
 *       {@code HolderStash}, {@code ThreadCounters}</td><td>per-thread caches and accounting</td></tr>
 *   <tr><td></td><td>{@code IdleMemory}, {@code Upkeep}</td><td>decay, trim, reclaiming at the ceiling; the
 *       background work on the pool's scheduler and the giving back at close</td></tr>
 *   <tr><td></td><td>{@code Statistics}</td><td>counter snapshots, {@code stats()}, the operator's report</td></tr>
 *   <tr><td></td><td>{@code Compaction}, {@code CompactionChoice}, {@code Evacuation}; {@code Pressure}</td><td>emptying
 *       sparse chunks through owners' relocators (the choice of what to empty a part of its own); asking owners'
 *       shrinkers for memory</td></tr>
 *   <tr><td>carving</td><td>{@code Arena}, {@code Chunk}, {@code Subpage}, {@code SizeClasses},
 *       {@code PlacementIndex}, {@code OccupancyBands}</td><td>chunks into runs and subpages</td></tr>
 *   <tr><td>cache allocators</td><td>{@code SequentialAllocator}, {@code BlockPool}</td><td>FIFO slabs, fixed blocks</td></tr>
 *   <tr><td>adapter access</td><td>{@code AdapterAccess}</td><td>the engine's side of
 *       {@code io.slabwise.internal.EngineAccess}, for the Netty adapter</td></tr>
 * </table>
 *
 * <h2>Who owns what (the concurrency contract)</h2>
 * <ul>
 *   <li><b>Arena</b> state (its chunks, their free-run indexes, subpages and
 *       bitmaps, its statistics) is read and written only under the arena's
 *       monitor.</li>
 *   <li><b>ThreadCache</b> stacks, slots ({@code LargeSlots}) and holder
 *       stash ({@code HolderStash}) belong to their owning thread. Other threads
 *       never touch them, with one exception: after the owner is observed dead
 *       through {@code Thread.isAlive()} (which orders all of its actions before
 *       the observation), the pool flushes them. Live owners are asked to flush
 *       through a volatile flag. A <b>SharedCache</b>'s, the same parts, belong
 *       to whichever thread holds its try-lock.</li>
 *   <li><b>Accounting</b>: each allocation is counted by the
 *       {@code ThreadCounters} of the thread that made it (its <em>owner</em>),
 *       whole on an allocation side before its memory is handed out and whole
 *       on a release side before its memory can be reused. The owner writes its
 *       counters alone, with plain increments behind one release fence per
 *       count; releases and resizes by other threads go to a second array with
 *       atomic adds; the virtual threads of an arena share one set, written
 *       under their shared cache's lock or, when it is taken, with atomic adds.
 *       A snapshot reads the allocation side of every thread, then the
 *       committed bytes, then the release side of every thread, with acquire
 *       loads: no allocating or releasing thread ever waits for it, nothing is
 *       counted twice, and every snapshot has
 *       {@code requested <= reserved <= committed}.</li>
 *   <li><b>Stashed holders</b> ({@code Allocation}s a thread cache hands the
 *       Netty adapter for reuse) belong to the thread whose cache made them.
 *       Freed on that thread, a holder stays with the cache: filled with its
 *       memory for that thread's next allocation of its size class where the
 *       cache can keep it so, blank in the cache's stash otherwise. Freed on
 *       any other thread, its memory goes back as any cross-thread release
 *       does and the holder is left to the garbage collector, so no holder
 *       passes between platform threads. The virtual threads of an arena share
 *       its shared cache's holders the same way, freed by any thread, kept and
 *       taken only under that cache's lock, whose compare-and-set and release
 *       store order everything a holder (and a buffer object attached to it)
 *       carries from one thread to the next.</li>
 *   <li><b>Thread caches</b> of platform threads are bound to arenas under one
 *       lock; the array of live caches is copied on write, and dead threads'
 *       caches are folded into retired counts under a lock that a snapshot
 *       holds and that allocating threads only ever try.</li>
 *   <li><b>Cross-thread release</b>: a thread that frees memory of an arena it is
 *       not bound to hands it over through that arena's
 *       {@code RemoteFreeQueue} (CAS to claim a slot, release store to publish;
 *       producers read the consumer index only when their cached limit says
 *       the queue may be full). Whoever next holds the arena's lock drains at
 *       most {@code Arena.DRAIN_BATCH} entries before its own work, so no lock
 *       holder works through an unbounded backlog; when the queue is full, the
 *       producer takes the arena's lock instead. No lock is global.</li>
 *   <li><b>Committed</b> bytes are an atomic counter changed only when a region
 *       is taken from or given back to the chunk source.</li>
 *   <li><b>Pressure</b>: the background tick's episode state is guarded by a
 *       compare-and-set, one tick at a time; shrinkers and relocators are
 *       called with no pool lock held, and must never wait for a lock of
 *       their own.</li>
 * </ul>
 */
package io.slabwise;
