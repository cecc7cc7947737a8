/* Device memory, copies and pinned host memory (the region's pool). The guest keeps a
 * map of this process's device allocations so that cuMemcpy can tell device pointers
 * from host ones: in the map → device; inside the pool → pool; otherwise pageable host.
 * Copies from/to the pool travel as offsets (DMA on the server); small ones inline in
 * the request or response; large ones stream through the channel's window (§6). */
#include <pthread.h>
#include <stdlib.h>

#include "ivc_api.h"
#include "channel.h"
#include "ivc_internal.h"
#include "log.h"
#include "memory.h"

/* ---- range maps (device allocations; pool blocks with their flags) ---- */

struct range {
    uint64_t base;
    uint64_t size;
    unsigned flags;
    CUmodule module; /* a module's global (gone with the module), or NULL */
};

struct range_map {
    pthread_mutex_t lock;
    struct range *ranges; /* sorted by base, non-overlapping */
    size_t count;
    size_t capacity;
};

static struct range_map device_map = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
static struct range_map host_map = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

/* Index of the first range with base > address. */
static size_t upper_bound(const struct range_map *m, uint64_t address)
{
    size_t low = 0, high = m->count;
    while (low < high) {
        size_t mid = (low + high) / 2;
        if (m->ranges[mid].base <= address)
            low = mid + 1;
        else
            high = mid;
    }
    return low;
}

static void map_add(struct range_map *m, uint64_t base, uint64_t size, unsigned flags, CUmodule module)
{
    pthread_mutex_lock(&m->lock);
    if (m->count == m->capacity) {
        size_t capacity = m->capacity ? m->capacity * 2 : 64;
        struct range *grown = realloc(m->ranges, capacity * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&m->lock);
            return;
        }
        m->ranges = grown;
        m->capacity = capacity;
    }
    size_t i = upper_bound(m, base);
    memmove(&m->ranges[i + 1], &m->ranges[i], (m->count - i) * sizeof *m->ranges);
    m->ranges[i] = (struct range){base, size ? size : 1, flags, module};
    m->count++;
    pthread_mutex_unlock(&m->lock);
}

static void map_remove(struct range_map *m, uint64_t base)
{
    pthread_mutex_lock(&m->lock);
    size_t i = upper_bound(m, base);
    if (i > 0 && m->ranges[i - 1].base == base) {
        memmove(&m->ranges[i - 1], &m->ranges[i], (m->count - i) * sizeof *m->ranges);
        m->count--;
    }
    pthread_mutex_unlock(&m->lock);
}

static void map_remove_module(struct range_map *m, CUmodule module)
{
    pthread_mutex_lock(&m->lock);
    size_t kept = 0;
    for (size_t i = 0; i < m->count; i++)
        if (m->ranges[i].module != module)
            m->ranges[kept++] = m->ranges[i];
    m->count = kept;
    pthread_mutex_unlock(&m->lock);
}

static int map_find(struct range_map *m, uint64_t address, struct range *found)
{
    pthread_mutex_lock(&m->lock);
    size_t i = upper_bound(m, address);
    int hit = i > 0 && address - m->ranges[i - 1].base < m->ranges[i - 1].size;
    if (hit && found != NULL)
        *found = m->ranges[i - 1];
    pthread_mutex_unlock(&m->lock);
    return hit;
}

static void map_forget(struct range_map *m)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    m->lock = fresh;
    free(m->ranges);
    m->ranges = NULL;
    m->count = m->capacity = 0;
}

void ivc_memory_forget_process(void)
{
    map_forget(&device_map);
    map_forget(&host_map);
}

int ivc_is_device_pointer(CUdeviceptr pointer);
int ivc_is_device_pointer(CUdeviceptr pointer)
{
    return map_find(&device_map, pointer, NULL);
}

/* A module's global variable is device memory until the module is unloaded. */
void ivc_memory_add_global(CUmodule module, CUdeviceptr base, size_t size)
{
    if (base != 0 && !map_find(&device_map, base, NULL))
        map_add(&device_map, base, size, 0, module);
}

void ivc_memory_forget_module(CUmodule module)
{
    map_remove_module(&device_map, module);
}

/* ---- device allocations ---- */

IVC_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (dptr == NULL)
        return ivc_null_argument("cuMemAlloc_v2", "dptr");
    CUdeviceptr p = 0;
    CUresult r = ivc_mem_alloc(&p, bytesize);
    if (r == CUDA_SUCCESS) {
        map_add(&device_map, p, bytesize, 0, NULL);
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
        map_add(&device_map, p, (uint64_t)pitch * Height, 0, NULL);
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
        map_remove(&device_map, dptr);
    return r;
}
IVC_ALIASES_cuMemFree_v2

