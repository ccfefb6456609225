package io.slabwise.benchmarks.soak;

import java.util.concurrent.TimeUnit;

/**
 * Where the soak's workers stop so that its checks read the pool at a
 * quiescent point: every worker passes {@link #checkpoint()} between two
 * steps, holding then only what the soak's tallies count; the checker
 * {@linkplain #pause pauses} them all, reads, and {@linkplain #resume resumes}.
 *
 * <pre>
 *  worker:   register ─ step ─ checkpoint ─ step ─ checkpoint ─ ... ─ deregister
 *                                 │ (paused: waits here)
 *  checker:  pause() ── returns once every registered worker waits ── read ── resume()
 * </pre>
 *
 * <p>It is a phaser with two phases per check (stop, go) kept on one monitor,
 * so that registering and the pause cannot cross: a worker registering while
 * a pause is under way waits for the resume before its first step, and a
 * worker that leaves (deregisters) counts as stopped. The checker alone
 * pauses and resumes.
 */
final class PauseGate {

    private int registered;
    private int stopped;
    private boolean paused;

    /** Adds a worker; while a pause is under way it waits for the resume first. */
    synchronized void register() throws InterruptedException {
        while (paused) {
            wait();
        }
        registered++;
    }

    /** Removes a worker (it holds nothing the checker must wait for); never waits. */
    synchronized void deregister() {
        registered--;
        notifyAll();
    }

    /** Between two steps of a worker: waits there while a pause is under way. */
    synchronized void checkpoint() throws InterruptedException {
        if (!paused) {
            return;
        }
        stopped++;
        notifyAll();
        try {
            while (paused) {
                wait();
            }
        } finally {
            stopped--;
        }
    }

    /**
     * Asks every worker to stop at its next checkpoint and waits until all of
     * them have.
     *
     * @return false when some had not stopped within {@code timeoutMillis} (the pause then holds: resume it)
     */
    synchronized boolean pause(long timeoutMillis) throws InterruptedException {
        paused = true;
        notifyAll();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (stopped < registered) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    /** The workers registered and those waiting at a checkpoint, for a failure message. */
    synchronized String describe() {
        return stopped + " of " + registered + " workers stopped";
    }

    /** Lets the workers go on. */
    synchronized void resume() {
        paused = false;
        notifyAll();
    }
}
