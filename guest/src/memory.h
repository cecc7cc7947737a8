/* What memory.c offers other units: module globals as device memory, and its reset. */
#ifndef IVC_MEMORY_H
#define IVC_MEMORY_H

#include <stddef.h>

#include "ivc_cuda_types.h"

/* A module's global counts as device memory (for cuMemcpy's classification) until the
 * module is unloaded. */
void ivc_memory_add_global(CUmodule module, CUdeviceptr base, size_t size);
void ivc_memory_forget_module(CUmodule module);
/* Whether `pointer` lies in one of this process's device allocations or module globals. */
int ivc_memory_is_device(CUdeviceptr pointer);
/* An allocation made (freed) elsewhere than memory.c: stream-ordered ones (pools.c). */
void ivc_memory_add_allocation(CUdeviceptr base, size_t size);
void ivc_memory_remove_allocation(CUdeviceptr base);
/* In a forked child: the parent's allocations are not this process's. */
void ivc_memory_forget_process(void);

/* memory.c's exported copies, which strided.c sends wide rows and batches through */
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);

#endif
