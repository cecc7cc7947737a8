/* Each thread's session with the server (docs/protocol.md §3, §9): a thread's first call
 * claims it a channel and says ivc_hello on it (versions checked, the server's refusal
 * shown); every call starts here (ivc_begin) on the thread's channel; ivc_goodbye at
 * thread exit and ivc_process_exit at process exit give the channels back. It stands
 * above the call path because the hello and the goodbyes are calls, and below the
 * features, which start their calls with ivc_begin. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "call.h"
#include "call_profile.h"
#include "interrupts.h"
#include "ivc_api.h"
#include "log.h"
#include "ordering.h"
#include "session.h"

#define LIBRARY_VERSION "ivcuda-guest 0.1.0"

static _Thread_local struct ivc_channel *thread_channel;
/* how many channels this thread has claimed: a new claim is a new server-side session */
static _Thread_local unsigned long thread_claims;
/* Its destructor says goodbye for a thread that exits holding a channel. */
static pthread_key_t thread_key;
static int key_created;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
/* Set once a hello of this process succeeded: from then on it may hold CUDA state on the server,
 * and a server restart loses it (the process does not follow the server to its new epoch). */
static int greeted_once;
/* Set once ivc_process_exit went: the server frees the process, so nothing more is sent
 * (exit handlers registered before ours, as cudart's teardown, run after it). */
static int process_exited;

/* Whether a failed hello met a server replacing its CUDA process (§7): it refused the hello
 * with CUDA_ERROR_SYSTEM_NOT_READY (a fatal GPU fault poisons it), or it left READY or its
 * epoch moved while the hello waited. */
static int restarting(const struct ivc_channel *ch, CUresult r)
{
    const uint8_t *h = ch->region->base;
    return r == CUDA_ERROR_SYSTEM_NOT_READY || ivc_load32(h + IVC_HDR_SERVER_STATE) == IVC_STATE_INIT
           || ivc_load32(h + IVC_HDR_EPOCH) != ch->region->epoch;
}

