package io.slabwise;

import io.slabwise.internal.EngineAccess;

import java.nio.ByteBuffer;

/**
 * One piece of pool memory, as handed out by {@link MemoryPool#allocate}.
 *
 * <p>An {@code Allocation} is a reusable, mutable holder: a buffer object keeps
 * one for its whole life and the pool fills it on every allocation, so the hot
 * path creates no garbage. It is not thread-safe; whoever owns the buffer owns
 * the allocation, and hands it to {@link MemoryPool#free} exactly once.
 *
 * <pre>
 *   chunk memory  [ ....... | offset .. offset+requested .. offset+reserved | ....... ]
 *                            ^ address()
 *                            [ buffer(): requested bytes ]
 * </pre>
 */
public final class Allocation {

    static {
        // the Netty adapter's typed access to the engine: registered with the first class it needs
        EngineAccess.register(new AdapterAccess());
    }


    Chunk chunk;
    Category category;
    /**
     * The thread cache whose counters hold this allocation. Before a holder
     * from a thread cache's stash is filled, the cache that gave it out, which
     * is the calling thread's: the allocation goes through it without looking
     * the thread's cache up again.
     */
    ThreadCache owner;
    /** Who takes the memory back when it is not a plain pool allocation; null for those. */
    Releaser releaser;
    /** The releaser's own record of the allocation (e.g. the slab chunk a slice came from). */
    Object releaserToken;
    long handle;
    int sizeIndex;
    int requested;
    int reserved;
    /** The memory's address; its offset in the chunk is derived from it (a field less per live buffer). */
    long address;
    /**
     * Made by a thread cache's holder stash for a caller that never shows the
     * holder to anyone (the Netty adapter): when freed on the thread that
     * allocated it, it goes back to that thread's stash (or is kept filled)
     * for the next allocation; when freed on another thread, back to that
     * thread's cache through a lock-free stack; a virtual thread's, freed on
     * any thread, to the stash of the cache its arena's virtual threads
     * share. Never cleared. False for holders the pool's users make.
     */
    final boolean stashed;
    /**
     * A stashed holder kept by its thread's cache with the memory of its
     * last allocation, which was released: not live, though it names a chunk
     * (see {@code ThreadCache.keepFilled}).
     */
    boolean kept;
    /**
     * The object of the layer above that goes with this holder, reused with it
     * (the Netty adapter's recycled buffer object); null for none. Set and read
     * only through {@code io.slabwise.internal.EngineAccess}; {@link #clear()}
     * keeps it.
     */
    Object attachment;
    /**
     * The next holder in the stack of blank holders other threads gave back
     * to their owner cache (see {@code HolderStash.returnHolder}); null
     * otherwise.
     */
    Allocation nextReturned;

    /** Creates an empty holder; it describes nothing until the pool fills it. */
    public Allocation() {
        this(false);
    }

    Allocation(boolean stashed) {
        this.stashed = stashed;
    }

    /** Whether the holder currently describes live pool memory. */
    public boolean isLive() {
        return chunk != null && !kept;
    }

    /** @throws IllegalStateException when this holder still holds live memory: it must be freed before reuse */
    void checkNotLive() {
        if (isLive()) {
            throw new IllegalStateException("the allocation holder is still live: " + this);
        }
    }

    /** The native address of the first byte. */
    public long address() {
        return address;
    }

    /**
     * A number naming the chunk, block or dedicated region this allocation's
     * memory lies in: the same for every allocation in it, and never given
     * to another chunk or region of this JVM, even after this one went back
     * to the operating system. An owner of relocatable entries can keep them
     * by key, and during a compaction look only at the entries under
     * {@link Evacuation#regionKeys()}: work in proportion to what moves,
     * not to the whole cache. It stays the same while the allocation lives;
     * a moved entry's new memory has the key of its new chunk.
     *
     * @return the key, or -1 when the holder describes no live memory
     */
    public long regionKey() {
        Chunk c = chunk;
        return c == null || kept ? -1 : c.key;
    }

    /**
     * A new direct buffer over this allocation's memory alone: position 0,
     * capacity and limit {@link #requestedBytes()}. It must not be used after
     * the allocation is freed.
     *
     * @throws IllegalStateException when the holder describes no live memory
     */
    public ByteBuffer buffer() {
        if (!isLive()) {
            throw new IllegalStateException("the allocation holds no live memory");
        }
        return chunk.region.buffer().slice(offset(), requested);
    }

    /**
     * The direct buffer of the whole chunk (or huge region) that holds this
     * allocation; only {@code [offset, offset + reserved)} belongs to it. For
     * the engine, its tests and the Netty adapter (through
     * {@code io.slabwise.internal.EngineAccess}); never change its position or limit.
     */
    ByteBuffer chunkMemory() {
        return chunk.region.buffer();
    }

    /** Where this allocation starts inside its chunk's region: {@link #address()} minus the region's address. */
    public int offset() {
        Chunk c = chunk;
        return c == null ? 0 : (int) (address - c.region.address());
    }

    /** The category the memory is accounted to. */
    public Category category() {
        return category;
    }

    /** The bytes the caller asked for. */
    public int requestedBytes() {
        return requested;
    }

    /** The bytes set aside: the size class the request was rounded to. */
    public int reservedBytes() {
        return reserved;
    }

    /**
     * Fills in where the memory lies and what it stands for, once its chunk
     * and handle are set: the one place every allocation path fills a holder.
     * The address follows from the chunk's region and the offset.
     */
    void place(int sizeIndex, int offset, Category category, int requested, int reserved) {
        this.sizeIndex = sizeIndex;
        this.address = chunk.region.address() + offset;
        this.category = category;
        this.requested = requested;
        this.reserved = reserved;
    }

    void clear() {
        kept = false;
        chunk = null;
        category = null;
        owner = null;
        releaser = null;
        releaserToken = null;
        handle = 0;
        sizeIndex = 0;
        requested = 0;
        reserved = 0;
        address = 0;
    }

    @Override
    public String toString() {
        return isLive()
                ? "Allocation(" + category + ", requested=" + requested + ", reserved=" + reserved + ", offset=" + offset() + ')'
                : "Allocation(free)";
    }
}
