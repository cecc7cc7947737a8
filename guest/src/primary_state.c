/* cuDevicePrimaryCtxGetState answered in the guest: PyTorch asks it around many of its calls
 * (whether the device's primary context is active, before it would create one); through
 * ivcuda each was a round trip (111 in PyTorch's convolution script, IVCUDA_DEBUG=1 on the H200).
 *
 * What the server answers is this process's view: "active" while this process holds a retain
 * (ContextHandler), the flags as set on the device's primary context. Only this process's own
 * retains, releases, resets and flag changes move them, and each of those goes through a stub
 * hooked here or in context_local.c: after any of them, and after a fork, the next question
 * goes to the server again. An answer is remembered only from a question asked while nothing
 * changed (a process-wide epoch read before the call). */
#include <stdatomic.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "primary_state.h"
#include "session.h"

#define DEVICES 8

static atomic_uint epoch = 1;

struct remembered {
    atomic_uint epoch; /* 0: nothing remembered */
    atomic_uint flags;
    atomic_int active;
};
static struct remembered devices[DEVICES];
static _Thread_local unsigned epoch_before_call;

void ivc_primary_state_changed(void)
{
    atomic_fetch_add(&epoch, 1);
}

CUresult ivc_local_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    if (dev < 0 || dev >= DEVICES || ivc_session_thread_claim() == 0)
        return IVC_NOT_LOCAL;
    struct remembered *r = &devices[dev];
    unsigned now = atomic_load(&epoch);
    unsigned f = atomic_load(&r->flags);
    int a = atomic_load(&r->active);
    if (atomic_load(&r->epoch) != now) /* read after the values: a newer learn cannot mix in */
        return IVC_NOT_LOCAL;
    *flags = f;
    *active = a;
    return CUDA_SUCCESS;
}

void ivc_hook_before_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    (void)dev;
    (void)flags;
    (void)active;
    epoch_before_call = atomic_load(&epoch);
}

CUresult ivc_hook_after_cuDevicePrimaryCtxGetState(CUresult result, CUdevice dev, unsigned *flags, int *active)
{
    if (result != CUDA_SUCCESS || dev < 0 || dev >= DEVICES || epoch_before_call != atomic_load(&epoch))
        return result;
    struct remembered *r = &devices[dev];
    atomic_store(&r->epoch, 0);
    atomic_store(&r->flags, *flags);
    atomic_store(&r->active, *active);
    atomic_store(&r->epoch, epoch_before_call);
    return result;
}

void ivc_hook_before_cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned flags)
{
    (void)dev;
    (void)flags;
}

CUresult ivc_hook_after_cuDevicePrimaryCtxSetFlags_v2(CUresult result, CUdevice dev, unsigned flags)
{
    (void)dev;
    (void)flags;
    ivc_primary_state_changed();
    return result;
}