/* ---- copies ---- */

static CUresult need_region(void)
{
    CUresult r;
    return ivc_region(&r) != NULL ? CUDA_SUCCESS : r;
}

static size_t inline_limit(void)
{
    return ivc_inline_limit();
}

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
    CUresult r = need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (ivc_in_pool(src, n)) {
        uint64_t offset = ivc_pool_offset(src);
        return async ? ivc_memcpy_htod_pool_async(dst, stream, offset, n)
                     : ivc_memcpy_htod_pool(dst, stream, offset, n);
    }
    if (n <= inline_limit()) {
        /* pageable memory may be reused the moment we return: the bytes travel now */
        if (async && ivc_ring_fits(n + 32))
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
    CUresult r = need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (ivc_in_pool(dst, n)) {
        uint64_t offset = ivc_pool_offset(dst);
        return async ? ivc_memcpy_dtoh_pool_async(offset, src, stream, n)
                     : ivc_memcpy_dtoh_pool(offset, src, stream, n);
    }
    /* pageable destination: the copy completes before we return, as CUDA does */
    if (n <= inline_limit())
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
    CUresult r = need_region();
    if (r != CUDA_SUCCESS)
        return r;
    int dst_device = ivc_is_device_pointer(dst);
    int src_device = ivc_is_device_pointer(src);
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

/* ---- pinned host memory from the pool ---- */

static CUresult host_alloc(void **pp, size_t bytesize, unsigned flags, const char *name)
{
    if (pp == NULL)
        return ivc_null_argument(name, "pp");
    const struct ivc_region *region;
    CUresult r;
    if ((region = ivc_region(&r)) == NULL)
        return r;
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
    map_add(&host_map, (uint64_t)(uintptr_t)*pp, bytesize, flags, NULL);
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
    CUresult r = need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ivc_in_pool(p, 1))
        return CUDA_ERROR_INVALID_VALUE;
    r = ivc_host_free(ivc_pool_offset(p));
    if (r == CUDA_SUCCESS)
        map_remove(&host_map, (uint64_t)(uintptr_t)p);
    return r;
}
IVC_ALIASES_cuMemFreeHost

IVC_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    if (pdptr == NULL)
        return ivc_null_argument("cuMemHostGetDevicePointer_v2", "pdptr");
    CUresult r = need_region();
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
    struct range found;
    if (!map_find(&host_map, (uint64_t)(uintptr_t)p, &found))
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = found.flags;
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuMemHostGetFlags

/* ---- pointer attributes ---- */

/* The byte size of an attribute's value; 0 for attributes this library does not carry. */
static uint32_t attribute_size(int attribute)
{
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case 7: /* BUFFER_ID */
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        return 8;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return 4;
    default:
        return 0;
    }
}

static CUresult pool_attribute(void *data, int attribute, CUdeviceptr ptr)
{
    struct range block;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
        unsigned type = CU_MEMORYTYPE_HOST;
        memcpy(data, &type, sizeof type);
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        memcpy(data, &ptr, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
        CUdeviceptr device = 0;
        CUresult r = ivc_host_device_pointer(&device, ivc_pool_offset((void *)(uintptr_t)ptr), 0);
        if (r == CUDA_SUCCESS)
            memcpy(data, &device, 8);
        return r;
    }
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        if (!map_find(&host_map, ptr, &block))
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(data, attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE ? &block.size : &block.base, 8);
        return CUDA_SUCCESS;
    default:
        ivc_log("cuPointerGetAttribute: attribute %d of pinned host memory is not supported", attribute);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

IVC_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (data == NULL)
        return ivc_null_argument("cuPointerGetAttribute", "data");
    CUresult r = need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (ivc_in_pool((void *)(uintptr_t)ptr, 1))
        return pool_attribute(data, attribute, ptr);
    uint32_t size = attribute_size(attribute);
    if (size == 0) {
        ivc_log("cuPointerGetAttribute: attribute %d is not supported", attribute);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return ivc_pointer_attribute(data, size, attribute, ptr);
}
IVC_ALIASES_cuPointerGetAttribute

IVC_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                           CUdeviceptr ptr)
{
    if (numAttributes > 0 && (attributes == NULL || data == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numAttributes; i++) {
        if (data[i] == NULL)
            continue;
        CUresult r = cuPointerGetAttribute(data[i], attributes[i], ptr);
        if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_DEVICE_UNAVAILABLE || r == CUDA_ERROR_NOT_INITIALIZED)
            return r;
        if (r != CUDA_SUCCESS) /* like CUDA: no error for a pointer it does not know, zeroes */
            memset(data[i], 0, attribute_size(attributes[i]) ? attribute_size(attributes[i]) : 4);
    }
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuPointerGetAttributes
