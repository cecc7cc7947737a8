/* Host registration of guest memory (docs/memory.md). The GPU cannot reach a guest's pages
 * across the VM boundary, so registering is the guest's alone: the range is remembered (to
 * answer the driver's double-registration and not-registered errors), and copies from and
 * to it take the pageable paths, which move the bytes during the call (stricter than what
 * registration promises, never looser). Mapping it into the device's address space
 * (DEVICEMAP, IOMEMORY) is refused at registration with CUDA_ERROR_NOT_SUPPORTED and one
 * stderr line, rather than failing later at cuMemHostGetDevicePointer. The context current
 * at registration is kept with the range for its pointer attributes (pointer.c). */
#include <stdatomic.h>
#include <stdint.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "pinned.h"
#include "range_map.h"

#define HOST_MEMORY_ALREADY_REGISTERED 712
#define HOST_MEMORY_NOT_REGISTERED 713

static struct ivc_range_map registered = IVC_RANGE_MAP_INIT;

IVC_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                           CU_MEMHOSTREGISTER_READ_ONLY;
    uintptr_t base = (uintptr_t)p;
    if (p == NULL || bytesize == 0 || (Flags & ~known) != 0 || base + bytesize < base)
        return CUDA_ERROR_INVALID_VALUE;
    if (Flags & (CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY)) {
        static atomic_int logged;
        if (atomic_exchange(&logged, 1) == 0)
            ivc_log("cuMemHostRegister: the GPU cannot map a guest's pages across the VM boundary "
                    "(DEVICEMAP/IOMEMORY: CUDA_ERROR_NOT_SUPPORTED)");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (ivc_range_map_find(&registered, base, NULL) || ivc_range_map_find(&registered, base + bytesize - 1, NULL))
        return HOST_MEMORY_ALREADY_REGISTERED;
    CUcontext context = NULL; /* cuda.h: CONTEXT is the context "in which ptr was ... registered" */
    if (cuCtxGetCurrent(&context) != CUDA_SUCCESS)
        context = NULL;
    ivc_range_map_add_in(&registered, base, bytesize, Flags, context);
    return CUDA_SUCCESS;
}
/* cuMemHostRegister, the CUDA 4.0 name, is the same call */
IVC_ALIASES_cuMemHostRegister_v2

int ivc_registered_find(const void *pointer, struct ivc_range *range)
{
    return ivc_range_map_find(&registered, (uint64_t)(uintptr_t)pointer, range);
}

IVC_EXPORT CUresult cuMemHostUnregister(void *p)
{
    struct ivc_range range;
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ivc_range_map_find(&registered, (uintptr_t)p, &range) || range.base != (uintptr_t)p)
        return HOST_MEMORY_NOT_REGISTERED;
    ivc_range_map_remove(&registered, (uintptr_t)p);
    return CUDA_SUCCESS;
}
