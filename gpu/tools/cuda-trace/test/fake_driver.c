/* A stand-in for NVIDIA's libcuda.so.1 (same SONAME) for testing cuda-trace without a GPU:
 * a handful of functions whose results prove that every argument arrived (registers, the
 * stack, vector registers, a variadic call), cuGetProcAddress with versioned answers and
 * one function that is not exported, and two export tables (fake_abi.h). */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "fake_abi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }

EXPORT int cuDriverGetVersion(int *v)
{
    if (!v) return 1;
    *v = FAKE_DRIVER_VERSION;
    return 0;
}

EXPORT int cuDeviceGet(int *dev, int ordinal)
{
    if (!dev || ordinal != 0) return 101;
    *dev = 0;
    return 0;
}

EXPORT int cuDeviceGetUuid_v2(uint8_t *uuid, int dev)
{
    for (int i = 0; i < 16; i++) uuid[i] = (uint8_t)(0xa0 + i + dev);
    return 0;
}

/* Eleven arguments, five on the stack: the result mixes them all. */
EXPORT int cuLaunchKernel(uint64_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shmem, uint64_t stream, void **params, void **extra)
{
    return fake_launch_result(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
}

EXPORT int cuMemAlloc(uint64_t *p, size_t n)
{
    if (!p) return 1;
    *p = 0x1000 + n;
    return 0;
}

EXPORT int cuMemAlloc_v2(uint64_t *p, size_t n)
{
    if (!p) return 1;
    *p = 0x200000 + n;
    return 0;
}

/* The per-thread-default-stream variant answers differently, so the test sees which it got. */
EXPORT int cuMemcpy(uint64_t d, uint64_t s, size_t n) { return (int)((d + s + n) & 0xff); }
EXPORT int cuMemcpy_ptds(uint64_t d, uint64_t s, size_t n) { return (int)((d + s + n) & 0xff) + 1; }

/* Reachable only through cuGetProcAddress, as some of the real driver's entry points. */
static int hidden_function(int x) { return x * 3; }

static int scale(int version, uint8_t *out16)
{
    if (!out16) return 1;
    for (int i = 0; i < 16; i++) out16[i] = (uint8_t)(version * (i + 1));
    return 0;
}

/* g, the first argument on the stack, may also be an address: a + b is written there. */
static struct fake_pair wide(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f, uint64_t g,
                             uint64_t h)
{
    if (g > 65536) *(uint64_t *)(uintptr_t)g = a + b;
    return (struct fake_pair){ a + b + c + d + e + f + g + h, a ^ h ^ (g << 1) };
}

static double mix(int a, double x, double y, int b, double z) { return a * x + y * b - z; }

static double vsum(int n, ...)
{
    va_list ap;
    double s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++) s += va_arg(ap, double);
    va_end(ap);
    return s;
}

static const char table_data[] = "fake driver data";

static struct fake_sized_table sized = {
    sizeof(struct fake_sized_table), scale, NULL, table_data, wide, mix, vsum,
};

static uint64_t stored_key;
static void *stored_value;
static struct fake_nosize_table nosize;

static int put(uint64_t key, void *value)
{
    nosize.state = key;
    stored_key = key;
    stored_value = value;
    return 0;
}

static int get(uint64_t key, void **value)
{
    if (key != stored_key) return FAKE_NOT_FOUND;
    *value = stored_value;
    return 0;
}

static int call_back(int (*fn)(void *), void *arg) { return fn(arg) + 1000; }

static struct fake_nosize_table nosize = { put, get, call_back, 0 };

EXPORT int cuGetExportTable(const void **table, const uint8_t *uuid)
{
    if (!table || !uuid) return 1;
    if (memcmp(uuid, FAKE_SIZED_UUID, 16) == 0) {
        *table = &sized;
        return 0;
    }
    if (memcmp(uuid, FAKE_NOSIZE_UUID, 16) == 0) {
        *table = &nosize;
        return 0;
    }
    *table = NULL;
    return FAKE_NOT_FOUND;
}

EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status);

static int lookup(const char *symbol, void **pfn, int version, uint64_t flags)
{
    struct {
        const char *name;
        void *fn;
    } const plain[] = {
        { "cuInit", (void *)cuInit },
        { "cuDriverGetVersion", (void *)cuDriverGetVersion },
        { "cuDeviceGet", (void *)cuDeviceGet },
        { "cuDeviceGetUuid", (void *)cuDeviceGetUuid_v2 },
        { "cuLaunchKernel", (void *)cuLaunchKernel },
        { "cuGetExportTable", (void *)cuGetExportTable },
        { "cuGetProcAddress", (void *)cuGetProcAddress_v2 },
        { "cuFakeHidden", (void *)hidden_function },
    };
    if (!symbol || !pfn) return 1;
    *pfn = NULL;
    if (strcmp(symbol, "cuMemAlloc") == 0) {
        *pfn = version >= 3020 ? (void *)cuMemAlloc_v2 : (void *)cuMemAlloc;
        return 0;
    }
    if (strcmp(symbol, "cuMemcpy") == 0) {
        *pfn = (flags & 2) ? (void *)cuMemcpy_ptds : (void *)cuMemcpy;
        return 0;
    }
    for (unsigned i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        if (strcmp(symbol, plain[i].name) == 0) {
            *pfn = plain[i].fn;
            return 0;
        }
    }
    return FAKE_NOT_FOUND;
}

EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status)
{
    int rc = lookup(symbol, pfn, version, flags);
    if (status) *status = rc == 0 ? 0 : 1;
    return rc;
}

EXPORT int cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    return lookup(symbol, pfn, version, flags);
}
