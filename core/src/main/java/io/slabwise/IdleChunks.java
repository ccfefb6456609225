package io.slabwise;

/**
 * An arena's idle chunks (nothing allocated in them), in the order they
 * became idle, as an intrusive doubly linked list through the chunks' own
 * links: adding, taking one back into use and giving one back are O(1), and
 * a trim or a decay tick visits only the chunks it gives back, oldest idle
 * first, never the chunks in use.
 *
 * <pre>
 *  oldest ──▶ chunk ⇄ chunk ⇄ chunk ◀── newest      (idleSinceNanos ascending)
 * </pre>
 *
 * <p>Not thread-safe: the arena's lock guards it.
 */
final class IdleChunks {

    private Chunk oldest;
    private Chunk newest;
    private int count;

    /** Idle chunks. */
    int count() {
        return count;
    }

    /** The chunk idle the longest, or null. */
    Chunk oldest() {
        return oldest;
    }

    /** Adds {@code chunk}, which has just become idle at {@code now}, as the newest. */
    void add(Chunk chunk, long now) {
        assert !chunk.idle : "chunk " + chunk.id + " is idle already";
        chunk.idleSinceNanos = now;
        chunk.idle = true;
        chunk.idlePrev = newest;
        chunk.idleNext = null;
        if (newest != null) {
            newest.idleNext = chunk;
        } else {
            oldest = chunk;
        }
        newest = chunk;
        count++;
    }

    /** Takes {@code chunk} out: it is used again, or goes back to the chunk source. */
    void remove(Chunk chunk) {
        assert chunk.idle : "chunk " + chunk.id + " is not idle";
        if (chunk.idlePrev != null) {
            chunk.idlePrev.idleNext = chunk.idleNext;
        } else {
            oldest = chunk.idleNext;
        }
        if (chunk.idleNext != null) {
            chunk.idleNext.idlePrev = chunk.idlePrev;
        } else {
            newest = chunk.idlePrev;
        }
        chunk.idlePrev = null;
        chunk.idleNext = null;
        chunk.idle = false;
        count--;
    }
}
