/* Virtual memory management (api/vmm.api, docs/memory.md "Virtual memory"). The server
 * keeps the process's reservations, allocations and mappings and checks every call; the
 * guest sends the structs' fields as scalars (the server rebuilds them: no guest pointer
 * travels) and notes each mapping as device memory in memory.c's map, so that cuMemcpy
 * and the strided copies classify it. Its own map of mappings tells cuMemUnmap which
 * pieces a span unmaps.
 *
 * Refused here, with the reason once on stderr: host locations (the guest's host is not
 * the server's), shareable handles (a host file descriptor or fabric handle of the
 * server's machine: it cannot cross the VM boundary), sparse array mapping. */
#include <string.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "memory.h"
#include "range_map.h"
#include "vmm.h"

static struct ivc_range_map mapped = IVC_RANGE_MAP_INIT;

void ivc_vmm_forget_process(void)
{
    ivc_range_map_forget(&mapped);
}

void ivc_refused_once(atomic_int *logged, const char *function, const char *why)
{
    if (atomic_exchange(logged, 1) == 0)
        ivc_log("%s: %s (CUDA_ERROR_NOT_SUPPORTED)", function, why);
}

/* allocFlags as they travel: compressionType | gpuDirectRDMACapable << 8 | usage << 16 */
static uint32_t packed_flags(const CUmemAllocationProp *prop)
{
    return (uint32_t)prop->allocFlags.compressionType | (uint32_t)prop->allocFlags.gpuDirectRDMACapable << 8 |
           (uint32_t)prop->allocFlags.usage << 16;
}

static const char HOST_LOCATION[] =
    "only device memory is remoted: a host location would be the server's host, not this VM's";

IVC_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                  CUmemAllocationGranularity_flags option)
{
    if (granularity == NULL || prop == NULL)
        return ivc_null_argument("cuMemGetAllocationGranularity", granularity == NULL ? "granularity" : "prop");
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        IVC_REFUSE("cuMemGetAllocationGranularity", HOST_LOCATION);
    return ivc_vmm_granularity(granularity, prop->type, prop->requestedHandleTypes, prop->location.id,
                               packed_flags(prop), option);
}
IVC_ALIASES_cuMemGetAllocationGranularity

IVC_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                        unsigned long long flags)
{
    if (ptr == NULL)
        return ivc_null_argument("cuMemAddressReserve", "ptr");
    return ivc_vmm_address_reserve(ptr, size, alignment, addr, flags);
}
IVC_ALIASES_cuMemAddressReserve

IVC_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                unsigned long long flags)
{
    if (handle == NULL || prop == NULL)
        return ivc_null_argument("cuMemCreate", handle == NULL ? "handle" : "prop");
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        IVC_REFUSE("cuMemCreate", HOST_LOCATION);
    return ivc_vmm_create(handle, size, prop->type, prop->requestedHandleTypes, prop->location.id, packed_flags(prop),
                          flags);
}
IVC_ALIASES_cuMemCreate

IVC_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                             unsigned long long flags)
{
    CUresult r = ivc_vmm_map(ptr, size, offset, handle, flags);
    if (r == CUDA_SUCCESS) {
        ivc_range_map_add(&mapped, ptr, size, 0, NULL);
        ivc_memory_add_allocation(ptr, size);
    }
    return r;
}
IVC_ALIASES_cuMemMap

IVC_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult r = ivc_vmm_unmap(ptr, size);
    if (r != CUDA_SUCCESS)
        return r;
    /* the server unmapped exactly the mappings that tile the span: forget each */
    uint64_t at = ptr;
    struct ivc_range piece;
    while (at < (uint64_t)ptr + size && ivc_range_map_find(&mapped, at, &piece)) {
        ivc_range_map_remove(&mapped, piece.base);
        ivc_memory_remove_allocation(piece.base);
        at = piece.base + piece.size;
    }
    return r;
}
IVC_ALIASES_cuMemUnmap

