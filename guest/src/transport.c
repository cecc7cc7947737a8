/* Channels, synchronous calls, the async ring and streamed chunks (docs/protocol.md
 * §3, §4, §6, §7). One channel per guest thread (TLS), claimed by CAS on `owner` with
 * the process token; a heartbeat thread per process; release at thread exit, a
 * process-exit notice at exit, and a clean slate in a forked child. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ivc_api.h"
#include "ivc_internal.h"

#define LIBRARY_VERSION "ivcuda-guest 0.1.0"
/* Waiting for the server: spin, then yield the CPU, then sleep. The yield phase covers a
 * 64 MiB copy (about 1.2 ms on an H200): nanosleep oversleeps by the thread's timer slack
 * (50 us by default), which cost pinned 64 MiB copies 7% of their bandwidth when the
 * yield phase ended at 200 us. The driver itself spin-waits by default, so yielding this
 * long costs no more CPU than a native program spends. */
#define SPIN_NS 20000ULL
#define YIELD_NS 2000000ULL
#define SLEEP_CAP_NS 50000ULL
/* How long a waiter stays on the CPU (spin, then yield) before it sleeps: YIELD_NS, or
 * IVCUDA_SPIN_US. With an interrupt path the sleep is on the channel's vector; a shorter
 * budget frees the vCPU sooner and costs a wake-up on waits longer than it
 * (docs/benchmarks/README.md has the measured trade). */
static uint64_t busy_ns = YIELD_NS;

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
#define HEARTBEAT_PERIOD_NS 250000000L

uint64_t ivc_server_timeout_ns = 5000000000ULL;

struct ivc_channel {
    uint8_t *base;
    uint32_t index;
    uint8_t *request;
    uint8_t *response;
    uint8_t *ring;
    uint8_t *window;
    uint64_t seq;        /* last req_seq written */
    uint64_t ring_tail;  /* bytes ever written to the ring */
    uint64_t ring_head_seen; /* the server's ring_head as last read: space is known without a read */
    uint64_t chunk;      /* guest_chunk */
    int broken;          /* the server stopped answering on it: every call fails */
    int in_use;
};

/* Process-wide state; reset in a forked child. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ivc_region region;
static int attached;
/* Whether cuInit has succeeded in this process: the real driver answers every other
 * call before it with CUDA_ERROR_NOT_INITIALIZED, cached ones included. */
