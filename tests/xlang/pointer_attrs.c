/*
 * cuPointerGetAttributes and cuPointerGetAttribute through the guest library and the real
 * server (guest/src/pointer.c answers pool pointers itself; the server answers the process's
 * device allocations, MemoryHandler.ivc_pointer_attribute). Ten attributes at once of device
 * memory, of pinned host memory, of registered host memory (cuMemHostRegister) and of pointers
 * nobody allocated, and MEMPOOL_HANDLE of device memory with and without a pool; each value lands in its own
 * buffer filled with 0xa5 first, so both the value and its size (how many bytes were written,
 * none past it) are checked. cuda.h, cuPointerGetAttributes: "Unlike cuPointerGetAttribute, this
 * function will not return an error when the ptr encountered is not a valid CUDA pointer.
 * Instead, the attributes are assigned default NULL values and CUDA_SUCCESS is returned."
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/* beyond check.h's cuda.h */
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr);
CUresult cuPointerGetAttributes(unsigned int numAttributes, int *attributes, void **data, CUdeviceptr ptr);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props);
CUresult cuMemPoolDestroy(CUmemoryPool pool);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s);
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev);

enum {
    CONTEXT = 1,
    MEMORY_TYPE = 2,
    DEVICE_POINTER = 3,
    HOST_POINTER = 4,
    SYNC_MEMOPS = 6,
    BUFFER_ID = 7,
    IS_MANAGED = 8,
    DEVICE_ORDINAL = 9,
    RANGE_START_ADDR = 11,
    RANGE_SIZE = 12,
    MAPPED = 13,
    MEMPOOL_HANDLE = 17,
};
#define SENTINEL 0xa5

/* the attributes asked together, with the byte size cuda.h gives each value */
static int attributes[] = {CONTEXT,  MEMORY_TYPE,    DEVICE_POINTER,   HOST_POINTER, IS_MANAGED,
                           BUFFER_ID, DEVICE_ORDINAL, RANGE_START_ADDR, RANGE_SIZE,   MAPPED};
static const size_t sizes[] = {8, 4, 8, 8, 4, 8, 4, 8, 8, 4};
#define COUNT (sizeof attributes / sizeof attributes[0])

static unsigned char values[COUNT][16];

static CUresult query(CUdeviceptr ptr, unsigned first)
{
    void *data[COUNT];
    memset(values, SENTINEL, sizeof values);
    for (unsigned i = 0; i < COUNT; i++)
        data[i] = values[i];
    return cuPointerGetAttributes(COUNT - first, attributes + first, data + first, ptr);
}

/* The value of attribute i (its index in attributes), after checking its size was written and
 * nothing past it. */
static uint64_t value(unsigned i, const char *what)
{
    char message[160];
    int written = 0; /* no value here is all 0xa5 */
    for (size_t b = 0; b < sizes[i]; b++)
        written |= values[i][b] != SENTINEL;
    size_t past = sizes[i];
    while (past < sizeof values[i] && values[i][past] == SENTINEL)
        past++;
    snprintf(message, sizeof message, "%s: attribute %d wrote its %zu bytes and none past them", what,
             attributes[i], sizes[i]);
    expect(written && past == sizeof values[i], message);
    if (sizes[i] == 4) {
        uint32_t v;
        memcpy(&v, values[i], 4);
        return v;
    }
    uint64_t v;
    memcpy(&v, values[i], 8);
    return v;
}

static void expect_value(unsigned i, uint64_t wanted, const char *what)
{
    uint64_t got = value(i, what);
    if (got != wanted)
        printf("  %s: attribute %d is %#llx, expected %#llx\n", what, attributes[i], (unsigned long long)got,
               (unsigned long long)wanted);
    expect(got == wanted, what);
}

