/* Stream-ordered allocation (docs/memory.md): cuMemAllocAsync/FromPoolAsync and
 * cuMemFreeAsync, with the allocation added to (removed from) memory.c's map of the
 * process's device memory so that cuMemcpy and the strided copies classify it; the pool
 * attributes, whose value is an int or a 64-bit integer by attribute. */
#include "ivc_api.h"
#include "ivc_internal.h"
#include "memory.h"

static CUstream per_thread(CUstream stream)
{
    return stream == NULL ? CU_STREAM_PER_THREAD : stream;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream,
                            const char *function)
{
    if (dptr == NULL)
        return ivc_null_argument(function, "dptr");
    CUdeviceptr p = 0;
    CUresult r = ivc_mem_alloc_async(&p, bytesize, pool, stream);
    if (r == CUDA_SUCCESS) {
        ivc_memory_add_allocation(p, bytesize);
        *dptr = p;
    }
    return r;
}

IVC_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, NULL, hStream, "cuMemAllocAsync");
}

IVC_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, NULL, per_thread(hStream), "cuMemAllocAsync");
}

IVC_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, bytesize, pool, hStream, "cuMemAllocFromPoolAsync");
}

IVC_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                 CUstream hStream)
{
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, bytesize, pool, per_thread(hStream), "cuMemAllocFromPoolAsync");
}

static CUresult free_async(CUdeviceptr dptr, CUstream stream)
{
    CUresult r = ivc_mem_free_async(dptr, stream);
    if (r == CUDA_SUCCESS)
        ivc_memory_remove_allocation(dptr);
    return r;
}

IVC_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream);
}

IVC_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, per_thread(hStream));
}

/* CUmemPool_attribute 1-3 (the reuse policies) are ints, 4-8 (threshold, counters) 64-bit. */
static int attribute_is_int(CUmemPool_attribute attr)
{
    return attr >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
           attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

static int attribute_known(CUmemPool_attribute attr)
{
    return attr >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES && attr <= CU_MEMPOOL_ATTR_USED_MEM_HIGH;
}

IVC_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    if (value == NULL)
        return ivc_null_argument("cuMemPoolSetAttribute", "value");
    if (!attribute_known(attr))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t v = attribute_is_int(attr) ? (uint64_t)(uint32_t) * (const int *)value : *(const uint64_t *)value;
    return ivc_mempool_set_attribute(pool, attr, v);
}

IVC_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    if (value == NULL)
        return ivc_null_argument("cuMemPoolGetAttribute", "value");
    if (!attribute_known(attr))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t v = 0;
    CUresult r = ivc_mempool_get_attribute(&v, pool, attr);
    if (r == CUDA_SUCCESS) {
        if (attribute_is_int(attr))
            *(int *)value = (int)v;
        else
            *(uint64_t *)value = v;
    }
    return r;
}
