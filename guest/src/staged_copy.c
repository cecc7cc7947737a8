/* Copies between device memory and pageable guest memory inside graphs (docs/graphs.md,
 * "Pageable memory in graphs"): the server cannot reach pageable guest memory when a graph
 * runs later, so such a copy becomes one child-graph node of two: a copy between the device
 * and a pinned staging block of this process (region pool, which the server reaches), and a
 * host function, run by this library's host-function thread at every launch, that moves the
 * bytes between the block and the program's memory (after the copy to the host, before the
 * copy to the device). Used by copy nodes made by hand (graphbuild.c) and by cuMemcpy*Async
 * of pageable memory on a capturing stream (memory.c).
 *
 * A staging block and its record live until the process exits: graphs, their clones and
 * executable graphs may run the node at any time, and nothing tells this library when the
 * last of them went. So they are bounded per process (STAGED_MAX_BYTES, STAGED_MAX_COPIES). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "channel.h"
#include "hostfn.h"
#include "ivc_api.h"
#include "log.h"
#include "staged_copy.h"

/* pinned.c's exports (custom functions have no generated prototype) */
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
CUresult cuMemFreeHost(void *p);

#define STAGED_MAX_BYTES (64u << 20)
#define STAGED_MAX_COPIES 1024
/* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED .. the last capture error: the capture ended anyway */
#define CAPTURE_ERRORS_FIRST 900
#define CAPTURE_ERRORS_LAST 908

struct staged {
    void *guest;   /* the program's pageable memory */
    void *staging; /* the pinned block in the pool */
    size_t size;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t staged_bytes;
static unsigned staged_copies;
/* captures begun and not yet ended in this process: while 0, no copy asks the server */
static int captures;

/* Run by the host-function thread, in stream order. */
static void copy_to_guest(void *record)
{
    const struct staged *s = record;
    memcpy(s->guest, s->staging, s->size);
}

static void copy_to_staging(void *record)
{
    const struct staged *s = record;
    memcpy(s->staging, s->guest, s->size);
}

static int reserve(size_t size)
{
    pthread_mutex_lock(&lock);
    int ok = staged_copies < STAGED_MAX_COPIES && size <= STAGED_MAX_BYTES - staged_bytes;
    if (ok) {
        staged_copies++;
        staged_bytes += size;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

static void unreserve(size_t size)
{
    pthread_mutex_lock(&lock);
    staged_copies--;
    staged_bytes -= size;
    pthread_mutex_unlock(&lock);
}

CUresult ivc_staged_copy(CUgraphNode *node, CUgraph graph, CUstream stream, const uint64_t *entries, uint32_t count,
                         int to_host, CUdeviceptr device, void *host, size_t size)
{
    if (size == 0 || host == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!reserve(size)) {
        ivc_log("a copy of %zu bytes of pageable memory in a graph: this process stages %u copies, %zu bytes, "
                "the most it may (use pinned memory)",
                size, staged_copies, staged_bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = ivc_hostfn_start();
    struct staged *s = calloc(1, sizeof *s);
    void *staging = NULL;
    if (r == CUDA_SUCCESS && s == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        r = cuMemHostAlloc(&staging, size, 0);
    if (r == CUDA_SUCCESS) {
        *s = (struct staged){.guest = host, .staging = staging, .size = size};
        CUhostFn fn = to_host ? copy_to_guest : copy_to_staging;
        r = ivc_graph_staged_copy(node, graph, stream, count, entries, 16 * count, to_host != 0, device,
                                  ivc_pool_offset(staging), size, (uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)s);
    }
    if (r != CUDA_SUCCESS) {
        if (staging != NULL)
            cuMemFreeHost(staging);
        free(s);
        unreserve(size);
    }
    return r;
}

int ivc_captures_running(void)
{
    pthread_mutex_lock(&lock);
    int any = captures > 0;
    pthread_mutex_unlock(&lock);
    return any;
}

int ivc_staged_capture_copy(CUstream stream, int to_host, CUdeviceptr device, void *host, size_t size,
                            CUresult *result)
{
    if (!ivc_captures_running())
        return 0;
    int status = 0;
    if (cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS || status != IVC_CAPTURE_ACTIVE)
        return 0;
    CUgraphNode node = NULL;
    *result = ivc_staged_copy(&node, NULL, stream, NULL, 0, to_host, device, host, size);
    return 1;
}

void ivc_staged_capture_begun(CUresult r)
{
    if (r != CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&lock);
    captures++;
    pthread_mutex_unlock(&lock);
}

/* A capture ends with its cuStreamEndCapture, whether it succeeded or the capture had failed. */
static void capture_ended(CUresult r)
{
    if (r != CUDA_SUCCESS && (r < CAPTURE_ERRORS_FIRST || r > CAPTURE_ERRORS_LAST))
        return;
    pthread_mutex_lock(&lock);
    if (captures > 0)
        captures--;
    pthread_mutex_unlock(&lock);
}

void ivc_staged_forget_process(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    lock = fresh;
    staged_bytes = 0;
    staged_copies = 0;
    captures = 0;
}

/* ---- the generated capture calls' hooks (api/graphs.api) ---- */

void ivc_hook_before_cuStreamBeginCapture_v2(CUstream hStream, int mode)
{
    (void)hStream;
    (void)mode;
}

CUresult ivc_hook_after_cuStreamBeginCapture_v2(CUresult result, CUstream hStream, int mode)
{
    (void)hStream;
    (void)mode;
    ivc_staged_capture_begun(result);
    return result;
}

void ivc_hook_before_cuStreamBeginCapture(CUstream hStream)
{
    (void)hStream;
}

CUresult ivc_hook_after_cuStreamBeginCapture(CUresult result, CUstream hStream)
{
    (void)hStream;
    ivc_staged_capture_begun(result);
    return result;
}

void ivc_hook_before_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    (void)hStream;
    (void)phGraph;
}

CUresult ivc_hook_after_cuStreamEndCapture(CUresult result, CUstream hStream, CUgraph *phGraph)
{
    (void)hStream;
    (void)phGraph;
    capture_ended(result);
    return result;
}