int main(void)
{
    CUdevice dev = xlang_device();
    CUcontext ctx = xlang_primary_context(dev);

    /* device memory: every attribute from the server */
    CUdeviceptr d, other;
    CK(cuMemAlloc(&d, 5000));
    CK(cuMemAlloc(&other, 64));
    CK(query(d + 100, 0));
    expect_value(0, (uint64_t)(uintptr_t)ctx, "device: CONTEXT is the current context");
    expect_value(1, 2, "device: MEMORY_TYPE is CU_MEMORYTYPE_DEVICE");
    expect_value(2, d + 100, "device: DEVICE_POINTER is the pointer");
    expect_value(3, 0, "device: HOST_POINTER is NULL (device memory has no host address)");
    expect_value(4, 0, "device: IS_MANAGED is 0");
    uint64_t buffer = value(5, "device: BUFFER_ID");
    expect_value(6, 0, "device: DEVICE_ORDINAL is 0");
    expect_value(7, d, "device: RANGE_START_ADDR is the allocation");
    expect_value(8, 5000, "device: RANGE_SIZE is its size");
    expect_value(9, 1, "device: MAPPED is 1");
    CK(query(d + 4999, 0));
    expect_value(5, buffer, "device: the last byte has the allocation's BUFFER_ID");
    CK(query(other, 0));
    expect(value(5, "another allocation") != buffer, "another allocation has another BUFFER_ID");
    expect_value(8, 64, "another allocation: RANGE_SIZE");
    void *host;
    expect(cuPointerGetAttribute(&host, HOST_POINTER, d) == CUDA_ERROR_INVALID_VALUE,
           "cuPointerGetAttribute(HOST_POINTER) of device memory is INVALID_VALUE (cuda.h)");

    /* pinned host memory: answered by the guest library; CONTEXT is the context current at
     * allocation (cudart 11.8's cudaPointerGetAttributes asks it with the others) */
    void *pinned;
    CK(cuMemAllocHost(&pinned, 4096));
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)pinned, device_alias;
    CK(cuMemHostGetDevicePointer_v2(&device_alias, pinned, 0));
    CK(query(p + 10, 0));
    expect_value(0, (uint64_t)(uintptr_t)ctx, "pinned: CONTEXT is the context current at allocation");
    expect_value(1, 1, "pinned: MEMORY_TYPE is CU_MEMORYTYPE_HOST");
    expect_value(2, device_alias + 10, "pinned: DEVICE_POINTER is what cuMemHostGetDevicePointer answers");
    expect_value(3, p + 10, "pinned: HOST_POINTER is the pointer");
    expect_value(4, 0, "pinned: IS_MANAGED is 0");
    uint64_t pinned_buffer = value(5, "pinned: BUFFER_ID");
    expect(pinned_buffer != 0 && pinned_buffer != buffer, "pinned: a BUFFER_ID of its own");
    expect_value(6, 0, "pinned: DEVICE_ORDINAL is 0");
    expect_value(7, p, "pinned: RANGE_START_ADDR is the block");
    expect(value(8, "pinned: RANGE_SIZE") >= 4096, "pinned: RANGE_SIZE holds the 4096 bytes");
    expect_value(9, 1, "pinned: MAPPED is 1");
    uint64_t pool_handle = ~0ull;
    expect(cuPointerGetAttribute(&pool_handle, MEMPOOL_HANDLE, p) == CUDA_SUCCESS && pool_handle == 0,
           "pinned: MEMPOOL_HANDLE is NULL (not a mempool's)");
    /* a block allocated in another context keeps that context, whatever is current when asked */
    CUcontext created, answered = NULL;
    void *elsewhere;
    CK(cuCtxCreate(&created, 0, dev));
    CK(cuMemHostAlloc(&elsewhere, 64, 1 /* PORTABLE */));
    CK(cuCtxSetCurrent(ctx));
    expect(created != ctx, "cuCtxCreate: a context of its own");
    expect(cuPointerGetAttribute(&answered, CONTEXT, (CUdeviceptr)(uintptr_t)elsewhere) == CUDA_SUCCESS
               && answered == created,
           "pinned in a created context: CONTEXT is that context, not the current one");
    CK(cuMemFreeHost(elsewhere));
    CK(cuCtxDestroy(created));
    CK(cuCtxSetCurrent(ctx));

    /* MEMPOOL_HANDLE of device memory: NULL for cuMemAlloc's; a created pool's handle for its
     * allocations, given (cuMemAllocFromPoolAsync) or current (cuDeviceSetMemPool + cuMemAllocAsync) */
    pool_handle = ~0ull;
    expect(cuPointerGetAttribute(&pool_handle, MEMPOOL_HANDLE, d + 1) == CUDA_SUCCESS && pool_handle == 0,
           "device: MEMPOOL_HANDLE of cuMemAlloc memory is NULL");
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool created_pool;
    CK(cuMemPoolCreate(&created_pool, &props));
    CUdeviceptr from_pool, from_current;
    CK(cuMemAllocFromPoolAsync(&from_pool, 1000, created_pool, NULL));
    CK(cuDeviceSetMemPool(dev, created_pool));
    CK(cuMemAllocAsync(&from_current, 1000, NULL));
    int pool_attributes[] = {MEMORY_TYPE, MEMPOOL_HANDLE, RANGE_SIZE};
    unsigned pool_type = 0;
    uint64_t pool_size = 0;
    pool_handle = 0;
    void *pool_data[] = {&pool_type, &pool_handle, &pool_size};
    CK(cuPointerGetAttributes(3, pool_attributes, pool_data, from_pool + 999));
    expect(pool_type == 2 && pool_size == 1000, "pool memory: device memory of its size");
    expect(pool_handle == (uint64_t)(uintptr_t)created_pool, "pool memory: MEMPOOL_HANDLE is the pool given");
    pool_handle = 0;
    expect(cuPointerGetAttribute(&pool_handle, MEMPOOL_HANDLE, from_current) == CUDA_SUCCESS
               && pool_handle == (uint64_t)(uintptr_t)created_pool,
           "cuMemAllocAsync from the current (created) pool: MEMPOOL_HANDLE is that pool");
    CK(cuMemFreeAsync(from_pool, NULL));
    CK(cuMemFreeAsync(from_current, NULL));
    CK(cuMemPoolDestroy(created_pool));

    /* registered host memory: answered by the guest library as host memory of the context
     * current at registration; no device address (the GPU cannot reach guest pages) */
    static unsigned char pages[4 * 4096] __attribute__((aligned(4096)));
    CUcontext registering;
    CK(cuCtxCreate(&registering, 0, dev));
    CK(cuMemHostRegister_v2(pages + 4096, 2 * 4096, 1 /* PORTABLE */));
    CK(cuCtxSetCurrent(ctx));
    CUdeviceptr r = (CUdeviceptr)(uintptr_t)(pages + 4096);
    CK(query(r + 300, 0));
    expect_value(0, (uint64_t)(uintptr_t)registering, "registered: CONTEXT is the context current at registration");
    expect_value(1, 1, "registered: MEMORY_TYPE is CU_MEMORYTYPE_HOST");
    expect_value(2, 0, "registered: DEVICE_POINTER is NULL (no address kernels could reach it through)");
    expect_value(3, r + 300, "registered: HOST_POINTER is the pointer");
    expect_value(4, 0, "registered: IS_MANAGED is 0");
    expect(value(5, "registered: BUFFER_ID") != 0, "registered: a BUFFER_ID");
    expect_value(6, 0, "registered: DEVICE_ORDINAL is 0");
    expect_value(7, r, "registered: RANGE_START_ADDR is the registered range");
    expect_value(8, 2 * 4096, "registered: RANGE_SIZE is its size");
    expect_value(9, 1, "registered: MAPPED is 1");
    CUdeviceptr no_device = 5;
    expect(cuPointerGetAttribute(&no_device, DEVICE_POINTER, r) == CUDA_ERROR_INVALID_VALUE,
           "registered: cuPointerGetAttribute(DEVICE_POINTER) is INVALID_VALUE (cuda.h: no device pointer value)");
    pool_handle = ~0ull;
    expect(cuPointerGetAttribute(&pool_handle, MEMPOOL_HANDLE, r + 8191) == CUDA_SUCCESS && pool_handle == 0,
           "registered: MEMPOOL_HANDLE is NULL, to the last byte");
    CK(cuMemHostUnregister(pages + 4096));
    CK(query(r + 300, 0));
    expect_value(1, 0, "unregistered: MEMORY_TYPE 0 (unknown)");
    CK(cuCtxDestroy(registering));
    CK(cuCtxSetCurrent(ctx));

    /* pointers nobody allocated: success, every value NULL (0) */
    static char pageable[64];
    CUdeviceptr unknown[] = {(CUdeviceptr)(uintptr_t)pageable, 0x1000, 0, ~0ull - 7};
    for (unsigned u = 0; u < sizeof unknown / sizeof unknown[0]; u++) {
        char what[96];
        snprintf(what, sizeof what, "unknown pointer %#llx", (unsigned long long)unknown[u]);
        CUresult r = query(unknown[u], 0);
        expect(r == CUDA_SUCCESS, what);
        for (unsigned i = 0; i < COUNT; i++)
            expect_value(i, 0, what);
        unsigned type = SENTINEL;
        expect(cuPointerGetAttribute(&type, MEMORY_TYPE, unknown[u]) == CUDA_ERROR_INVALID_VALUE,
               "cuPointerGetAttribute(MEMORY_TYPE) of an unknown pointer is INVALID_VALUE (cuda.h)");
    }

    /* numAttributes and the arrays as a careless or hostile caller gives them */
    expect(cuPointerGetAttributes(0, NULL, NULL, d) == CUDA_SUCCESS, "0 attributes, no arrays");
    memset(values, SENTINEL, sizeof values);
    void *data[COUNT];
    for (unsigned i = 0; i < COUNT; i++)
        data[i] = values[i];
    expect(cuPointerGetAttributes(0, attributes, data, d) == CUDA_SUCCESS && values[1][0] == SENTINEL,
           "0 attributes write nothing");
    expect(cuPointerGetAttributes(UINT_MAX, NULL, data, d) == CUDA_ERROR_INVALID_VALUE, "UINT_MAX attributes, none given");
    expect(cuPointerGetAttributes(UINT_MAX, attributes, NULL, d) == CUDA_ERROR_INVALID_VALUE,
           "UINT_MAX attributes, no data array");
    int odd[] = {MEMORY_TYPE, SYNC_MEMOPS};
    expect(cuPointerGetAttributes(2, odd, data, d) == CUDA_ERROR_NOT_SUPPORTED, "SYNC_MEMOPS is not carried");
    int bad[] = {-1};
    expect(cuPointerGetAttributes(1, bad, data, d) == CUDA_ERROR_NOT_SUPPORTED, "attribute -1");
    int one[] = {RANGE_SIZE};
    void *skip[] = {NULL};
    expect(cuPointerGetAttributes(1, one, skip, d) == CUDA_SUCCESS, "a NULL data entry is skipped");
    expect(cuPointerGetAttribute(NULL, MEMORY_TYPE, d) == CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute: data NULL");

    /* and the server still answers */
    CK(query(d, 0));
    expect_value(8, 5000, "after all of it: RANGE_SIZE");
    CK(cuMemFree(other));
    CK(query(other, 0));
    expect_value(1, 0, "a freed allocation is unknown: MEMORY_TYPE 0");
    CK(cuMemFree(d));
    CK(cuMemFreeHost(pinned));
    return xlang_report("pointer_attrs");
}
