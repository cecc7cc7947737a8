package io.ivcuda.server.core;

import org.agrona.collections.LongHashSet;

/**
 * The owner tokens the server reclaimed, most recent first kept: a reclaimed process is dead (it
 * exited or its heartbeat stopped), so a hello with its token is refused — and so is every call it
 * would make after. Without this, a dying process whose exit handlers still call the driver after
 * {@code ivc_process_exit} (cudart's static teardown does) said hello again as a fresh process of
 * the same token while its reclaim was still freeing: both then destroyed the same driver objects
 * (glibc "double free or corruption" on the H200, issue 13).
 *
 * <p>A token carries a random 32-bit nonce beside the pid (docs/protocol.md §3): a new process, a
 * forked child or a reused pid claims with a token of its own, so forgetting nothing would be
 * correct; the set is bounded ({@code capacity}, oldest forgotten first) only so that a guest that
 * makes up tokens cannot grow it. A forgotten token's reclaim finished long before: reclaims run one
 * after another, and {@code capacity} newer ones came after it.
 */
final class ReclaimedTokens {
    private final long[] order;
    private final LongHashSet tokens;
    private int next;
    private int size;

    ReclaimedTokens(int capacity) {
        order = new long[Math.max(1, capacity)];
        tokens = new LongHashSet(order.length * 2);
    }

    synchronized void add(long token) {
        if (!tokens.add(token)) {
            return;
        }
        if (size == order.length) {
            tokens.remove(order[next]);
        } else {
            size++;
        }
        order[next] = token;
        next = (next + 1) % order.length;
    }

    synchronized boolean contains(long token) {
        return tokens.contains(token);
    }
}
