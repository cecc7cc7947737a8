/* Device memory and copies. The guest keeps a map of this process's device allocations
 * (and of its modules' globals) so that cuMemcpy can tell device pointers from host ones:
 * in the map → device; inside the pool → pool; otherwise pageable host. Copies from/to
 * the pool travel as offsets (DMA on the server); small ones inline in the request or
 * response; large ones stream through the channel's window (§6). Pinned host memory is
 * pinned.c's, pointer attributes pointer.c's. */
#include <stdlib.h>

#include "staged_copy.h"
#include "channel.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "memory.h"
#include "range_map.h"

static struct ivc_range_map device_map = IVC_RANGE_MAP_INIT;

void ivc_memory_forget_process(void)
{
    ivc_range_map_forget(&device_map);
}

static int is_device_pointer(CUdeviceptr pointer)
{
    return ivc_range_map_find(&device_map, pointer, NULL);
}

int ivc_memory_is_device(CUdeviceptr pointer)
{
    return is_device_pointer(pointer);
}

void ivc_memory_add_allocation(CUdeviceptr base, size_t size)
{
    ivc_range_map_add(&device_map, base, size, 0, NULL);
}

void ivc_memory_remove_allocation(CUdeviceptr base)
{
    ivc_range_map_remove(&device_map, base);
}

/* A module's global variable is device memory until the module is unloaded. */
void ivc_memory_add_global(CUmodule module, CUdeviceptr base, size_t size)
{
    if (base != 0 && !ivc_range_map_find(&device_map, base, NULL))
        ivc_range_map_add(&device_map, base, size, 0, module);
}

void ivc_memory_forget_module(CUmodule module)
{
    ivc_range_map_remove_module(&device_map, module);
}

/* ---- device allocations ---- */

IVC_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (dptr == NULL)
        return ivc_null_argument("cuMemAlloc_v2", "dptr");
    CUdeviceptr p = 0;
    CUresult r = ivc_mem_alloc(&p, bytesize);
    if (r == CUDA_SUCCESS) {
        ivc_range_map_add(&device_map, p, bytesize, 0, NULL);
        *dptr = p;
    }
    return r;
}
IVC_ALIASES_cuMemAlloc_v2

IVC_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                       unsigned int ElementSizeBytes)
{
    if (dptr == NULL || pPitch == NULL)
        return ivc_null_argument("cuMemAllocPitch_v2", dptr == NULL ? "dptr" : "pPitch");
    CUdeviceptr p = 0;
    size_t pitch = 0;
    CUresult r = ivc_mem_alloc_pitch(&p, &pitch, WidthInBytes, Height, ElementSizeBytes);
    if (r == CUDA_SUCCESS) {
        ivc_range_map_add(&device_map, p, (uint64_t)pitch * Height, 0, NULL);
        *dptr = p;
        *pPitch = pitch;
    }
    return r;
}
IVC_ALIASES_cuMemAllocPitch_v2

IVC_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult r = ivc_mem_free(dptr);
    if (r == CUDA_SUCCESS)
        ivc_range_map_remove(&device_map, dptr);
    return r;
}
IVC_ALIASES_cuMemFree_v2

/* ---- copies ---- */

static CUresult htod_streamed(CUdeviceptr dst, const void *src, size_t n, CUstream stream)
{
    struct ivc_call call;
    CUresult r = ivc_begin(&call, IVC_OP_ivc_memcpy_htod_stream, "ivc_memcpy_htod_stream");
    if (r != CUDA_SUCCESS)
        return r;
    ivc_put_u64(&call, dst);
    ivc_put_u64(&call, (uint64_t)(uintptr_t)stream);
    ivc_put_u64(&call, n);
    r = ivc_publish(&call);
    if (r == CUDA_SUCCESS)
        r = ivc_stream_to_server(&call, src, n);
    if (r == CUDA_SUCCESS)
        r = ivc_await(&call);
    if (ivc_response(&call))
        r = ivc_finish(&call, r);
    return r;
}