static CUresult hello(struct ivc_channel *ch)
{
    struct ivc_call call;
    ivc_call_on(&call, ch, IVC_OP_ivc_hello, "ivc_hello");
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
    const char *path = ch->region->path;
    if (r != CUDA_SUCCESS && restarting(ch, r))
        return CUDA_ERROR_SYSTEM_NOT_READY;
    if (r == CUDA_SUCCESS && (server_protocol != IVC_PROTOCOL_VERSION || server_hash != IVC_API_HASH)) {
        ivc_log("region %s: server speaks protocol %u with api_hash 0x%016" PRIx64
                ", this library protocol %d with 0x%016llx — install matching ivcuda-guest and ivcuda-host",
                path, server_protocol, server_hash, IVC_PROTOCOL_VERSION, IVC_API_HASH);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (r == CUDA_ERROR_DEVICE_UNAVAILABLE)
        return r; /* already said why */
    if (r != CUDA_SUCCESS) {
        ivc_log("region %s: the server refused this library (CUresult %d)%s%s", path, r, message[0] ? ": " : "",
                message);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    ivc_trace("hello on channel %u: host driver %u%s%s", ch->index, host_driver, message[0] ? ", " : "", message);
    return CUDA_SUCCESS;
}

/* A call without parameters or results: the goodbyes. */
static CUresult notice(struct ivc_channel *ch, uint32_t opcode, const char *name)
{
    struct ivc_call call;
    ivc_call_on(&call, ch, opcode, name);
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
        notice(ch, IVC_OP_ivc_goodbye, "ivc_goodbye");
    /* the process's last channel stays its own: the server watches the process through it */
    if (!ch->broken && ivc_channel_keep_if_last(ch))
        return;
    ivc_channel_release(ch);
}

static CUresult claim_for_thread(struct ivc_channel **out);

static void process_exit(void)
{
    struct ivc_channel *ch = thread_channel;
    if (ch == NULL || !ch->in_use) {
        /* another thread holds one: the notice goes on a channel of this thread's own */
        if (!ivc_channel_any_in_use() || claim_for_thread(&ch) != CUDA_SUCCESS)
            return;
    }
    if (!ch->broken)
        notice(ch, IVC_OP_ivc_process_exit, "ivc_process_exit");
    __atomic_store_n(&process_exited, 1, __ATOMIC_RELEASE);
    ivc_interrupts_report();
    ivc_profile_report();
    ivc_channel_release_all();
    thread_channel = NULL;
}

static void make_key(void)
{
    key_created = pthread_key_create(&thread_key, thread_exit) == 0;
}

static void register_process_exit(void)
{
    atexit(process_exit);
}

static CUresult claim_for_thread(struct ivc_channel **out)
{
    pthread_once(&key_once, make_key);
    struct ivc_channel *ch;
    CUresult r = ivc_channel_claim(&ch);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_once(&exit_once, register_process_exit);
    r = hello(ch);
    if (r == CUDA_ERROR_SYSTEM_NOT_READY && !__atomic_load_n(&greeted_once, __ATOMIC_ACQUIRE)) {
        /* the server replaces its CUDA process; this process has no state there: follow it, once */
        ivc_channel_release(ch);
        r = ivc_channel_follow_restart();
        if (r != CUDA_SUCCESS)
            return r;
        r = ivc_channel_claim(&ch);
        if (r != CUDA_SUCCESS)
            return r;
        r = hello(ch);
    }
    if (r == CUDA_ERROR_SYSTEM_NOT_READY)
        ivc_log("region %s: the server is replacing its CUDA process after a fatal GPU fault; this process "
                "held CUDA state there, which is lost", ch->region->path);
    if (r != CUDA_SUCCESS) {
        ivc_channel_release(ch);
        return r;
    }
    __atomic_store_n(&greeted_once, 1, __ATOMIC_RELEASE);
    thread_channel = ch;
    pthread_setspecific(thread_key, ch);
    thread_claims++; /* the server side of a new channel has nothing current */
    *out = ch;
    return CUDA_SUCCESS;
}

/* A call that cannot start leaves `call` as it was: the caller returns the result. */
CUresult ivc_begin(struct ivc_call *call, uint32_t opcode, const char *name)
{
    if (opcode != IVC_OP_cuInit && !ivc_call_initialized()) {
        ivc_trace("%s -> %d (before cuInit)", name, CUDA_ERROR_NOT_INITIALIZED);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (__atomic_load_n(&process_exited, __ATOMIC_ACQUIRE)) {
        /* as the driver answers once it is shut down: the server is freeing this process, and
         * a hello of its token now would be refused (a new session would see none of its state) */
        ivc_trace("%s -> %d (after ivc_process_exit)", name, CUDA_ERROR_DEINITIALIZED);
        return CUDA_ERROR_DEINITIALIZED;
    }
    struct ivc_channel *ch = thread_channel;
    if (ch == NULL || !ch->in_use) {
        CUresult r = claim_for_thread(&ch);
        if (r != CUDA_SUCCESS) {
            ivc_trace("%s -> %d (no channel)", name, r);
            return r;
        }
    }
    if (!ch->broken && ivc_load64(ch->base + IVC_CH_OWNER) != ch->token) {
        /* §7: the server reclaimed this process (its resources are gone with it) */
        ivc_log("region %s channel %u: the server reclaimed it from this process; CUDA state is lost",
                ch->region->path, ch->index);
        ch->broken = 1;
    }
    if (ch->broken) {
        if (ch->loss[0] != '\0') {
            /* it broke after the previous call had its answer (wait.c): said once, here */
            ivc_log("region %s channel %u: server unavailable after the previous call: %s", ch->region->path,
                    ch->index, ch->loss);
            ch->loss[0] = '\0';
        }
        ivc_trace("%s -> %d (channel %u lost its server)", name, CUDA_ERROR_DEVICE_UNAVAILABLE, ch->index);
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    /* after what the process's other threads queued before this call (ordering.c) */
    CUresult ordered = ivc_ordering_wait(ch);
    if (ordered != CUDA_SUCCESS) {
        ivc_trace("%s -> %d (waiting for other threads' queued work)", name, ordered);
        return ordered;
    }
    ivc_call_on(call, ch, opcode, name);
    return CUDA_SUCCESS;
}

unsigned long ivc_session_thread_claim(void)
{
    struct ivc_channel *ch = thread_channel;
    return ch != NULL && ch->in_use && !ch->broken ? thread_claims : 0;
}

void ivc_session_forget_process(void)
{
    thread_channel = NULL;
    process_exited = 0;
    greeted_once = 0;
    if (key_created)
        pthread_setspecific(thread_key, NULL);
}
