package io.slabwise;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The categories of one pool, by name and by id: created on first use, never
 * removed, at most {@link Category#MAX_CATEGORIES}. A lookup by name is one
 * map read; the array by id is copied on write, so readers (statistics,
 * refusal messages, the meters) take it without a lock.
 *
 * <p>Categories serve the general pool, so none exists before it: the pool
 * {@linkplain #open opens} the registry once its general pool is built,
 * which creates the default category and those the configuration names.
 */
final class Categories {

    private final PoolConfig config;
    /** The pool that owns the categories, handed to each one for {@link Category#pool()}; never called here. */
    private final MemoryPool owner;
    private final ConcurrentHashMap<String, Category> byName = new ConcurrentHashMap<>();
    /** Categories by id; replaced by a longer copy when one is added (under {@link #byName}'s lock). */
    private volatile Category[] byId = new Category[0];
    /** Set once by {@link #open}, before the pool is published. */
    private GeneralPool general;
    private Category defaultCategory;

    Categories(PoolConfig config, MemoryPool owner) {
        this.config = config;
        this.owner = owner;
    }

    /** Creates the default category and those with a quota or a floor in the configuration; once. */
    void open(GeneralPool generalPool) {
        this.general = generalPool;
        this.defaultCategory = get(Category.DEFAULT_NAME);
        for (String quotaCategory : config.quotas().keySet()) {
            get(quotaCategory);
        }
        for (String floorCategory : config.pressure().floors().keySet()) {
            get(floorCategory);
        }
    }

    /**
     * The category with this name, created on first use.
     *
     * @throws IllegalArgumentException when the name is not a valid category name
     * @throws IllegalStateException    when the pool has {@link Category#MAX_CATEGORIES} already
     */
    Category get(String name) {
        Category existing = byName.get(name);
        if (existing != null) {
            return existing;
        }
        Category.checkName(name);
        synchronized (byName) {
            existing = byName.get(name);
            if (existing != null) {
                return existing;
            }
            Category[] current = byId;
            if (current.length == Category.MAX_CATEGORIES) {
                throw new IllegalStateException("a pool has at most " + Category.MAX_CATEGORIES
                        + " categories; cannot add '" + name + "' to " + byName.keySet());
            }
            Long quota = config.quotas().get(name);
            Category created = new Category(owner, general, name, current.length, config.tracks(name),
                    quota != null ? quota : Long.MAX_VALUE, config.categoryPolicies().get(name));
            Category[] grown = Arrays.copyOf(current, current.length + 1);
            grown[created.id] = created;
            byId = grown;
            byName.put(name, created);
            return created;
        }
    }

    /** The category with this (valid) name if it exists, else null; creates nothing. */
    Category existing(String name) {
        return byName.get(Category.checkName(name));
    }

    /**
     * Checks that {@code category} is one of these.
     *
     * @throws IllegalArgumentException for a category of another pool
     */
    Category check(Category category) {
        Category[] known = byId;
        if (category.id >= known.length || known[category.id] != category) {
            throw new IllegalArgumentException("category " + category + " belongs to another pool");
        }
        return category;
    }

    /** The category of allocations made without one. */
    Category defaultCategory() {
        return defaultCategory;
    }

    /** Every category so far, by id; the array is never changed (a new category makes a new one). */
    Category[] all() {
        return byId;
    }

    /** Every category so far, in order of creation. */
    List<Category> list() {
        return List.of(byId);
    }

    /** How many categories exist. */
    int count() {
        return byId.length;
    }
}
