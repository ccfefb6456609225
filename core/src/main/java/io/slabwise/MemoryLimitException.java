package io.slabwise;

/**
 * Thrown when an allocation would take the pool over its ceiling or a category
 * over its quota, and the policy is to fail (or the wait timed out). The
 * message names the category, the request, the limit and the current usage;
 * the same figures are available from the getters.
 */
public final class MemoryLimitException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** Which limit refused the allocation. */
    public enum Kind {
        /** The pool's ceiling on committed bytes. */
        CEILING,
        /** The category's quota on reserved bytes. */
        QUOTA
    }

    private final Kind kind;
    private final String category;
    private final long requestedSize;
    private final long limit;

    MemoryLimitException(Kind kind, String category, long requestedSize, long limit, String detail) {
        super(detail);
        this.kind = kind;
        this.category = category;
        this.requestedSize = requestedSize;
        this.limit = limit;
    }

    /** Which limit refused the allocation. */
    public Kind kind() {
        return kind;
    }

    /** The category of the refused allocation. */
    public String category() {
        return category;
    }

    /** The size that was asked for. */
    public long requestedSize() {
        return requestedSize;
    }

    /** The limit in bytes: the ceiling on committed bytes, or the category's quota on reserved bytes. */
    public long limit() {
        return limit;
    }
}
