/* Waiting for the server (docs/protocol.md §7, §8): spin, then yield the CPU, then sleep
 * (on the channel's MSI-X vector where there is an interrupt path, else in nanosleep),
 * and between steps check that the server is still there to answer. The call path
 * (call.c, window.c) says what it waits for, as a condition; this unit says how, so that
 * every wait backs off, sleeps and gives up in the same way. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "clock.h"
#include "interrupts.h"
#include "log.h"
#include "wait.h"

/* Spin, then yield the CPU, then sleep. The yield phase covers a 64 MiB copy (about
 * 1.2 ms on an H200): nanosleep oversleeps by the thread's timer slack (50 us by
 * default), which cost pinned 64 MiB copies 7% of their bandwidth when the yield phase
 * ended at 200 us. The driver itself spin-waits by default, so yielding this long costs
 * no more CPU than a native program spends. */
#define SPIN_NS 20000ULL
#define YIELD_NS 2000000ULL
#define SLEEP_CAP_NS 50000ULL
/* How long one interrupt sleep lasts at most: the server's liveness is checked between. */
#define INTERRUPT_SLEEP_NS 100000000ULL

uint64_t ivc_server_timeout_ns = 5000000000ULL;

/* How long a waiter stays on the CPU (spin, then yield) before it sleeps: YIELD_NS, or
 * IVCUDA_SPIN_US. With an interrupt path the sleep is on the channel's vector; a shorter
 * budget frees the vCPU sooner and costs a wake-up on waits longer than it
 * (docs/benchmarks/README.md has the measured trade). Read once per process. */
static uint64_t busy_ns = YIELD_NS;
static pthread_once_t budget_once = PTHREAD_ONCE_INIT;

static void read_busy_budget(void)
{
    const char *value = getenv("IVCUDA_SPIN_US");
    if (value == NULL || value[0] == '\0')
        return;
    char *end;
    errno = 0;
    unsigned long long us = strtoull(value, &end, 10);
    if (*end != '\0' || errno != 0 || us > 1000000ULL) {
        ivc_log("IVCUDA_SPIN_US=%s: not a number of microseconds in 0..1000000; using %llu", value,
                YIELD_NS / 1000);
        return;
    }
    busy_ns = us * 1000ULL;
}

struct waiter {
    uint64_t start;
    uint64_t last_beat;
    uint64_t last_beat_at;
    uint64_t sleep;
    uint64_t now;      /* as of the last step */
    int interruptible; /* may sleep on the channel's MSI-X vector once the busy budget is spent */
    char why[IVC_CHANNEL_LOSS_MAX]; /* what the last failed check saw */
};

static void waiter_init(struct waiter *w, const struct ivc_channel *ch, int interruptible)
{
    w->start = ivc_now_ns();
    w->now = w->start;
    w->last_beat = ivc_load64(ch->region->base + IVC_HDR_SERVER_HEARTBEAT);
    w->last_beat_at = w->start;
    w->sleep = 1000;
    w->interruptible = interruptible && ivc_interrupts_usable(ch->index, ch->region->channel_count);
}

