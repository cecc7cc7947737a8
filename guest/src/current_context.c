/* The thread's current context, kept in the guest so that cuCtxGetCurrent and cuCtxGetDevice
 * need no round trip: the runtimes ask for them around most of their calls (PyTorch's
 * convolution script, IVCUDA_DEBUG=1 on the H200: 185 cuCtxGetCurrent and 337 cuCtxGetDevice_v2
 * round trips against 19 kernel launches).
 *
 * The server's worker for this thread's channel holds the real current context; the guest
 * follows every call of this thread that changes it (create, set, push, pop) and remembers the
 * answer of the last cuCtxGetCurrent. What it cannot follow makes it ask again: a context
 * destroyed or a primary context released or reset by any thread (a global epoch), a channel
 * claimed anew (the server side starts with nothing current), a fork (the child's first call
 * says hello on a channel of its own). A remembered answer is used only on the channel it was
 * learnt on, and only while that channel is usable: after the server reclaimed it every call
 * fails as before. */
#include <stdatomic.h>

#include "current_context.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "session.h"

static atomic_uint epoch = 1;

static _Thread_local struct {
    unsigned long claim; /* the thread's channel claim it was learnt on (session.c); 0: nothing */
    unsigned epoch;
    CUcontext context;
} remembered;

/* The epoch read before a call that sets the current context: what is learnt from the call's
 * answer is only as new as the call itself. */
static _Thread_local unsigned epoch_before_call;

void ivc_current_context_changed_anywhere(void)
{
    atomic_fetch_add(&epoch, 1);
}

static void forget(void)
{
    remembered.claim = 0;
}

static void learn(CUcontext context)
{
    remembered.claim = ivc_session_thread_claim();
    remembered.epoch = epoch_before_call;
    remembered.context = context;
}

/* 1 and the context when this thread's remembered answer still holds. */
static int recall(CUcontext *context)
{
    unsigned long claim = ivc_session_thread_claim();
    if (claim == 0 || remembered.claim != claim || remembered.epoch != atomic_load(&epoch))
        return 0;
    *context = remembered.context;
    return 1;
}

static void note_epoch(void)
{
    epoch_before_call = atomic_load(&epoch);
}

/* ---- answers without the server ------------------------------------------------------- */

CUresult ivc_local_cuCtxGetCurrent(CUcontext *pctx)
{
    return recall(pctx) ? CUDA_SUCCESS : IVC_NOT_LOCAL;
}

/* The VM sees one device, 0 (the server answers every context's device as 0); with no context
 * current the server gives the driver's error. */
CUresult ivc_local_cuCtxGetDevice(CUdevice *device)
{
    CUcontext current;
    if (!recall(&current) || current == NULL)
        return IVC_NOT_LOCAL;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult ivc_local_cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    CUcontext current;
    if (!recall(&current) || current == NULL || (ctx != NULL && ctx != current))
        return IVC_NOT_LOCAL;
    *device = 0;
    return CUDA_SUCCESS;
}

/* ---- following the calls that change it ----------------------------------------------- */

void ivc_hook_before_cuCtxGetCurrent(CUcontext *pctx)
{
    (void)pctx;
    note_epoch();
}

CUresult ivc_hook_after_cuCtxGetCurrent(CUresult result, CUcontext *pctx)
{
    if (result == CUDA_SUCCESS)
        learn(*pctx);
    return result;
}

void ivc_hook_before_cuCtxSetCurrent(CUcontext ctx)
{
    (void)ctx;
    note_epoch();
}

CUresult ivc_hook_after_cuCtxSetCurrent(CUresult result, CUcontext ctx)
{
    if (result == CUDA_SUCCESS)
        learn(ctx);
    else
        forget();
    return result;
}

void ivc_hook_before_cuCtxPushCurrent_v2(CUcontext ctx)
{
    (void)ctx;
    note_epoch();
}

CUresult ivc_hook_after_cuCtxPushCurrent_v2(CUresult result, CUcontext ctx)
{
    if (result == CUDA_SUCCESS)
        learn(ctx);
    else
        forget();
    return result;
}

void ivc_hook_before_cuCtxPopCurrent_v2(CUcontext *pctx)
{
    (void)pctx;
}

/* What becomes current is the context below on the server's stack: asked for next time. */
CUresult ivc_hook_after_cuCtxPopCurrent_v2(CUresult result, CUcontext *pctx)
{
    (void)pctx;
    forget();
    return result;
}

void ivc_hook_before_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    (void)pctx;
    (void)flags;
    (void)dev;
    note_epoch();
}

/* A new context is pushed onto the creating thread's stack. */
CUresult ivc_hook_after_cuCtxCreate_v2(CUresult result, CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    (void)dev;
    if (result == CUDA_SUCCESS)
        learn(*pctx);
    else
        forget();
    return result;
}
