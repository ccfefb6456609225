package io.slabwise;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A named accounting bucket ({@code network}, {@code log_cache},
 * {@code block_cache}, ...). Every allocation belongs to exactly one category,
 * and the pool keeps its requested and reserved bytes per category.
 *
 * <p>Categories are created by {@link MemoryPool#category(String)}, which
 * returns the same instance for the same name; they are cheap, immutable and
 * safe to share between threads. Names are lowercase letters, digits, {@code _}
 * and {@code -} (they become metric tag values).
 */
public final class Category {

    /** The name of the category of buffers allocated without one. */
    public static final String DEFAULT_NAME = "network";

    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_\\-]{0,63}");

    private final String name;
    /** Index into the per-thread counter arrays; dense from 0. */
    final int id;
    /** The general pool for this category. */
    final CategoryAllocator allocator;

    Category(MemoryPool pool, String name, int id) {
        this.name = checkName(name);
        this.id = id;
        this.allocator = new CategoryAllocator(pool, this);
    }

    static String checkName(String name) {
        Objects.requireNonNull(name, "category name");
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("category name must be 1-64 characters of a-z, 0-9, '_' or '-',"
                    + " starting with a letter or digit: \"" + name + '"');
        }
        return name;
    }

    /** The category's name. */
    public String name() {
        return name;
    }

    @Override
    public String toString() {
        return name;
    }
}
