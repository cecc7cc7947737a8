/* Created memory pools (api/vmm.api, docs/memory.md "Created pools"): the pool properties
 * and access descriptors travel as scalars (no guest pointer does), and the CUDA 13 names
 * that take a location are the device forms for a device location. Host locations (the
 * server's host, not this VM's) and managed pools are refused here with the reason. */
#include "ivc_api.h"
#include "ivc_internal.h"
#include "vmm.h"

static const char DEVICE_ONLY[] =
    "only pools of device memory are remoted: a host location would be the server's host, not this VM's";
static const char PINNED_ONLY[] = "only pinned device pools are remoted (managed memory is refused)";

IVC_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    if (pool == NULL || poolProps == NULL)
        return ivc_null_argument("cuMemPoolCreate", pool == NULL ? "pool" : "poolProps");
    if (poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        IVC_REFUSE("cuMemPoolCreate", DEVICE_ONLY);
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        IVC_REFUSE("cuMemPoolCreate", PINNED_ONLY);
    return ivc_mempool_create(pool, poolProps->allocType, poolProps->handleTypes, poolProps->location.id,
                              poolProps->maxSize, poolProps->usage);
}
IVC_ALIASES_cuMemPoolCreate

IVC_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    int32_t wire[IVC_MAX_ACCESS_DESCS * 3];
    CUresult r = ivc_access_descs_to_wire("cuMemPoolSetAccess", map, count, wire);
    return r != CUDA_SUCCESS ? r : ivc_mempool_set_access(pool, wire, count * 3 * sizeof(int32_t));
}
IVC_ALIASES_cuMemPoolSetAccess

IVC_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
    if (flags == NULL || location == NULL)
        return ivc_null_argument("cuMemPoolGetAccess", flags == NULL ? "flags" : "location");
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        IVC_REFUSE("cuMemPoolGetAccess", DEVICE_ONLY);
    uint32_t value = 0;
    CUresult r = ivc_mempool_get_access(&value, memPool, location->id);
    if (r == CUDA_SUCCESS)
        *flags = (CUmemAccess_flags)value;
    return r;
}
IVC_ALIASES_cuMemPoolGetAccess

/* The CUDA 13 forms: NULL, or a location or type other than a pinned device pool, are
 * answered here; the rest are the device forms. */
static CUresult device_of(const char *function, const CUmemLocation *location, CUmemAllocationType type)
{
    if (location == NULL)
        return ivc_null_argument(function, "location");
    if (type == CU_MEM_ALLOCATION_TYPE_MANAGED)
        IVC_REFUSE(function, PINNED_ONLY);
    if (type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        IVC_REFUSE(function, DEVICE_ONLY);
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type)
{
    CUresult r = device_of("cuMemGetDefaultMemPool", location, type);
    return r != CUDA_SUCCESS ? r : cuDeviceGetDefaultMemPool(pool_out, location->id);
}
IVC_ALIASES_cuMemGetDefaultMemPool

IVC_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type)
{
    CUresult r = device_of("cuMemGetMemPool", location, type);
    return r != CUDA_SUCCESS ? r : cuDeviceGetMemPool(pool, location->id);
}
IVC_ALIASES_cuMemGetMemPool

IVC_EXPORT CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)
{
    CUresult r = device_of("cuMemSetMemPool", location, type);
    return r != CUDA_SUCCESS ? r : cuDeviceSetMemPool(location->id, pool);
}
IVC_ALIASES_cuMemSetMemPool
