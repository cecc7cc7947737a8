/* Cross-thread order of queued work (docs/protocol.md §6, "Order between channels"). Each
 * guest thread has a channel of its own, and the server runs each channel's ring on its own
 * worker: nothing on the server orders two channels. Natively, work a thread enqueued is in
 * the driver's stream before the enqueueing call returns, so a second thread that learns of
 * it (a mutex, a condition variable, a joined thread: PyTorch's autograd thread hands the
 * backward pass to the main thread's optimizer step this way) enqueues after it on the same
 * stream. Here that work may still sit in the first thread's ring when the second thread's
 * call reaches the server; its kernel would then run first. So before every call a thread
 * waits until the server has consumed what the process's other threads had queued when the
 * call began (their published ring tails, ordering.c's only shared state besides the ring
 * heads). That is a little more order than CUDA promises (calls of unrelated threads on
 * other streams wait too), never less; it costs nothing while the other threads' rings are
 * drained, which is the common case: the server drains a ring as soon as it sees it. */
#include <inttypes.h>

#include "log.h"
#include "ordering.h"
#include "wait.h"

static _Thread_local int exempt;

void ivc_ordering_exempt_thread(void)
{
    exempt = 1;
}

struct queued_work {
    struct ivc_channel *other;
    uint64_t tail;
};

/* The server consumed the other channel's ring up to `tail`, or the channel is no longer
 * this process's (reclaimed: the server settled its ring). */
static int consumed(struct ivc_channel *self, void *argument)
{
    (void)self;
    const struct queued_work *work = argument;
    return ivc_load64(work->other->base + IVC_CH_RING_HEAD) >= work->tail
           || ivc_load64(work->other->base + IVC_CH_OWNER) != ivc_channel_process_token();
}

static int wait_for(struct ivc_channel *other, void *argument)
{
    struct ivc_channel *self = argument;
    uint64_t tail = atomic_load_explicit(&other->published_tail, memory_order_acquire);
    uint64_t drained = atomic_load_explicit(&other->drained_tail, memory_order_relaxed);
    if (tail <= drained)
        return 0;
    struct queued_work work = {other, tail};
    if (!consumed(self, &work)) {
        ivc_trace("channel %u: waiting for channel %u's queued work (ring_tail %" PRIu64 ")", self->index,
                  other->index, tail);
        /* ring_head raises no interrupt; the liveness checks are the waiting thread's own */
        CUresult r = ivc_wait_until(self, consumed, &work, "another thread's queued work", 0);
        if (r != CUDA_SUCCESS)
            return (int)r;
    }
    /* remember it, so that the next call does not read the server's cache line again */
    while (drained < tail && !atomic_compare_exchange_weak_explicit(&other->drained_tail, &drained, tail,
                                                                    memory_order_relaxed, memory_order_relaxed))
        ;
    return 0;
}

CUresult ivc_ordering_wait(struct ivc_channel *self)
{
    if (exempt)
        return CUDA_SUCCESS;
    return (CUresult)ivc_channel_for_each_queued(self, wait_for, self);
}