static CUresult dtoh_streamed(void *dst, CUdeviceptr src, size_t n, CUstream stream)
{
    struct ivc_call call;
    CUresult r = ivc_begin(&call, IVC_OP_ivc_memcpy_dtoh_stream, "ivc_memcpy_dtoh_stream");
    if (r != CUDA_SUCCESS)
        return r;
    ivc_put_u64(&call, src);
    ivc_put_u64(&call, (uint64_t)(uintptr_t)stream);
    ivc_put_u64(&call, n);
    r = ivc_publish(&call);
    if (r == CUDA_SUCCESS)
        r = ivc_stream_from_server(&call, dst, n);
    if (r == CUDA_SUCCESS)
        r = ivc_await(&call);
    if (ivc_response(&call))
        r = ivc_finish(&call, r);
    return r;
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, CUstream stream, int async)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (src == NULL)
        return ivc_null_argument("cuMemcpyHtoD", "srcHost");
    CUresult r = ivc_need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (ivc_in_pool(src, n)) {
        uint64_t offset = ivc_pool_offset(src);
        return async ? ivc_memcpy_htod_pool_async(dst, stream, offset, n)
                     : ivc_memcpy_htod_pool(dst, stream, offset, n);
    }
    /* on a capturing stream a pageable copy goes into the graph through a staging block */
    if (async && ivc_staged_capture_copy(stream, 0, dst, (void *)(uintptr_t)src, n, &r))
        return r;
    if (n <= ivc_inline_limit()) {
        /* pageable memory may be reused the moment we return: the bytes travel now (a record
         * larger than the ring goes as a request: ivc_async) */
        if (async)
            return ivc_memcpy_htod_inline_async(dst, stream, src, n);
        return ivc_memcpy_htod_inline(dst, stream, src, n);
    }
    return htod_streamed(dst, src, n, stream);
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, CUstream stream, int async)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (dst == NULL)
        return ivc_null_argument("cuMemcpyDtoH", "dstHost");
    CUresult r = ivc_need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (ivc_in_pool(dst, n)) {
        uint64_t offset = ivc_pool_offset(dst);
        return async ? ivc_memcpy_dtoh_pool_async(offset, src, stream, n)
                     : ivc_memcpy_dtoh_pool(offset, src, stream, n);
    }
    if (async && ivc_staged_capture_copy(stream, 1, src, dst, n, &r))
        return r;
    /* pageable destination: the copy completes before we return, as CUDA does */
    if (n <= ivc_inline_limit())
        return ivc_memcpy_dtoh_inline(src, stream, dst, n);
    return dtoh_streamed(dst, src, n, stream);
}

static CUstream per_thread(CUstream stream)
{
    return stream == NULL ? CU_STREAM_PER_THREAD : stream;
}

IVC_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return htod(dstDevice, srcHost, ByteCount, NULL, 0);
}
IVC_ALIASES_cuMemcpyHtoD_v2

IVC_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return htod(dstDevice, srcHost, ByteCount, CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return dtoh(dstHost, srcDevice, ByteCount, NULL, 0);
}
IVC_ALIASES_cuMemcpyDtoH_v2

IVC_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return dtoh(dstHost, srcDevice, ByteCount, CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                         CUstream hStream)
{
    return htod(dstDevice, srcHost, ByteCount, hStream, 1);
}
IVC_ALIASES_cuMemcpyHtoDAsync_v2

IVC_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                              CUstream hStream)
{
    return htod(dstDevice, srcHost, ByteCount, per_thread(hStream), 1);
}

IVC_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return dtoh(dstHost, srcDevice, ByteCount, hStream, 1);
}
IVC_ALIASES_cuMemcpyDtoHAsync_v2

IVC_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                              CUstream hStream)
{
    return dtoh(dstHost, srcDevice, ByteCount, per_thread(hStream), 1);
}

/* Unified addressing: classify both pointers. */
static CUresult copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, int async, int ptds)
{
    if (n == 0)
        return CUDA_SUCCESS;
    CUresult r = ivc_need_region();
    if (r != CUDA_SUCCESS)
        return r;
    int dst_device = is_device_pointer(dst);
    int src_device = is_device_pointer(src);
    if (dst_device && src_device) {
        if (async)
            return ptds ? cuMemcpyDtoDAsync_v2_ptsz(dst, src, n, stream) : cuMemcpyDtoDAsync_v2(dst, src, n, stream);
        return ptds ? cuMemcpyDtoD_v2_ptds(dst, src, n) : cuMemcpyDtoD_v2(dst, src, n);
    }
    if (dst_device)
        return htod(dst, (const void *)(uintptr_t)src, n, stream, async);
    if (src_device)
        return dtoh((void *)(uintptr_t)dst, src, n, stream, async);
    if (dst == 0 || src == 0)
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy_any(dst, src, ByteCount, NULL, 0, 0);
}
IVC_ALIASES_cuMemcpy

IVC_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy_any(dst, src, ByteCount, CU_STREAM_PER_THREAD, 0, 1);
}

IVC_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return copy_any(dst, src, ByteCount, hStream, 1, 0);
}
IVC_ALIASES_cuMemcpyAsync

IVC_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return copy_any(dst, src, ByteCount, per_thread(hStream), 1, 1);
}
