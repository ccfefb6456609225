package io.slabwise;

/**
 * A node of intrusive doubly linked lists whose heads are kept in an array,
 * one list per index: an arena's subpages with room, by size class; a block
 * pool stripe's regions, by free slots. The node carries its own links, so
 * linking and unlinking allocate nothing and take constant time. Not
 * thread-safe: the lists' owner guards them.
 *
 * <pre>
 *  heads[i] ──▶ node ⇄ node ⇄ node ──▶ null
 * </pre>
 *
 * @param <T> the node type
 */
abstract class ListNode<T extends ListNode<T>> {

    T prev;
    T next;
    /** Whether the node is in a list. */
    boolean linked;

    /** Puts {@code node} first in list {@code list}. */
    static <T extends ListNode<T>> void pushFront(T[] heads, int list, T node) {
        T head = heads[list];
        node.prev = null;
        node.next = head;
        if (head != null) {
            head.prev = node;
        }
        heads[list] = node;
        node.linked = true;
    }

    /** Takes {@code node} out of list {@code list}, where it is. */
    static <T extends ListNode<T>> void remove(T[] heads, int list, T node) {
        if (node.prev != null) {
            node.prev.next = node.next;
        } else {
            heads[list] = node.next;
        }
        if (node.next != null) {
            node.next.prev = node.prev;
        }
        node.prev = null;
        node.next = null;
        node.linked = false;
    }
}
