/* cuCtxCreate_v3/_v4: without execution-affinity or create parameters they are
 * cuCtxCreate_v2 on the wire; with them, refused with the reason (docs/kernels.md). */
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

IVC_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                   unsigned int flags, CUdevice dev)
{
    if (paramsArray != NULL && numParams != 0) {
        ivc_log("cuCtxCreate_v3 with %d execution-affinity parameters is not supported (CUDA_ERROR_NOT_SUPPORTED)",
                numParams);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return cuCtxCreate_v2(pctx, flags, dev);
}
IVC_ALIASES_cuCtxCreate_v3

/* CUctxCreateParams: exactly one of execution affinity and CIG (the driver's rule; both NULL is
 * taken as no parameters). Neither can work remotely: SM-count affinity partitions the host's
 * GPU under MPS, which the server's driver session is not; CIG shares a graphics API queue that
 * lives in the guest. Each is refused with its reason. */
IVC_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                                   CUdevice dev)
{
    if (ctxCreateParams != NULL) {
        int affinity = ctxCreateParams->execAffinityParams != NULL, cig = ctxCreateParams->cigParams != NULL;
        if (affinity && cig)
            return CUDA_ERROR_INVALID_VALUE;
        if (affinity && ctxCreateParams->numExecAffinityParams <= 0)
            return CUDA_ERROR_INVALID_VALUE;
        if (cig) {
            ivc_log("cuCtxCreate_v4: CUDA in graphics (CIG) shares a queue of the guest's graphics API, which the "
                    "host's driver cannot reach (CUDA_ERROR_NOT_SUPPORTED)");
            return CUDA_ERROR_NOT_SUPPORTED;
        }
        if (affinity) {
            ivc_log("cuCtxCreate_v4: execution affinity (%d parameters) partitions the host GPU under MPS, which "
                    "ivcuda's server does not run (CUDA_ERROR_NOT_SUPPORTED)",
                    ctxCreateParams->numExecAffinityParams);
            return CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    return cuCtxCreate_v2(pctx, flags, dev);
}
IVC_ALIASES_cuCtxCreate_v4
