/* Host functions run in this process (docs/graphs.md): cuLaunchHostFunc and
 * cuStreamAddCallback put a host function of the server's on the driver stream; when the
 * stream reaches it, the server hands (fn, userData) to this process's host-function
 * thread, which asks with ivc_host_next on a channel of its own, runs the function and
 * reports it ran with its next ask; the server holds the stream until then, so the
 * stream's order is kept. One thread runs them one after another, as the driver does. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "call.h"
#include "hostfn.h"
#include "ivc_api.h"
#include "log.h"
#include "ordering.h"

/* How long one ask waits on the server before asking again. */
#define WAIT_MS 1000

static pthread_mutex_t thread_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t thread_pid; /* the process whose thread runs; 0: none */

static void run(uint32_t kind, uint64_t fn, uint64_t user_data, uint64_t stream, int status)
{
    switch (kind) {
    case IVC_HOST_KIND_FN:
    case IVC_HOST_KIND_DESTRUCTOR:
        ((CUhostFn)(uintptr_t)fn)((void *)(uintptr_t)user_data);
        break;
    case IVC_HOST_KIND_STREAM_CALLBACK:
        ((CUstreamCallback)(uintptr_t)fn)((CUstream)(uintptr_t)stream, (CUresult)status, (void *)(uintptr_t)user_data);
        break;
    default:
        ivc_log("host function thread: the server sent kind %u; not run", kind);
    }
}

static void *host_thread(void *unused)
{
    (void)unused;
    /* the queued work another thread's call would wait for may be held up by this very thread:
     * a stream stops at a host function until it has run here */
    ivc_ordering_exempt_thread();
    uint64_t done = 0;
    for (;;) {
        uint64_t id = 0, fn = 0, user_data = 0, stream = 0;
        uint32_t kind = 0;
        int status = 0;
        CUresult r = ivc_host_next(done, WAIT_MS, &id, &kind, &fn, &user_data, &stream, &status);
        done = 0;
        if (r == CUDA_SUCCESS) {
            if (fn != 0)
                run(kind, fn, user_data, stream, status);
            done = id;
        } else if (r != CUDA_ERROR_NOT_READY) {
            /* the channel or the server is gone: the next host function starts a new thread */
            ivc_trace("host function thread ends (ivc_host_next -> %d)", r);
            pthread_mutex_lock(&thread_lock);
            if (thread_pid == getpid())
                thread_pid = 0;
            pthread_mutex_unlock(&thread_lock);
            return NULL;
        }
    }
}

CUresult ivc_hostfn_start(void)
{
    if (!ivc_call_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&thread_lock);
    if (thread_pid != getpid()) {
        pthread_t thread;
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&thread, &attributes, host_thread, NULL) == 0)
            thread_pid = getpid();
        else
            r = CUDA_ERROR_OUT_OF_MEMORY;
        pthread_attr_destroy(&attributes);
    }
    pthread_mutex_unlock(&thread_lock);
    return r;
}

static CUresult enqueue(CUstream stream, uint32_t kind, uint64_t fn, uint64_t user_data, CUstream guest_stream)
{
    if (fn == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ivc_hostfn_start();
    if (r != CUDA_SUCCESS)
        return r;
    return ivc_host_enqueue(stream, kind, fn, user_data, (uint64_t)(uintptr_t)guest_stream);
}

IVC_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return enqueue(hStream, IVC_HOST_KIND_FN, (uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)userData, hStream);
}
IVC_ALIASES_cuLaunchHostFunc

IVC_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return cuLaunchHostFunc(hStream == NULL ? CU_STREAM_PER_THREAD : hStream, fn, userData);
}

IVC_EXPORT CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags)
{
    if (flags != 0) /* reserved, must be 0 */
        return CUDA_ERROR_INVALID_VALUE;
    /* the callback gets the stream as the program named it */
    return enqueue(hStream, IVC_HOST_KIND_STREAM_CALLBACK, (uint64_t)(uintptr_t)callback, (uint64_t)(uintptr_t)userData,
                   hStream);
}
IVC_ALIASES_cuStreamAddCallback

IVC_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void *userData,
                                             unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return enqueue(hStream == NULL ? CU_STREAM_PER_THREAD : hStream, IVC_HOST_KIND_STREAM_CALLBACK,
                   (uint64_t)(uintptr_t)callback, (uint64_t)(uintptr_t)userData, hStream);
}
