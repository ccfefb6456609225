package io.slabwise;

/**
 * Thrown inside the engine when taking a region from the chunk source would
 * pass the ceiling; caught by the allocation strategy that tried, which
 * reports {@link Attempt#CEILING}. Never escapes the pool, so it is one
 * shared instance without a stack trace.
 */
final class CeilingReached extends RuntimeException {

    private static final long serialVersionUID = 1L;
    static final CeilingReached INSTANCE = new CeilingReached();

    private CeilingReached() {
        super("ceiling reached", null, false, false);
    }
}