static atomic_int initialized;
static uint64_t token;
static struct ivc_channel *channels; /* channel_count entries; in_use marks ours */
static uint64_t process_heartbeat;
static int heartbeat_running;
static int exit_registered;
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Thread_local struct ivc_channel *thread_channel;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static uint64_t new_token(void)
{
    uint32_t nonce = 0;
    while (nonce == 0) {
        if (getrandom(&nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
            nonce = (uint32_t)now_ns() ^ (uint32_t)getpid();
    }
    return (uint64_t)(uint32_t)getpid() << 32 | nonce;
}

/* ---- waiting (§7 liveness) ---------------------------------------------------- */

struct waiter {
    uint64_t start;
    uint64_t last_beat;
    uint64_t last_beat_at;
    uint64_t sleep;
    uint64_t now; /* as of the last step */
    int interruptible; /* may sleep on the channel's MSI-X vector once the spin phase is over */
};

/* How long one interrupt sleep lasts at most: the server's liveness is checked between. */
#define INTERRUPT_SLEEP_NS 100000000ULL

static void waiter_init(struct waiter *w, const struct ivc_channel *ch, int interruptible)
{
    w->start = now_ns();
    w->now = w->start;
    w->last_beat = ivc_load64(region.base + IVC_HDR_SERVER_HEARTBEAT);
    w->last_beat_at = w->start;
    w->sleep = 1000;
    w->interruptible = interruptible && ivc_interrupts_usable(ch->index, region.channel_count);
}

/* Whether the server is still there to answer (state, epoch, heartbeat): §7 liveness. */
static CUresult waiter_check(struct waiter *w, struct ivc_channel *ch, const char *what, uint64_t now)
{
    uint32_t state = ivc_load32(region.base + IVC_HDR_SERVER_STATE);
    uint32_t epoch = ivc_load32(region.base + IVC_HDR_EPOCH);
    uint64_t beat = ivc_load64(region.base + IVC_HDR_SERVER_HEARTBEAT);
    if (beat != w->last_beat) {
        w->last_beat = beat;
        w->last_beat_at = now;
    }
    const char *why = NULL;
    char detail[400];
    if (state != IVC_STATE_READY) {
        char message[257];
        memcpy(message, region.base + IVC_HDR_SERVER_MESSAGE, 256);
        message[256] = '\0';
        snprintf(detail, sizeof detail, "server_state %u%s%s", state, message[0] ? ": " : "", message);
        why = detail;
    } else if (epoch != region.epoch) {
        snprintf(detail, sizeof detail, "the server restarted (epoch %u, attached to %u)", epoch, region.epoch);
        why = detail;
    } else if (now - w->last_beat_at > ivc_server_timeout_ns) {
        snprintf(detail, sizeof detail, "server_heartbeat frozen for %" PRIu64 " ms",
                 (now - w->last_beat_at) / 1000000);
        why = detail;
    }
    if (why != NULL) {
        ivc_log("region %s channel %u: server unavailable while waiting for %s: %s", region.path, ch->index, what,
                why);
        ch->broken = 1;
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    return CUDA_SUCCESS;
}

/* One backoff step: spin, then yield, then sleep (capped); checks the server is alive. */
static CUresult waiter_pause(struct waiter *w, struct ivc_channel *ch, const char *what)
{
    uint64_t now = now_ns();
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
    return waiter_check(w, ch, what, now);
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
    w->now = now_ns();
    return waiter_check(w, ch, what, w->now);
}

/* Waits for the server to make `condition` true. An interruptible wait (the server raises
 * the vector after publishing resp_seq or server_chunk) sleeps on the interrupt after the
 * spin phase, by §8's rule: store guest_waiting = 1, full fence, check again, sleep. */
#define WAIT_UNTIL(condition, ch, what, interruptible)                        \
    do {                                                                     \
        struct waiter w_;                                                    \
        waiter_init(&w_, (ch), (interruptible));                             \
        while (!(condition)) {                                               \
            CUresult r_;                                                     \
            if (waiter_sleeps(&w_)) {                                        \
                ivc_interrupts_drain((ch)->index);                           \
                ivc_store32((ch)->base + IVC_CH_GUEST_WAITING, 1);           \
                __atomic_thread_fence(__ATOMIC_SEQ_CST);                     \
                r_ = (condition) ? CUDA_SUCCESS : waiter_block(&w_, (ch), (what)); \
                ivc_store32((ch)->base + IVC_CH_GUEST_WAITING, 0);           \
            } else {                                                         \
                r_ = waiter_pause(&w_, (ch), (what));                        \
            }                                                                \
            if (r_ != CUDA_SUCCESS)                                          \
                return r_;                                                   \
        }                                                                    \
    } while (0)

static void ring_doorbell_if_parked(struct ivc_channel *ch)
{
    if (!(region.feature_bits & IVC_FEATURE_DOORBELL))
        return;
    /* Store (req_seq / ring_tail) then load server_parked: needs a full fence (§8). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (ivc_load32(ch->base + IVC_CH_SERVER_PARKED) == 1)
        ivc_region_ring_doorbell(&region, ch->index);
}

/* ---- attach, claim, release ----------------------------------------------------- */

static void *heartbeat_main(void *unused)
{
    (void)unused;
    for (;;) {
        struct timespec t = {0, HEARTBEAT_PERIOD_NS};
        nanosleep(&t, NULL);
        pthread_mutex_lock(&state_lock);
        if (!heartbeat_running) {
            pthread_mutex_unlock(&state_lock);
            return NULL;
        }
        uint64_t beat = ++process_heartbeat;
        for (uint32_t i = 0; attached && i < region.channel_count; i++)
            if (channels[i].in_use)
                ivc_store64(channels[i].base + IVC_CH_OWNER_HEARTBEAT, beat);
        if (attached)
            __atomic_fetch_add((uint64_t *)(region.base + IVC_HDR_GUEST_HEARTBEAT), 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&state_lock);
    }
}

static void thread_exit(void *value);
static void process_exit(void);
static void fork_child(void);

static void make_key(void)
{
    pthread_key_create(&thread_key, thread_exit);
    pthread_atfork(NULL, NULL, fork_child);
}

/* Caller holds state_lock. */
static CUresult attach_locked(void)
{
    if (attached)
        return CUDA_SUCCESS;
    CUresult r = ivc_region_open(&region);
    if (r != CUDA_SUCCESS)
        return r;
    channels = calloc(region.channel_count, sizeof *channels);
    if (channels == NULL) {
        ivc_region_close(&region);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < region.channel_count; i++) {
        struct ivc_channel *ch = &channels[i];
        ch->index = i;
        ch->base = region.base + region.channel_table_offset + (uint64_t)i * region.channel_stride;
        ch->request = ch->base + IVC_CH_AREAS;
        ch->response = ch->request + region.request_area_size;
        ch->ring = ch->response + region.response_area_size;
        ch->window = ch->ring + region.ring_size;
    }
    if (token == 0)
        token = new_token();
    ivc_interrupts_open(&region);
    read_busy_budget();
    attached = 1;
    return CUDA_SUCCESS;
}

const struct ivc_region *ivc_region(CUresult *error)
{
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&state_lock);
    CUresult r = attach_locked();
    pthread_mutex_unlock(&state_lock);
    if (error != NULL)
        *error = r;
    return r == CUDA_SUCCESS ? &region : NULL;
}

static CUresult hello(struct ivc_channel *ch)
{
    struct ivc_call call;
    memset(&call, 0, sizeof call);
    call.channel = ch;
    call.name = "ivc_hello";
    call.opcode = IVC_OP_ivc_hello;
    call.payload = ch->request + IVC_MSG_HEADER;
    call.capacity = region.request_area_size - IVC_MSG_HEADER;
    char message[256] = "";
    uint32_t server_protocol = 0, host_driver = 0;
    uint64_t server_hash = 0;
    ivc_put_u64(&call, IVC_PROTOCOL_VERSION);
    ivc_put_u64(&call, IVC_API_HASH);
    ivc_put_u64(&call, (uint32_t)getpid());
    ivc_put_u64(&call, (uint32_t)gettid());
    ivc_put_str(&call, LIBRARY_VERSION);
    ivc_put_u64(&call, sizeof message - 1);
    CUresult r = ivc_sync(&call);
    if (ivc_response(&call)) {
        ivc_get_u32(&call, &server_protocol);
        ivc_get_u64(&call, &server_hash);
        ivc_get_u32(&call, &host_driver);
        uint64_t n = ivc_get_buf(&call, message, sizeof message - 1);
        message[n < sizeof message ? n : sizeof message - 1] = '\0';
        r = ivc_finish(&call, r);
    } else if (r == CUDA_SUCCESS) {
        r = CUDA_ERROR_UNKNOWN;
    }
    if (r == CUDA_SUCCESS && (server_protocol != IVC_PROTOCOL_VERSION || server_hash != IVC_API_HASH)) {
        ivc_log("region %s: server speaks protocol %u with api_hash 0x%016" PRIx64
                ", this library protocol %d with 0x%016llx — install matching ivcuda-guest and ivcuda-host",
                region.path, server_protocol, server_hash, IVC_PROTOCOL_VERSION, IVC_API_HASH);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (r == CUDA_ERROR_DEVICE_UNAVAILABLE)
        return r; /* already said why */
    if (r != CUDA_SUCCESS) {
        ivc_log("region %s: the server refused this library (CUresult %d)%s%s", region.path, r,
                message[0] ? ": " : "", message);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    ivc_trace("hello on channel %u: host driver %u%s%s", ch->index, host_driver, message[0] ? ", " : "", message);
    return CUDA_SUCCESS;
}

/* Whether the server has answered everything, drained the ring and taken every chunk. */
static int channel_at_rest(const struct ivc_channel *ch)
{
    return ivc_load64(ch->base + IVC_CH_RESP_SEQ) == ivc_load64(ch->base + IVC_CH_REQ_SEQ)
           && ivc_load64(ch->base + IVC_CH_RING_HEAD) == ivc_load64(ch->base + IVC_CH_RING_TAIL)
           && ivc_load64(ch->base + IVC_CH_SERVER_CHUNK) == ivc_load64(ch->base + IVC_CH_GUEST_CHUNK);
}

/* Gives the channel back if it is at rest; one with a request still unanswered (its
 * server stopped answering) stays this process's until the server reclaims the token
 * and settles it (§3, §7), so that nobody else inherits the pending request. */
static void release(struct ivc_channel *ch)
{
    pthread_mutex_lock(&state_lock);
    if (channel_at_rest(ch)) {
        ch->in_use = 0;
        __atomic_store_n((uint64_t *)(ch->base + IVC_CH_OWNER), 0, __ATOMIC_RELEASE);
    } else {
        ivc_trace("channel %u is not at rest: left for the server to reclaim", ch->index);
    }
    pthread_mutex_unlock(&state_lock);
}

static CUresult claim(struct ivc_channel **out)
{
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&state_lock);
    CUresult r = attach_locked();
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&state_lock);
        return r;
    }
    struct ivc_channel *ch = NULL;
    for (uint32_t i = 0; i < region.channel_count && ch == NULL; i++) {
        uint64_t expected = 0;
        if (channels[i].in_use || ivc_load64(channels[i].base + IVC_CH_OWNER) != 0)
            continue;
        if (!channel_at_rest(&channels[i])) {
            /* §3: a free channel has equal counters; this one is not settled yet */
            ivc_trace("channel %u is free but not at rest; skipping it", i);
            continue;
        }
        if (__atomic_compare_exchange_n((uint64_t *)(channels[i].base + IVC_CH_OWNER), &expected, token, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            ch = &channels[i];
    }
    if (ch == NULL) {
        pthread_mutex_unlock(&state_lock);
        ivc_log("region %s: all %u channels are in use; raise channel.count on the host", region.path,
                region.channel_count);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ch->in_use = 1;
    ch->broken = 0;
    /* §3: counters continue from the values the channel carries. */
    ch->seq = ivc_load64(ch->base + IVC_CH_REQ_SEQ);
    ch->ring_tail = ivc_load64(ch->base + IVC_CH_RING_TAIL);
    ch->ring_head_seen = ivc_load64(ch->base + IVC_CH_RING_HEAD);
    ch->chunk = ivc_load64(ch->base + IVC_CH_GUEST_CHUNK);
    ivc_store32(ch->base + IVC_CH_OWNER_PID, (uint32_t)getpid());
    ivc_store32(ch->base + IVC_CH_OWNER_TID, (uint32_t)gettid());
    ivc_store64(ch->base + IVC_CH_OWNER_HEARTBEAT, process_heartbeat);
    if (!heartbeat_running) {
        pthread_t thread;
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&thread, &attributes, heartbeat_main, NULL) == 0)
            heartbeat_running = 1;
        pthread_attr_destroy(&attributes);
    }
    if (!exit_registered) {
        atexit(process_exit);
        exit_registered = 1;
    }
    pthread_mutex_unlock(&state_lock);
    r = hello(ch);
    if (r != CUDA_SUCCESS) {
        release(ch);
        return r;
    }
    thread_channel = ch;
    pthread_setspecific(thread_key, ch);
    *out = ch;
    return CUDA_SUCCESS;
}

static CUresult simple_call(struct ivc_channel *ch, uint32_t opcode, const char *name)
{
    struct ivc_call call;
    memset(&call, 0, sizeof call);
    call.channel = ch;
    call.name = name;
    call.opcode = opcode;
    call.payload = ch->request + IVC_MSG_HEADER;
    call.capacity = region.request_area_size - IVC_MSG_HEADER;
    CUresult r = ivc_sync(&call);
    if (ivc_response(&call))
        r = ivc_finish(&call, r);
    return r;
}

static void thread_exit(void *value)
{
    struct ivc_channel *ch = value;
    if (ch == NULL || !ch->in_use)
        return;
    if (!ch->broken)
        simple_call(ch, IVC_OP_ivc_goodbye, "ivc_goodbye");
    release(ch);
}

static void process_exit(void)
{
    if (!attached)
        return;
    struct ivc_channel *ch = thread_channel;
    if (ch == NULL || !ch->in_use) {
        int any = 0;
        for (uint32_t i = 0; i < region.channel_count; i++)
            any |= channels[i].in_use;
        if (!any || claim(&ch) != CUDA_SUCCESS)
            return;
    }
    if (!ch->broken)
        simple_call(ch, IVC_OP_ivc_process_exit, "ivc_process_exit");
    ivc_interrupts_report();
    pthread_mutex_lock(&state_lock);
    heartbeat_running = 0;
    for (uint32_t i = 0; i < region.channel_count; i++) {
        if (channels[i].in_use && channel_at_rest(&channels[i])) {
            channels[i].in_use = 0;
            __atomic_store_n((uint64_t *)(channels[i].base + IVC_CH_OWNER), 0, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&state_lock);
    thread_channel = NULL;
}

/* The child inherits the parent's channels in memory but not their ownership: it forgets
 * them (they stay the parent's in the region) and claims fresh ones with a new token. */
static void fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    state_lock = fresh;
    thread_channel = NULL;
    pthread_setspecific(thread_key, NULL);
    heartbeat_running = 0;
    process_heartbeat = 0;
    token = new_token();
    if (channels != NULL)
        for (uint32_t i = 0; i < region.channel_count; i++)
            channels[i].in_use = 0;
    ivc_transport_forget_process();
}

void ivc_transport_forget_process(void)
{
    ivc_cache_clear();
    ivc_interrupts_forget_process();
    ivc_memory_forget_process();
    ivc_module_forget_process();
    ivc_launch_forget_process();
}

/* ---- calls ---------------------------------------------------------------------- */

CUresult ivc_begin(struct ivc_call *call, uint32_t opcode, const char *name)
{
    memset(call, 0, sizeof *call);
    call->name = name;
    call->opcode = opcode;
    if (opcode != IVC_OP_cuInit && !atomic_load_explicit(&initialized, memory_order_acquire)) {
        ivc_trace("%s -> %d (before cuInit)", name, CUDA_ERROR_NOT_INITIALIZED);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    struct ivc_channel *ch = thread_channel;
    if (ch == NULL || !ch->in_use) {
        CUresult r = claim(&ch);
        if (r != CUDA_SUCCESS) {
            ivc_trace("%s -> %d (no channel)", name, r);
            return r;
        }
    }
    if (!ch->broken && ivc_load64(ch->base + IVC_CH_OWNER) != token) {
        /* §7: the server reclaimed this process (its resources are gone with it) */
        ivc_log("region %s channel %u: the server reclaimed it from this process; CUDA state is lost",
                region.path, ch->index);
        ch->broken = 1;
    }
    if (ch->broken) {
        ivc_trace("%s -> %d (channel %u lost its server)", name, CUDA_ERROR_DEVICE_UNAVAILABLE, ch->index);
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    call->channel = ch;
    call->payload = ch->request + IVC_MSG_HEADER;
    call->capacity = region.request_area_size - IVC_MSG_HEADER;
    return CUDA_SUCCESS;
}

static uint8_t *reserve(struct ivc_call *call, size_t size, const char *what)
{
    size_t padded = (size + 7) & ~(size_t)7;
    if (call->overflow != NULL || padded < size || padded > call->capacity - call->length) {
        if (call->overflow == NULL)
            call->overflow = what;
        return NULL;
    }
    uint8_t *p = call->payload + call->length;
    if (padded != size)
        memset(p + size, 0, padded - size);
    call->length += padded;
    return p;
}

void ivc_put_i64(struct ivc_call *call, int64_t value)
{
    uint8_t *p = reserve(call, 8, "a scalar");
    if (p != NULL)
        ivc_write64(p, (uint64_t)value);
}

void ivc_put_u64(struct ivc_call *call, uint64_t value)
{
    uint8_t *p = reserve(call, 8, "a scalar");
    if (p != NULL)
        ivc_write64(p, value);
}

void ivc_put_f32(struct ivc_call *call, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, 4);
    ivc_put_u64(call, bits);
}

void ivc_put_bytes(struct ivc_call *call, const void *bytes, size_t size)
{
    uint8_t *p = reserve(call, size, "a fixed-size value");
    if (p != NULL)
        memcpy(p, bytes, size);
}

void ivc_put_str(struct ivc_call *call, const char *text)
{
    size_t n = text == NULL ? 0 : strnlen(text, 4096);
    if (text == NULL || n >= 4096) {
        if (call->overflow == NULL)
            call->overflow = text == NULL ? "a NULL string" : "a string longer than 4095 bytes";
        return;
    }
    ivc_put_buf(call, text, n + 1);
}

void ivc_put_buf(struct ivc_call *call, const void *bytes, uint64_t size)
{
    if (bytes == NULL && size != 0) {
        if (call->overflow == NULL)
            call->overflow = "a NULL buffer";
        return;
    }
    ivc_put_u64(call, size);
    if (size > call->capacity) {
        if (call->overflow == NULL)
            call->overflow = "a buffer";
        return;
    }
    uint8_t *p = reserve(call, (size_t)size, "a buffer");
    if (p != NULL && size != 0)
        memcpy(p, bytes, (size_t)size);
}

static CUresult refuse_overflow(struct ivc_call *call)
{
    ivc_log("%s: %s does not fit the %zu-byte request area", call->name, call->overflow, call->capacity);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult ivc_publish(struct ivc_call *call)
{
    if (call->overflow != NULL)
        return refuse_overflow(call);
    struct ivc_channel *ch = call->channel;
    uint64_t seq = ch->seq + 1;
    ivc_write32(ch->request, call->opcode);
    ivc_write32(ch->request + 4, (uint32_t)call->length);
    ivc_write64(ch->request + 8, seq);
    ch->seq = seq;
    call->seq = seq;
    ivc_store64(ch->base + IVC_CH_REQ_SEQ, seq);
    ring_doorbell_if_parked(ch);
    return CUDA_SUCCESS;
}

CUresult ivc_await(struct ivc_call *call)
{
    struct ivc_channel *ch = call->channel;
    WAIT_UNTIL(ivc_load64(ch->base + IVC_CH_RESP_SEQ) == call->seq, ch, call->name, 1);
    int32_t result = (int32_t)ivc_read32(ch->response);
    uint32_t length = ivc_read32(ch->response + 4);
    uint64_t seq = ivc_read64(ch->response + 8);
    if (seq != call->seq || length > region.response_area_size - IVC_MSG_HEADER) {
        ivc_log("%s: malformed response header on channel %u (seq %" PRIu64 " for %" PRIu64 ", payload_len %u)",
                call->name, ch->index, seq, call->seq, length);
        return CUDA_ERROR_UNKNOWN;
    }
    call->response = ch->response + IVC_MSG_HEADER;
    call->response_length = length;
    ivc_trace("%s -> %d (channel %u, seq %" PRIu64 ")", call->name, result, ch->index, seq);
    if (call->opcode == IVC_OP_cuInit && result == CUDA_SUCCESS)
        atomic_store_explicit(&initialized, 1, memory_order_release);
    return result;
}

CUresult ivc_sync(struct ivc_call *call)
{
    CUresult r = ivc_publish(call);
    if (r != CUDA_SUCCESS)
        return r;
    return ivc_await(call);
}

CUresult ivc_sync_cached(struct ivc_call *call)
{
    if (call->overflow != NULL)
        return refuse_overflow(call);
    size_t length;
    const uint8_t *hit = ivc_cache_find(call->opcode, call->payload, call->length, &length);
    if (hit != NULL) {
        call->response = hit;
        call->response_length = length;
        ivc_trace("%s (cached)", call->name);
        return CUDA_SUCCESS;
    }
    call->cache_miss = 1;
    return ivc_sync(call);
}

int ivc_ring_fits(size_t payload)
{
    return IVC_RECORD_HEADER + ((payload + 7) & ~(size_t)7) <= region.ring_size;
}

CUresult ivc_async(struct ivc_call *call)
{
    if (call->overflow != NULL)
        return refuse_overflow(call);
    struct ivc_channel *ch = call->channel;
    uint64_t total = IVC_RECORD_HEADER + call->length;
    uint64_t size = region.ring_size;
    if (total > size) {
        ivc_log("%s: a %" PRIu64 "-byte record does not fit the %" PRIu64 "-byte ring", call->name, total, size);
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t tail = ch->ring_tail;
    uint64_t position = tail & (size - 1);
    uint64_t pad = position + total > size ? size - position : 0;
    /* Reading ring_head pulls in the server's cache line: only when the last value read
     * does not already prove there is room (the head only moves forward). */
    if (tail + pad + total - ch->ring_head_seen > size) {
        WAIT_UNTIL(tail + pad + total - (ch->ring_head_seen = ivc_load64(ch->base + IVC_CH_RING_HEAD)) <= size, ch,
                   "ring space", 0); /* the server raises no interrupt for ring_head */
    }
    if (pad != 0) {
        ivc_write32(ch->ring + position, (uint32_t)pad);
        ivc_write32(ch->ring + position + 4, IVC_OP_PAD);
        if (pad >= IVC_RECORD_HEADER)
            ivc_write64(ch->ring + position + 8, 0);
        tail += pad;
        position = 0;
    }
    uint8_t *record = ch->ring + position;
    ivc_write32(record, (uint32_t)total);
    ivc_write32(record + 4, call->opcode);
    ivc_write64(record + 8, 0);
    memcpy(record + IVC_RECORD_HEADER, call->payload, call->length);
    tail += total;
    ch->ring_tail = tail;
    ivc_store64(ch->base + IVC_CH_RING_TAIL, tail);
    ring_doorbell_if_parked(ch);
    ivc_trace("%s (queued)", call->name);
    return CUDA_SUCCESS;
}

/* Copies a window chunk. Large chunks go with non-temporal stores where the CPU has
 * them: the data is not read again by this CPU (the GPU DMAs it, or the program reads it
 * later), so skipping the read-for-ownership of every destination line is pure gain.
 * NT stores are weakly ordered: the fence makes them visible before the counter that
 * publishes the chunk. */
#if defined(__x86_64__)
#include <emmintrin.h>
static void copy_chunk(void *to, const void *from, size_t n)
{
    uint8_t *d = to;
    const uint8_t *s = from;
    if (n < 262144) {
        memcpy(d, s, n);
        return;
    }
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    size_t blocks = n / 64;
    for (size_t i = 0; i < blocks; i++, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n % 64);
    _mm_sfence();
}
#else
static void copy_chunk(void *to, const void *from, size_t n)
{
    memcpy(to, from, n);
}
#endif

CUresult ivc_stream_to_server(struct ivc_call *call, const void *source, size_t size)
{
    struct ivc_channel *ch = call->channel;
    size_t half = region.window_size / 2;
    const uint8_t *from = source;
    for (size_t done = 0; done < size;) {
        uint64_t c = ch->chunk;
        size_t n = size - done < half ? size - done : half;
        /* slot c%2 is free once the server consumed chunk c-2 (server_chunk >= c-1) */
        WAIT_UNTIL(ivc_load64(ch->base + IVC_CH_SERVER_CHUNK) + 1 >= c, ch, "a window slot", 1);
        copy_chunk(ch->window + (c % 2) * half, from + done, n);
        ch->chunk = c + 1;
        ivc_store64(ch->base + IVC_CH_GUEST_CHUNK, c + 1);
        ring_doorbell_if_parked(ch);
        done += n;
    }
    return CUDA_SUCCESS;
}

CUresult ivc_stream_from_server(struct ivc_call *call, void *destination, size_t size)
{
    struct ivc_channel *ch = call->channel;
    size_t half = region.window_size / 2;
    uint8_t *to = destination;
    for (size_t done = 0; done < size;) {
        uint64_t c = ch->chunk;
        size_t n = size - done < half ? size - done : half;
        WAIT_UNTIL(ivc_load64(ch->base + IVC_CH_SERVER_CHUNK) >= c + 1, ch, "a filled window slot", 1);
        copy_chunk(to + done, ch->window + (c % 2) * half, n);
        ch->chunk = c + 1;
        ivc_store64(ch->base + IVC_CH_GUEST_CHUNK, c + 1);
        ring_doorbell_if_parked(ch);
        done += n;
    }
    return CUDA_SUCCESS;
}

/* ---- decoding ------------------------------------------------------------------- */

int ivc_response(const struct ivc_call *call)
{
    return call->response != NULL && call->response_length > 0;
}

static const uint8_t *take(struct ivc_call *call, size_t size, const char *what)
{
    size_t padded = (size + 7) & ~(size_t)7;
    if (call->malformed != NULL || padded < size || padded > call->response_length - call->position) {
        if (call->malformed == NULL)
            call->malformed = what;
        return NULL;
    }
    const uint8_t *p = call->response + call->position;
    call->position += padded;
    return p;
}

void ivc_get_i32(struct ivc_call *call, int32_t *value)
{
    const uint8_t *p = take(call, 8, "a scalar");
    if (p != NULL && value != NULL)
        *value = (int32_t)ivc_read64(p);
}

void ivc_get_u32(struct ivc_call *call, uint32_t *value)
{
    const uint8_t *p = take(call, 8, "a scalar");
    if (p != NULL && value != NULL)
        *value = (uint32_t)ivc_read64(p);
}

void ivc_get_u64(struct ivc_call *call, uint64_t *value)
{
    const uint8_t *p = take(call, 8, "a scalar");
    if (p != NULL && value != NULL)
        *value = ivc_read64(p);
}

void ivc_get_f32(struct ivc_call *call, float *value)
{
    const uint8_t *p = take(call, 8, "a float");
    if (p != NULL && value != NULL) {
        uint32_t bits = (uint32_t)ivc_read64(p);
        memcpy(value, &bits, 4);
    }
}

void ivc_get_handle(struct ivc_call *call, void **handle)
{
    const uint8_t *p = take(call, 8, "a handle");
    if (p != NULL && handle != NULL)
        *handle = (void *)(uintptr_t)ivc_read64(p);
}

void ivc_get_bytes(struct ivc_call *call, void *bytes, size_t size)
{
    const uint8_t *p = take(call, size, "a fixed-size value");
    if (p != NULL && bytes != NULL)
        memcpy(bytes, p, size);
}

uint64_t ivc_get_buf(struct ivc_call *call, void *bytes, uint64_t capacity)
{
    uint64_t length = 0;
    ivc_get_u64(call, &length);
    if (call->malformed != NULL)
        return 0;
    if (length > capacity) {
        call->malformed = "a buffer longer than its capacity";
        return 0;
    }
    const uint8_t *p = take(call, (size_t)length, "a buffer");
    if (p != NULL && bytes != NULL && length != 0)
        memcpy(bytes, p, (size_t)length);
    return p != NULL ? length : 0;
}

CUresult ivc_finish(struct ivc_call *call, CUresult result)
{
    if (call->malformed == NULL && call->position != call->response_length)
        call->malformed = "trailing bytes";
    if (call->malformed != NULL) {
        ivc_log("%s: malformed response (%s) on channel %u", call->name, call->malformed,
                call->channel ? call->channel->index : 0);
        return CUDA_ERROR_UNKNOWN;
    }
    if (call->cache_miss && result == CUDA_SUCCESS)
        ivc_cache_put(call->opcode, call->payload, call->length, call->response, call->response_length);
    return result;
}

CUresult ivc_null_argument(const char *function, const char *parameter)
{
    ivc_trace("%s: %s is NULL -> CUDA_ERROR_INVALID_VALUE", function, parameter);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult ivc_unsupported(const char *function, atomic_int *logged)
{
    if (atomic_exchange(logged, 1) == 0)
        ivc_log("%s is not supported by this guest library (CUDA_ERROR_NOT_SUPPORTED)", function);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- the pool and small-copy limits ---------------------------------------------- */

int ivc_in_pool(const void *pointer, size_t size)
{
    if (!attached || region.pool_size == 0 || pointer == NULL)
        return 0;
    uintptr_t p = (uintptr_t)pointer;
    uintptr_t start = (uintptr_t)(region.base + region.pool_offset);
    return p >= start && p - start <= region.pool_size && size <= region.pool_size - (p - start);
}

uint64_t ivc_pool_offset(const void *pointer)
{
    return (uint64_t)((const uint8_t *)pointer - (region.base + region.pool_offset));
}

void *ivc_pool_pointer(uint64_t offset)
{
    return region.base + region.pool_offset + offset;
}

size_t ivc_inline_limit(void)
{
    if (!attached)
        return 0;
    uint32_t smaller = region.request_area_size < region.response_area_size ? region.request_area_size
                                                                           : region.response_area_size;
    return smaller - 64;
}
