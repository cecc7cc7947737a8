/* Managed (unified) memory is refused, clearly (docs/memory.md): a guest's pages cannot be
 * shared with the GPU across the VM boundary, so cuMemAllocManaged fails at allocation with
 * CUDA_ERROR_NOT_SUPPORTED and one stderr line naming the reason, never later with silent
 * corruption. The server answers 0 for the managed-memory device attributes, so programs
 * that ask first take their non-managed path. With no managed memory in the process, every
 * range given to the advice and prefetch calls is non-managed, which the driver refuses
 * with CUDA_ERROR_INVALID_VALUE. */
#include <stdatomic.h>

#include "ivc_internal.h"
#include "log.h"

static void refused(const char *function, atomic_int *logged, const char *result)
{
    if (atomic_exchange(logged, 1) == 0)
        ivc_log("%s: managed memory is not available through ivcuda: a guest cannot share pages with the GPU "
                "across the VM boundary (%s)",
                function, result);
}

#define REFUSE(function, result)                                                                    \
    do {                                                                                            \
        static atomic_int logged_;                                                                  \
        refused(function, &logged_, #result);                                                       \
        return result;                                                                              \
    } while (0)

IVC_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    (void)dptr, (void)bytesize, (void)flags;
    REFUSE("cuMemAllocManaged", CUDA_ERROR_NOT_SUPPORTED);
}

IVC_EXPORT CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags)
{
    (void)hStream, (void)dptr, (void)length, (void)flags;
    REFUSE("cuStreamAttachMemAsync", CUDA_ERROR_NOT_SUPPORTED);
}

IVC_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length,
                                                unsigned int flags)
{
    (void)hStream, (void)dptr, (void)length, (void)flags;
    REFUSE("cuStreamAttachMemAsync", CUDA_ERROR_NOT_SUPPORTED);
}

IVC_EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
    (void)devPtr, (void)count, (void)advice, (void)device;
    REFUSE("cuMemAdvise", CUDA_ERROR_INVALID_VALUE);
}

IVC_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    (void)devPtr, (void)count, (void)advice, (void)location;
    REFUSE("cuMemAdvise_v2", CUDA_ERROR_INVALID_VALUE);
}

IVC_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
    (void)devPtr, (void)count, (void)dstDevice, (void)hStream;
    REFUSE("cuMemPrefetchAsync", CUDA_ERROR_INVALID_VALUE);
}

IVC_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
    (void)devPtr, (void)count, (void)dstDevice, (void)hStream;
    REFUSE("cuMemPrefetchAsync", CUDA_ERROR_INVALID_VALUE);
}

IVC_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                          unsigned int flags, CUstream hStream)
{
    (void)devPtr, (void)count, (void)location, (void)flags, (void)hStream;
    REFUSE("cuMemPrefetchAsync_v2", CUDA_ERROR_INVALID_VALUE);
}

IVC_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                               unsigned int flags, CUstream hStream)
{
    (void)devPtr, (void)count, (void)location, (void)flags, (void)hStream;
    REFUSE("cuMemPrefetchAsync_v2", CUDA_ERROR_INVALID_VALUE);
}
