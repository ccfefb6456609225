package io.slabwise;

import java.util.function.Consumer;

/**
 * The carved subpages of an arena with no element taken, as an intrusive
 * doubly linked list through the subpages' own links: a subpage joins when
 * its last element is freed and it stays carved (the last of its class), and
 * leaves when an element is taken again or its run goes back. A trim gives
 * their runs back by visiting them alone, not every subpage of every class.
 *
 * <p>Not thread-safe: the arena's lock guards it.
 */
final class EmptySubpages {

    private Subpage head;

    /** Lists {@code subpage}, which has just emptied. */
    void add(Subpage subpage) {
        subpage.empty = true;
        subpage.prevEmpty = null;
        subpage.nextEmpty = head;
        if (head != null) {
            head.prevEmpty = subpage;
        }
        head = subpage;
    }

    /** Takes {@code subpage} out: an element of it is taken, or its run goes back. */
    void remove(Subpage subpage) {
        if (subpage.prevEmpty != null) {
            subpage.prevEmpty.nextEmpty = subpage.nextEmpty;
        } else {
            head = subpage.nextEmpty;
        }
        if (subpage.nextEmpty != null) {
            subpage.nextEmpty.prevEmpty = subpage.prevEmpty;
        }
        subpage.prevEmpty = null;
        subpage.nextEmpty = null;
        subpage.empty = false;
    }

    /** Runs {@code action} on every listed subpage; the action may {@link #remove} the one it is given. */
    void forEach(Consumer<Subpage> action) {
        Subpage subpage = head;
        while (subpage != null) {
            Subpage next = subpage.nextEmpty;
            action.accept(subpage);
            subpage = next;
        }
    }
}