/* Whether the server is still there to answer (state, epoch, heartbeat): §7 liveness. */
static CUresult waiter_check(struct waiter *w, struct ivc_channel *ch, uint64_t now)
{
    const struct ivc_region *region = ch->region;
    uint32_t state = ivc_load32(region->base + IVC_HDR_SERVER_STATE);
    uint32_t epoch = ivc_load32(region->base + IVC_HDR_EPOCH);
    uint64_t beat = ivc_load64(region->base + IVC_HDR_SERVER_HEARTBEAT);
    if (beat != w->last_beat) {
        w->last_beat = beat;
        w->last_beat_at = now;
    }
    const char *why = NULL;
    char *detail = w->why;
    size_t detail_size = sizeof w->why;
    if (state != IVC_STATE_READY) {
        char message[257];
        memcpy(message, region->base + IVC_HDR_SERVER_MESSAGE, 256);
        message[256] = '\0';
        snprintf(detail, detail_size, "server_state %u%s%s", state, message[0] ? ": " : "", message);
        why = detail;
    } else if (epoch != region->epoch) {
        snprintf(detail, detail_size, "the server restarted (epoch %u, attached to %u)", epoch, region->epoch);
        why = detail;
    } else if (ivc_load64(ch->base + IVC_CH_OWNER) != ch->token) {
        snprintf(detail, detail_size, "the server reclaimed the channel from this process (its heartbeat "
                 "stopped for longer than owner_timeout_ms); its CUDA state is lost");
        why = detail;
    } else if (now - w->last_beat_at > ivc_server_timeout_ns) {
        snprintf(detail, detail_size, "server_heartbeat frozen for %" PRIu64 " ms",
                 (now - w->last_beat_at) / 1000000);
        why = detail;
    }
    if (why != NULL) {
        /* w->why is said by the caller: not at all when the answer arrived before this check */
        ch->broken = 1;
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    return CUDA_SUCCESS;
}

/* One backoff step: spin, then yield, then sleep (capped); checks the server is alive. */
static CUresult waiter_pause(struct waiter *w, struct ivc_channel *ch)
{
    uint64_t now = ivc_now_ns();
    w->now = now;
    uint64_t waited = now - w->start;
    if (waited < SPIN_NS && waited < busy_ns) {
        __builtin_ia32_pause();
        return CUDA_SUCCESS;
    }
    if (waited < busy_ns) {
        sched_yield();
    } else {
        struct timespec t = {0, (long)w->sleep};
        nanosleep(&t, NULL);
        if (w->sleep < SLEEP_CAP_NS)
            w->sleep = w->sleep * 2 > SLEEP_CAP_NS ? SLEEP_CAP_NS : w->sleep * 2;
    }
    return waiter_check(w, ch, now);
}

/* Whether the next step sleeps on the interrupt: an interrupt path and the busy budget spent. */
static int waiter_sleeps(const struct waiter *w)
{
    return w->interruptible && w->now - w->start >= busy_ns;
}

/* Sleeps on the channel's vector (guest_waiting is 1 and the condition was false after it). */
static CUresult waiter_block(struct waiter *w, struct ivc_channel *ch, const char *what)
{
    int woken = ivc_interrupts_wait(ch->index, INTERRUPT_SLEEP_NS);
    if (woken < 0)
        w->interruptible = 0; /* the daemon stopped: poll from now on */
    else if (woken == 0)
        ivc_trace("channel %u: still waiting for %s after a %llu ms sleep (guest_waiting %u, resp_seq %llu, "
                  "req_seq %llu, server_chunk %llu, guest_chunk %llu)", ch->index, what, INTERRUPT_SLEEP_NS / 1000000,
                  ivc_load32(ch->base + IVC_CH_GUEST_WAITING),
                  (unsigned long long)ivc_load64(ch->base + IVC_CH_RESP_SEQ),
                  (unsigned long long)ivc_load64(ch->base + IVC_CH_REQ_SEQ),
                  (unsigned long long)ivc_load64(ch->base + IVC_CH_SERVER_CHUNK),
                  (unsigned long long)ivc_load64(ch->base + IVC_CH_GUEST_CHUNK));
    w->now = ivc_now_ns();
    return waiter_check(w, ch, w->now);
}

/* An interrupt sleep follows §8's rule: store guest_waiting = 1, full fence, ask again,
 * sleep; so either the server's load of guest_waiting sees 1 and it raises the vector,
 * or the second question sees its answer. */
CUresult ivc_wait_until(struct ivc_channel *ch, ivc_wait_done done, void *argument, const char *what,
                        int interruptible)
{
    pthread_once(&budget_once, read_busy_budget);
    struct waiter w;
    waiter_init(&w, ch, interruptible);
    while (!done(ch, argument)) {
        CUresult r;
        if (waiter_sleeps(&w)) {
            ivc_interrupts_drain(ch->index);
            ivc_store32(ch->base + IVC_CH_GUEST_WAITING, 1);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            r = done(ch, argument) ? CUDA_SUCCESS : waiter_block(&w, ch, what);
            ivc_store32(ch->base + IVC_CH_GUEST_WAITING, 0);
        } else {
            r = waiter_pause(&w, ch);
        }
        /* The server answers, then may release the channel or change its state (a hello refused while
         * it replaces its CUDA process: answered, then the channel released). A check that sees the
         * change may come after the answer: the answer stands (the server writes it before the
         * release, and the owner's load orders this one). */
        if (r != CUDA_SUCCESS) {
            if (done(ch, argument)) {
                /* The call has its answer; the channel stays broken, and the next call on it says why
                 * (a refused hello follows the restart instead, and says nothing). */
                snprintf(ch->loss, sizeof ch->loss, "%s", w.why);
                return CUDA_SUCCESS;
            }
            ivc_log("region %s channel %u: server unavailable while waiting for %s: %s", ch->region->path, ch->index,
                    what, w.why);
            return r;
        }
    }
    return CUDA_SUCCESS;
}
