/* Pinned host memory (cuMemAllocHost, cuMemHostAlloc): carved from the region's pool by
 * the server, which registered the pool with the driver, so a copy from or to it travels
 * as an offset and the GPU DMAs it in place (memory.c). The guest keeps each block with
 * its flags (cuMemHostGetFlags, and the range attributes of pointer.c) and the context that
 * was current when it was allocated (CU_POINTER_ATTRIBUTE_CONTEXT: cuda.h, "the CUcontext on
 * which a pointer was allocated or registered"; portable blocks too). */
#include "channel.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "pinned.h"
#include "range_map.h"

static struct ivc_range_map host_map = IVC_RANGE_MAP_INIT;

void ivc_pinned_forget_process(void)
{
    ivc_range_map_forget(&host_map);
}

int ivc_pinned_find(const void *pointer, struct ivc_range *block)
{
    return ivc_range_map_find(&host_map, (uint64_t)(uintptr_t)pointer, block);
}

static CUresult host_alloc(void **pp, size_t bytesize, unsigned flags, const char *name)
{
    if (pp == NULL)
        return ivc_null_argument(name, "pp");
    const struct ivc_region *region;
    CUresult r;
    if ((region = ivc_region(&r)) == NULL)
        return r;
    CUcontext context = NULL; /* none current: the allocation is the server's to refuse */
    if (cuCtxGetCurrent(&context) != CUDA_SUCCESS)
        context = NULL;
    uint64_t offset = 0;
    r = ivc_host_alloc(&offset, bytesize, flags);
    if (r != CUDA_SUCCESS)
        return r;
    if (offset > region->pool_size || bytesize > region->pool_size - offset) {
        ivc_log("%s: the server answered pool offset %llu for %zu bytes outside the %llu-byte pool", name,
                (unsigned long long)offset, bytesize, (unsigned long long)region->pool_size);
        return CUDA_ERROR_UNKNOWN;
    }
    *pp = ivc_pool_pointer(offset);
    ivc_range_map_add_in(&host_map, (uint64_t)(uintptr_t)*pp, bytesize, flags, context);
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc(pp, bytesize, 0, "cuMemAllocHost_v2");
}
IVC_ALIASES_cuMemAllocHost_v2

IVC_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return host_alloc(pp, bytesize, Flags, "cuMemHostAlloc");
}
IVC_ALIASES_cuMemHostAlloc

IVC_EXPORT CUresult cuMemFreeHost(void *p)
{
    CUresult r = ivc_need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ivc_in_pool(p, 1))
        return CUDA_ERROR_INVALID_VALUE;
    r = ivc_host_free(ivc_pool_offset(p));
    if (r == CUDA_SUCCESS)
        ivc_range_map_remove(&host_map, (uint64_t)(uintptr_t)p);
    return r;
}
IVC_ALIASES_cuMemFreeHost

IVC_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    if (pdptr == NULL)
        return ivc_null_argument("cuMemHostGetDevicePointer_v2", "pdptr");
    CUresult r = ivc_need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ivc_in_pool(p, 1))
        return CUDA_ERROR_INVALID_VALUE;
    return ivc_host_device_pointer(pdptr, ivc_pool_offset(p), Flags);
}
IVC_ALIASES_cuMemHostGetDevicePointer_v2

IVC_EXPORT CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    if (pFlags == NULL)
        return ivc_null_argument("cuMemHostGetFlags", "pFlags");
    struct ivc_range found;
    if (!ivc_range_map_find(&host_map, (uint64_t)(uintptr_t)p, &found))
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = found.flags;
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuMemHostGetFlags
