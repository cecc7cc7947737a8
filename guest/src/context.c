/* cuCtxCreate_v3/_v4: without execution-affinity or create parameters they are
 * cuCtxCreate_v2 on the wire; with them, not supported yet. */
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

IVC_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                                   CUdevice dev)
{
    if (ctxCreateParams != NULL) {
        ivc_log("cuCtxCreate_v4 with CUctxCreateParams is not supported (CUDA_ERROR_NOT_SUPPORTED)");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return cuCtxCreate_v2(pctx, flags, dev);
}
IVC_ALIASES_cuCtxCreate_v4
