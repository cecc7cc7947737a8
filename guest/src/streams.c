/* Stream attributes and batched memory operations whose C signatures pass pointers
 * (api/graphs.api): the guest copies what they point to into the call; and the IPC event
 * handles, refused (docs/graphs.md). */
#include <stdatomic.h>
#include <string.h>

#include "call.h"
#include "ivc_api.h"
#include "log.h"

IVC_EXPORT CUresult cuStreamSetAttribute(CUstream hStream, int attr, const ivc_value64 *value)
{
    if (value == NULL)
        return ivc_null_argument("cuStreamSetAttribute", "value");
    return ivc_stream_set_attribute(hStream, attr, *value);
}
IVC_ALIASES_cuStreamSetAttribute

IVC_EXPORT CUresult cuStreamSetAttribute_ptsz(CUstream hStream, int attr, const ivc_value64 *value)
{
    return cuStreamSetAttribute(hStream == NULL ? CU_STREAM_PER_THREAD : hStream, attr, value);
}

IVC_EXPORT CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned int count, const void *paramArray,
                                          unsigned int flags)
{
    if (count == 0 || paramArray == NULL || count > IVC_BATCH_MEM_OP_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    return ivc_stream_batch_memop(stream, count, paramArray, count * IVC_BATCH_MEM_OP_SIZE, flags);
}
IVC_ALIASES_cuStreamBatchMemOp_v2

IVC_EXPORT CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count, const void *paramArray,
                                               unsigned int flags)
{
    return cuStreamBatchMemOp_v2(stream == NULL ? CU_STREAM_PER_THREAD : stream, count, paramArray, flags);
}

/* Another process's event would live in another VM's server, or in this one's under
 * another process's handles: neither can be shared. */
static CUresult no_ipc(const char *function, atomic_int *logged)
{
    if (atomic_exchange(logged, 1) == 0)
        ivc_log("%s: event handles cannot be shared between processes through ivcuda (no IPC across "
                "processes or VMs); CUDA_ERROR_NOT_SUPPORTED",
                function);
    return CUDA_ERROR_NOT_SUPPORTED;
}

IVC_EXPORT CUresult cuIpcGetEventHandle(ivc_value64 *pHandle, CUevent event)
{
    static atomic_int logged;
    (void)event;
    if (pHandle != NULL)
        memset(pHandle, 0, sizeof *pHandle);
    return no_ipc("cuIpcGetEventHandle", &logged);
}
IVC_ALIASES_cuIpcGetEventHandle

IVC_EXPORT CUresult cuIpcOpenEventHandle(CUevent *phEvent, ivc_value64 handle)
{
    static atomic_int logged;
    (void)handle;
    if (phEvent != NULL)
        *phEvent = NULL;
    return no_ipc("cuIpcOpenEventHandle", &logged);
}
IVC_ALIASES_cuIpcOpenEventHandle
