/*
 * Cross-language virtual-memory checker (docs/memory.md "Virtual memory"): cuMemAddressReserve,
 * cuMemCreate, cuMemMap, cuMemSetAccess, copies over the seam of two mappings (cuMemcpyHtoD,
 * cuMemcpy, cuMemsetD8), the properties, retain/release, the refusals (host locations,
 * shareable handles) and cuMemUnmap of two mappings in one call, through the guest library
 * against the host-memory server (a transport test: no GPU); and a created pool: attributes,
 * allocations from it, the process's current pool (CUDA 11.2 and 13 names), destroy. Prints
 * "vmm: ok" or the first
 * difference, and exits non-zero then. Built with the guest's own cuda.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop, int option);
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr);
CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle);
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr);
CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle, int handleType,
                                      unsigned long long flags);
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props);
CUresult cuMemPoolDestroy(CUmemoryPool pool);
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s);
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev);
CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type);

int main(void)
{
    CUdevice dev = xlang_device();
    CUcontext ctx;
    CK(cuCtxCreate(&ctx, 0, dev));

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t g = 0;
    CK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    expect(g > 0, "a granularity");

    CUdeviceptr va = 0;
    CK(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
    CUmemGenericAllocationHandle h;
    CK(cuMemCreate(&h, 2 * g, &prop, 0));
    CK(cuMemMap(va, g, 0, h, 0));
    CK(cuMemMap(va + g, g, g, h, 0));
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CK(cuMemSetAccess(va, 2 * g, &access, 1));
    unsigned long long flags = 0;
    CK(cuMemGetAccess(&flags, &access.location, va + g));
    expect(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "read-write access answered");

    /* 1 MiB over the seam of the two mappings, there and back, pageable memory */
    size_t n = 1 << 20;
    unsigned char *src = malloc(n), *dst = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    CUdeviceptr seam = va + g - n / 2;
    CK(cuMemcpyHtoD(seam, src, n));
    CK(cuMemcpyDtoH(dst, seam, n));
    expect(memcmp(src, dst, n) == 0, "HtoD/DtoH over the seam");
    /* the unified copy tells the mapping from host memory */
    memset(dst, 0, n);
    CK(cuMemcpy((CUdeviceptr)dst, seam, n));
    expect(memcmp(src, dst, n) == 0, "cuMemcpy from a mapping");
    CK(cuMemsetD8(va + g - 2, 0xab, 4));
    CK(cuMemcpyDtoH(dst, va + g - 2, 4));
    expect(dst[0] == 0xab && dst[3] == 0xab, "memset over the seam");

    CUmemAllocationProp got;
    CK(cuMemGetAllocationPropertiesFromHandle(&got, h));
    expect(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
               got.location.id == 0,
           "properties: pinned, on device 0");
    CUmemGenericAllocationHandle again;
    CK(cuMemRetainAllocationHandle(&again, (void *)(va + g + 5)));
    expect(again == h, "the retained handle is the created one");
    CK(cuMemRelease(again));

    /* refused, clearly */
    int fd = -1;
    expect(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) == CUDA_ERROR_NOT_SUPPORTED,
           "export refused");
    CUmemAllocationProp host = prop;
    host.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CUmemGenericAllocationHandle none;
    expect(cuMemCreate(&none, g, &host, 0) == CUDA_ERROR_NOT_SUPPORTED, "host location refused");
    expect(cuMemUnmap(va, g / 2) == CUDA_ERROR_INVALID_VALUE, "a part of a mapping is not unmapped");

    /* released while mapped: the memory stays until the unmap, of both mappings in one call */
    CK(cuMemRelease(h));
    CK(cuMemcpyDtoH(dst, seam, n));
    expect(memcmp(src, dst, 16) == 0, "still mapped after the release");
    CK(cuMemUnmap(va, 2 * g));
    expect(cuMemcpyDtoH(dst, seam, 16) != CUDA_SUCCESS, "no copy after the unmap");
    CK(cuMemAddressFree(va, 2 * g));
    expect(cuMemAddressFree(va, 2 * g) == CUDA_ERROR_INVALID_VALUE, "a reservation is freed once");

    /* a created pool: the host-memory backend keeps its attributes, allocations are plain */
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool pool, current;
    CK(cuMemPoolCreate(&pool, &props));
    cuuint64_t threshold = 1 << 20, back = 0;
    CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &back));
    expect(back == threshold, "the pool's release threshold read back");
    CUdeviceptr p;
    CK(cuMemAllocFromPoolAsync(&p, n, pool, NULL));
    CK(cuMemcpyHtoD(p, src, n));
    CK(cuMemcpyDtoH(dst, p, n));
    expect(memcmp(src, dst, n) == 0, "a created pool's allocation round trip");
    CK(cuMemFreeAsync(p, NULL));
    CK(cuDeviceSetMemPool(dev, pool));
    CK(cuDeviceGetMemPool(&current, dev));
    expect(current == pool, "the created pool is current");
    CUmemLocation here = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CK(cuMemGetMemPool(&current, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
    expect(current == pool, "cuMemGetMemPool answers it too");
    CK(cuMemAllocAsync(&p, 4096, NULL));
    CK(cuMemFreeAsync(p, NULL));
    here.type = CU_MEM_LOCATION_TYPE_HOST;
    expect(cuMemGetMemPool(&current, &here, CU_MEM_ALLOCATION_TYPE_PINNED) == CUDA_ERROR_NOT_SUPPORTED,
           "a host pool location refused");
    CK(cuMemPoolDestroy(pool));
    expect(cuMemPoolDestroy(pool) != CUDA_SUCCESS, "a pool is destroyed once");

    CK(cuCtxDestroy(ctx));
    free(src);
    free(dst);
    return xlang_report("vmm");
}