CUresult ivc_access_descs_to_wire(const char *function, const CUmemAccessDesc *descs, size_t count, int32_t *wire)
{
    if (descs == NULL)
        return ivc_null_argument(function, "desc");
    if (count == 0 || count > IVC_MAX_ACCESS_DESCS)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (descs[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            IVC_REFUSE(function, HOST_LOCATION);
        wire[3 * i] = descs[i].location.type;
        wire[3 * i + 1] = descs[i].location.id;
        wire[3 * i + 2] = (int32_t)descs[i].flags;
    }
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    int32_t wire[IVC_MAX_ACCESS_DESCS * 3];
    CUresult r = ivc_access_descs_to_wire("cuMemSetAccess", desc, count, wire);
    return r != CUDA_SUCCESS ? r : ivc_vmm_set_access(ptr, size, wire, count * 3 * sizeof(int32_t));
}
IVC_ALIASES_cuMemSetAccess

IVC_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    if (flags == NULL || location == NULL)
        return ivc_null_argument("cuMemGetAccess", flags == NULL ? "flags" : "location");
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        IVC_REFUSE("cuMemGetAccess", HOST_LOCATION);
    uint64_t value = 0;
    CUresult r = ivc_vmm_get_access(&value, location->id, ptr);
    if (r == CUDA_SUCCESS)
        *flags = value;
    return r;
}
IVC_ALIASES_cuMemGetAccess

IVC_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                           CUmemGenericAllocationHandle handle)
{
    if (prop == NULL)
        return ivc_null_argument("cuMemGetAllocationPropertiesFromHandle", "prop");
    int type = 0, handle_types = 0;
    uint32_t flags = 0;
    CUresult r = ivc_vmm_properties(&type, &handle_types, &flags, handle);
    if (r != CUDA_SUCCESS)
        return r;
    memset(prop, 0, sizeof *prop);
    prop->type = (CUmemAllocationType)type;
    prop->requestedHandleTypes = (CUmemAllocationHandleType)handle_types;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = 0;
    prop->allocFlags.compressionType = (unsigned char)(flags & 0xff);
    prop->allocFlags.gpuDirectRDMACapable = (unsigned char)(flags >> 8 & 0xff);
    prop->allocFlags.usage = (unsigned short)(flags >> 16);
    return r;
}
IVC_ALIASES_cuMemGetAllocationPropertiesFromHandle

IVC_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    if (handle == NULL)
        return ivc_null_argument("cuMemRetainAllocationHandle", "handle");
    return ivc_vmm_retain(handle, (CUdeviceptr)(uintptr_t)addr);
}
IVC_ALIASES_cuMemRetainAllocationHandle

static const char SHAREABLE[] = "a shareable handle is a file descriptor or fabric handle of the server's host: "
                                "it cannot cross the VM boundary";

IVC_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                 CUmemAllocationHandleType handleType, unsigned long long flags)
{
    (void)shareableHandle, (void)handle, (void)handleType, (void)flags;
    IVC_REFUSE("cuMemExportToShareableHandle", SHAREABLE);
}
IVC_ALIASES_cuMemExportToShareableHandle

IVC_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                   CUmemAllocationHandleType shHandleType)
{
    (void)handle, (void)osHandle, (void)shHandleType;
    IVC_REFUSE("cuMemImportFromShareableHandle", SHAREABLE);
}
IVC_ALIASES_cuMemImportFromShareableHandle

static const char SPARSE[] = "sparse and mipmapped array mapping is not remoted";

IVC_EXPORT CUresult cuMemMapArrayAsync(void *mapInfoList, unsigned int count, CUstream hStream)
{
    (void)mapInfoList, (void)count, (void)hStream;
    IVC_REFUSE("cuMemMapArrayAsync", SPARSE);
}
IVC_ALIASES_cuMemMapArrayAsync

IVC_EXPORT CUresult cuMemMapArrayAsync_ptsz(void *mapInfoList, unsigned int count, CUstream hStream)
{
    (void)mapInfoList, (void)count, (void)hStream;
    IVC_REFUSE("cuMemMapArrayAsync", SPARSE);
}
