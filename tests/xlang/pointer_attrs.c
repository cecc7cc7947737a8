/*
 * cuPointerGetAttributes and cuPointerGetAttribute through the guest library and the real
 * server (guest/src/pointer.c answers pool pointers itself; the server answers the process's
 * device allocations, MemoryHandler.ivc_pointer_attribute). Ten attributes at once of device
 * memory, of pinned host memory and of pointers nobody allocated; each value lands in its own
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

    /* pinned host memory: answered by the guest library (no CONTEXT: it is not carried) */
    void *pinned;
    CK(cuMemAllocHost(&pinned, 4096));
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)pinned, device_alias;
    CK(cuMemHostGetDevicePointer_v2(&device_alias, pinned, 0));
    CK(query(p + 10, 1));
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
    expect(query(p, 0) == CUDA_ERROR_NOT_SUPPORTED, "pinned: CONTEXT is not carried: NOT_SUPPORTED, no made-up value");

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
