/* This process's attachment to the region and its channels (docs/protocol.md §3, §7, §8):
 * the region mapped once per process, a channel claimed by putting the process token into
 * its `owner`, the heartbeat thread that keeps the claims alive, a channel given back only
 * at rest, and the doorbell rung after a publish. It sends no call itself: the hello and
 * the goodbyes are calls, so they belong to the session (session.c), above the call path.
 * One lock guards the process-wide state (attaching, claiming, releasing, the heartbeat);
 * a call in flight touches only its own channel and takes no lock. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include "channel.h"
#include "region_check.h"
#include "restart.h"
#include "clock.h"
#include "interrupts.h"
#include "log.h"

#define HEARTBEAT_PERIOD_NS 250000000L

/* Process-wide state; forgotten in a forked child. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ivc_region region;
static int attached;
static uint64_t token;
static struct ivc_channel *channels; /* channel_count entries; in_use marks ours */
static uint64_t process_heartbeat;
static int heartbeat_running;
/* One bit per channel of this process that has queued ring work since it was claimed: what
 * the process's other threads order their calls after (ordering.c). Set by the owner thread
 * only, cleared when the channel is given back (at rest: nothing queued is left). */
static _Atomic uint64_t *queued_words;

/* pid in the high half, a random non-zero nonce in the low half: a forked child or a
 * reused pid claims with a value of its own. */
static uint64_t new_token(void)
{
    uint32_t nonce = 0;
    while (nonce == 0) {
        if (getrandom(&nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
            nonce = (uint32_t)ivc_now_ns() ^ (uint32_t)getpid();
    }
    return (uint64_t)(uint32_t)getpid() << 32 | nonce;
}

/* §7: every channel this process holds, and the header's guest heartbeat, count up
 * while the process lives; the server reclaims channels whose count stops. */
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

/* Caller holds state_lock. */
static void start_heartbeat_locked(void)
{
    if (heartbeat_running)
        return;
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attributes, heartbeat_main, NULL) == 0)
        heartbeat_running = 1;
    pthread_attr_destroy(&attributes);
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
    queued_words = calloc((region.channel_count + 63) / 64, sizeof *queued_words);
    if (channels == NULL || queued_words == NULL) {
        free(channels);
        free((void *)queued_words);
        channels = NULL;
        queued_words = NULL;
        ivc_region_close(&region);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < region.channel_count; i++) {
        struct ivc_channel *ch = &channels[i];
        ch->region = &region;
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
    attached = 1;
    /* §7: the VM's heartbeat counts this process from now on, channel or not: a process
     * waiting for a channel is what lets the server find the dead one that holds it */
    start_heartbeat_locked();
    return CUDA_SUCCESS;
}

const struct ivc_region *ivc_region(CUresult *error)
{
    pthread_mutex_lock(&state_lock);
    CUresult r = attach_locked();
    pthread_mutex_unlock(&state_lock);
    if (error != NULL)
        *error = r;
    return r == CUDA_SUCCESS ? &region : NULL;
}

/* Whether the server has answered everything, drained the ring and taken every chunk. */
static int at_rest(const struct ivc_channel *ch)
{
    return ivc_load64(ch->base + IVC_CH_RESP_SEQ) == ivc_load64(ch->base + IVC_CH_REQ_SEQ)
           && ivc_load64(ch->base + IVC_CH_RING_HEAD) == ivc_load64(ch->base + IVC_CH_RING_TAIL)
           && ivc_load64(ch->base + IVC_CH_SERVER_CHUNK) == ivc_load64(ch->base + IVC_CH_GUEST_CHUNK);
}

/* Caller holds state_lock; the channel is ours and at rest. Owner token -> 0 only if it is
 * still ours: the server may have reclaimed it and another process claimed it since. */
static void give_back_locked(struct ivc_channel *ch)
{
    uint64_t expected = ch->token;
    ch->in_use = 0;
    ch->spare = 0;
    atomic_fetch_and_explicit(&queued_words[ch->index / 64], ~(1ULL << (ch->index % 64)), memory_order_relaxed);
    __atomic_compare_exchange_n((uint64_t *)(ch->base + IVC_CH_OWNER), &expected, 0, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
}

/* Caller holds state_lock: a free channel at rest, claimed, or NULL. */
static struct ivc_channel *claim_free_locked(void)
{
    for (uint32_t i = 0; i < region.channel_count; i++) {
        if (channels[i].in_use && channels[i].spare) {
            channels[i].spare = 0;
            return &channels[i];
        }
    }
    for (uint32_t i = 0; i < region.channel_count; i++) {
        uint64_t expected = 0;
        if (channels[i].in_use || ivc_load64(channels[i].base + IVC_CH_OWNER) != 0)
            continue;
        if (!at_rest(&channels[i])) {
            /* §3: a free channel has equal counters; this one is not settled yet */
            ivc_trace("channel %u is free but not at rest; skipping it", i);
            continue;
        }
        if (__atomic_compare_exchange_n((uint64_t *)(channels[i].base + IVC_CH_OWNER), &expected, token, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            struct ivc_channel *ch = &channels[i];
            ch->in_use = 1;
            ch->broken = 0;
            ch->loss[0] = '\0';
            ch->token = token;
            /* §3: counters continue from the values the channel carries. */
            ch->seq = ivc_load64(ch->base + IVC_CH_REQ_SEQ);
            ch->ring_tail = ivc_load64(ch->base + IVC_CH_RING_TAIL);
            ch->ring_head_seen = ivc_load64(ch->base + IVC_CH_RING_HEAD);
            atomic_store_explicit(&ch->published_tail, ch->ring_tail, memory_order_relaxed);
            atomic_store_explicit(&ch->drained_tail, ch->ring_tail, memory_order_release);
            ch->chunk = ivc_load64(ch->base + IVC_CH_GUEST_CHUNK);
            ivc_store32(ch->base + IVC_CH_OWNER_PID, (uint32_t)getpid());
            ivc_store64(ch->base + IVC_CH_OWNER_HEARTBEAT, process_heartbeat);
            return ch;
        }
    }
    return NULL;
}

CUresult ivc_channel_claim(struct ivc_channel **out)
{
    uint64_t deadline = 0, beat_at_start = 0;
    for (;;) {
        pthread_mutex_lock(&state_lock);
        CUresult r = attach_locked();
        if (r != CUDA_SUCCESS) {
            pthread_mutex_unlock(&state_lock);
            return r;
        }
        struct ivc_channel *ch = claim_free_locked();
        if (ch != NULL) {
            ivc_store32(ch->base + IVC_CH_OWNER_TID, (uint32_t)gettid());
            pthread_mutex_unlock(&state_lock);
            *out = ch;
            return CUDA_SUCCESS;
        }
        uint64_t now = ivc_now_ns();
        if (deadline == 0) {
            /* a dead process's channels come back within owner_timeout_ms: wait that long */
            uint32_t timeout_ms = ivc_load32(region.base + IVC_HDR_OWNER_TIMEOUT_MS);
            deadline = now + ((uint64_t)(timeout_ms < 600000 ? timeout_ms : 600000) + 2000) * 1000000;
            beat_at_start = ivc_load64(region.base + IVC_HDR_SERVER_HEARTBEAT);
            ivc_trace("all %u channels are in use; waiting up to %u ms for one", region.channel_count,
                      timeout_ms + 2000);
        }
        pthread_mutex_unlock(&state_lock);
        if (now >= deadline) {
            /* channels come back only through a live server: without one, "in use" would send the
             * admin to channel.count when the server (or the back-end domain serving this VM) is away */
            uint32_t state = ivc_load32(region.base + IVC_HDR_SERVER_STATE);
            if (state != IVC_STATE_READY || ivc_load64(region.base + IVC_HDR_SERVER_HEARTBEAT) == beat_at_start) {
                ivc_log("region %s: no channel came free and no server answers (server_state %u, server_heartbeat "
                        "still): is this VM's cuda-server, or its back-end domain, running?",
                        region.path, state);
                return CUDA_ERROR_DEVICE_UNAVAILABLE;
            }
            ivc_log("region %s: all %u channels are in use; raise channel.count on the host", region.path,
                    region.channel_count);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        struct timespec t = {0, 10000000L};
        nanosleep(&t, NULL);
    }
}

int ivc_channel_keep_if_last(struct ivc_channel *ch)
{
    pthread_mutex_lock(&state_lock);
    int others = 0;
    for (uint32_t i = 0; attached && i < region.channel_count; i++)
        others += channels[i].in_use && &channels[i] != ch;
    int keep = ch->in_use && others == 0;
    if (keep)
        ch->spare = 1;
    pthread_mutex_unlock(&state_lock);
    return keep;
}

/* A channel with a request still unanswered (its server stopped answering) stays this
 * process's until the server reclaims the token and settles it, so that nobody else
 * inherits the pending request. */
void ivc_channel_release(struct ivc_channel *ch)
{
    pthread_mutex_lock(&state_lock);
    if (at_rest(ch))
        give_back_locked(ch);
    else
        ivc_trace("channel %u is not at rest: left for the server to reclaim", ch->index);
    pthread_mutex_unlock(&state_lock);
}

int ivc_channel_any_in_use(void)
{
    if (!attached)
        return 0;
    int any = 0;
    for (uint32_t i = 0; i < region.channel_count; i++)
        any |= channels[i].in_use;
    return any;
}

void ivc_channel_release_all(void)
{
    pthread_mutex_lock(&state_lock);
    heartbeat_running = 0;
    for (uint32_t i = 0; attached && i < region.channel_count; i++)
        if (channels[i].in_use && at_rest(&channels[i]))
            give_back_locked(&channels[i]);
    pthread_mutex_unlock(&state_lock);
}

/* Layout fields a restarted server must keep (the same server, the same arguments): the
 * restarted header's, as checked, against the ones in use. */
static int same_layout(const struct ivc_region *r, const struct ivc_region *now)
{
    return now->channel_count == r->channel_count && now->channel_stride == r->channel_stride
           && now->channel_table_offset == r->channel_table_offset && now->request_area_size == r->request_area_size
           && now->response_area_size == r->response_area_size && now->ring_size == r->ring_size
           && now->window_size == r->window_size && now->pool_offset == r->pool_offset
           && now->pool_size == r->pool_size;
}

CUresult ivc_channel_follow_restart(void)
{
    pthread_mutex_lock(&state_lock);
    int was_attached = attached;
    uint32_t epoch = region.epoch;
    pthread_mutex_unlock(&state_lock);
    if (!was_attached)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ivc_server_wait_new_epoch(region.base, epoch)) {
        uint32_t state = ivc_load32(region.base + IVC_HDR_SERVER_STATE);
        char message[257];
        memcpy(message, region.base + IVC_HDR_SERVER_MESSAGE, 256);
        message[256] = '\0';
        ivc_log("region %s: the server is replacing its CUDA process after a fatal GPU fault and did not come back "
                "(server_state %u%s%s; IVCUDA_SERVER_WAIT_S)", region.path, state, message[0] ? ": " : "", message);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    pthread_mutex_lock(&state_lock);
    char why[2000];
    CUresult r = CUDA_SUCCESS;
    static struct ivc_region restarted; /* under state_lock; too large for a thread's stack */
    if (!ivc_region_check_layout(region.base, region.size, &restarted, why, sizeof why)) {
        ivc_log("region %s, after the server restarted: %s", region.path, why);
        r = CUDA_ERROR_NOT_INITIALIZED;
    } else if (!same_layout(&region, &restarted)) {
        ivc_log("region %s: the server restarted with another channel or pool layout; restart the program",
                region.path);
        r = CUDA_ERROR_NOT_INITIALIZED;
    } else {
        /* the new server wiped the channel table before READY: every claim of ours went with it */
        region.epoch = ivc_read32(region.base + IVC_HDR_EPOCH);
        for (uint32_t i = 0; i < region.channel_count; i++) {
            channels[i].in_use = channels[i].spare = channels[i].broken = 0;
            channels[i].loss[0] = '\0';
        }
        for (uint32_t w = 0; w < (region.channel_count + 63) / 64; w++)
            atomic_store_explicit(&queued_words[w], 0, memory_order_relaxed);
        ivc_trace("region %s: following the restarted server to epoch %u", region.path, region.epoch);
    }
    pthread_mutex_unlock(&state_lock);
    return r;
}

/* The child has one thread: the lock may have been held by another of the parent's. The
 * channels keep their mapping and layout; the region's `owner` still says the parent. */
void ivc_channel_forget_process(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    state_lock = fresh;
    heartbeat_running = 0;
    process_heartbeat = 0;
    if (token != 0) /* a process that never attached gets its token when it does */
        token = new_token();
    if (channels != NULL)
        for (uint32_t i = 0; i < region.channel_count; i++)
            channels[i].in_use = channels[i].spare = 0;
    if (queued_words != NULL)
        for (uint32_t w = 0; w < (region.channel_count + 63) / 64; w++)
            atomic_store_explicit(&queued_words[w], 0, memory_order_relaxed);
}

void ivc_channel_mark_queued(struct ivc_channel *ch, uint64_t tail)
{
    atomic_store_explicit(&ch->published_tail, tail, memory_order_release);
    uint64_t bit = 1ULL << (ch->index % 64);
    _Atomic uint64_t *word = &queued_words[ch->index / 64];
    /* the bit stays set while the channel is held: one read-modify-write per claim, not per record */
    if (!(atomic_load_explicit(word, memory_order_relaxed) & bit))
        atomic_fetch_or_explicit(word, bit, memory_order_release);
}

int ivc_channel_for_each_queued(const struct ivc_channel *except, int (*fn)(struct ivc_channel *, void *),
                                void *argument)
{
    if (!attached)
        return 0;
    for (uint32_t w = 0; w < (region.channel_count + 63) / 64; w++) {
        uint64_t bits = atomic_load_explicit(&queued_words[w], memory_order_acquire);
        if (except != NULL && except->index / 64 == w)
            bits &= ~(1ULL << (except->index % 64));
        while (bits != 0) {
            uint32_t index = w * 64 + (uint32_t)__builtin_ctzll(bits);
            bits &= bits - 1;
            int stop = fn(&channels[index], argument);
            if (stop != 0)
                return stop;
        }
    }
    return 0;
}

uint64_t ivc_channel_process_token(void)
{
    return token;
}

/* ---- the pool and the copy limits ---------------------------------------------------- */

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

