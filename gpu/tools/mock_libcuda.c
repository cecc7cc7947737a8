/* A CPU stand-in for libcuda.so.1, for the dry run only: it runs the validation and
 * benchmark programs' host logic (argument handling, verification, checksums, the
 * calls that must fail) on a machine without a GPU, so a bug in a program is found
 * before device time is spent. It knows exactly the kernels in gpu/kernels and
 * bench/kernels (by name) and computes them on the CPU; device pointers are host
 * pointers; streams are synchronous. It says nothing about ivcuda or a real driver. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int initialized;
static int primary_retains;
static struct { int tag; } primary_ctx_object, module_object;
static __thread CUcontext ctx_stack[16];
static __thread int ctx_depth;

struct allocation {
    uintptr_t base;
    size_t size;
    CUcontext ctx;
    int host;
    unsigned flags;
};
static struct allocation allocations[4096];

static struct allocation *find_allocation(uintptr_t p)
{
    for (size_t i = 0; i < sizeof allocations / sizeof allocations[0]; i++) {
        struct allocation *a = &allocations[i];
        if (a->base != 0 && p >= a->base && p < a->base + a->size) return a;
    }
    return NULL;
}

static CUresult track(void *p, size_t size, int host, unsigned flags)
{
    if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < sizeof allocations / sizeof allocations[0]; i++) {
        if (allocations[i].base == 0) {
            allocations[i] = (struct allocation){ (uintptr_t)p, size, ctx_depth ? ctx_stack[ctx_depth - 1] : NULL,
                                                  host, flags };
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult untrack(uintptr_t p)
{
    struct allocation *a = find_allocation(p);
    if (a == NULL || a->base != p) return CUDA_ERROR_INVALID_VALUE;
    free((void *)a->base);
    a->base = 0;
    return CUDA_SUCCESS;
}

#define NEED_INIT() do { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
#define NEED_CTX() do { NEED_INIT(); if (ctx_depth == 0 || ctx_stack[ctx_depth - 1] == NULL) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

static const struct { CUresult code; const char *name; } names[] = {
    { CUDA_SUCCESS, "CUDA_SUCCESS" }, { CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE" },
    { CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY" }, { CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED" },
    { CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE" }, { CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT" },
    { CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE" }, { CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND" },
    { CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY" }, { CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED" },
    { CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED" }, { CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN" },
    { CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX" },
};

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].code == error) {
            *pStr = names[i].name;
            return CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    CUresult r = cuGetErrorName(error, pStr);
    if (r == CUDA_SUCCESS) *pStr = "mock error string";
    return r;
}

CUresult cuInit(unsigned int flags) { (void)flags; initialized = 1; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *count) { NEED_INIT(); *count = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    NEED_INIT();
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *dev = 0;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice dev) { (void)dev; NEED_INIT(); snprintf(name, (size_t)len, "Mock GPU"); return CUDA_SUCCESS; }
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { (void)dev; NEED_INIT(); memset(uuid->bytes, 0xab, 16); return CUDA_SUCCESS; }
CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev) { (void)dev; NEED_INIT(); snprintf(bus, (size_t)len, "0000:01:00.0"); return CUDA_SUCCESS; }
CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *bus) { NEED_INIT(); *dev = 0; return strcmp(bus, "0000:01:00.0") ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; }
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev) { (void)dev; NEED_INIT(); *bytes = (size_t)80 << 30; return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    (void)dev;
    NEED_INIT();
    if ((int)attrib <= 0 || (int)attrib > 200) return CUDA_ERROR_INVALID_VALUE;
    *pi = attrib == CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY ? 1 : (int)attrib * 3;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    (void)params; (void)flags; (void)dev;
    NEED_INIT();
    *pctx = malloc(64);
    if (ctx_depth == 16) return CUDA_ERROR_UNKNOWN;
    ctx_stack[ctx_depth++] = *pctx;
    return CUDA_SUCCESS;
}
CUresult cuCtxDestroy(CUcontext ctx)
{
    NEED_INIT();
    if (ctx_depth && ctx_stack[ctx_depth - 1] == ctx) ctx_depth--;
    free(ctx);
    return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *pctx) { NEED_INIT(); *pctx = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext ctx)
{
    NEED_INIT();
    if (ctx == NULL) {
        if (ctx_depth) ctx_depth--;
    } else if (ctx_depth) {
        ctx_stack[ctx_depth - 1] = ctx;
    } else {
        ctx_stack[ctx_depth++] = ctx;
    }
    return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext ctx) { NEED_INIT(); ctx_stack[ctx_depth++] = ctx; return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    NEED_CTX();
    CUcontext top = ctx_stack[--ctx_depth];
    if (pctx) *pctx = top;
    return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice *dev) { NEED_CTX(); *dev = 0; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { NEED_CTX(); return CUDA_SUCCESS; }
CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *v) { (void)ctx; *v = 13000; return CUDA_SUCCESS; }
CUresult cuCtxGetLimit(size_t *v, CUlimit limit) { (void)limit; NEED_CTX(); *v = 1024; return CUDA_SUCCESS; }
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) { NEED_CTX(); *least = 0; *greatest = -5; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) { (void)dev; NEED_INIT(); primary_retains++; *pctx = (CUcontext)&primary_ctx_object; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { (void)dev; NEED_INIT(); if (primary_retains) primary_retains--; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) { (void)dev; NEED_INIT(); *flags = 0; *active = primary_retains > 0; return CUDA_SUCCESS; }

/* free: 80 GiB less 1 GiB of the "driver's" and this process's device allocations (busy_reclaim sees a killed
 * child's allocation come back: the child's were its own process's) */
CUresult cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    NEED_CTX();
    size_t used = (size_t)1 << 30;
    for (size_t i = 0; i < sizeof allocations / sizeof allocations[0]; i++)
        if (allocations[i].base != 0 && !allocations[i].host) used += allocations[i].size;
    *total = (size_t)80 << 30;
    *free_bytes = used < *total ? *total - used : 0;
    return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t size)
{
    NEED_CTX();
    if (size > ((size_t)80 << 30)) return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = malloc(size);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return track(p, size, 0, 0);
}
CUresult cuMemFree(CUdeviceptr d) { NEED_CTX(); return untrack((uintptr_t)d); }
CUresult cuMemAllocHost(void **pp, size_t size) { NEED_CTX(); *pp = malloc(size); return track(*pp, size, 1, 0); }
CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags) { NEED_CTX(); *pp = malloc(size); return track(*pp, size, 1, flags); }
CUresult cuMemFreeHost(void *p) { NEED_CTX(); return untrack((uintptr_t)p); }
CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    struct allocation *a = find_allocation((uintptr_t)p);
    if (a == NULL || !a->host) return CUDA_ERROR_INVALID_VALUE;
    *flags = a->flags;
    return CUDA_SUCCESS;
}
CUresult cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned int flags)
{
    (void)flags;
    if (find_allocation((uintptr_t)p) == NULL) return CUDA_ERROR_INVALID_VALUE;
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}
CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr d)
{
    struct allocation *a = find_allocation((uintptr_t)d);
    if (a == NULL) return CUDA_ERROR_NOT_FOUND;
    if (base) *base = (CUdeviceptr)a->base;
    if (size) *size = a->size;
    return CUDA_SUCCESS;
}
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    struct allocation *a = find_allocation((uintptr_t)ptr);
    if (a == NULL) return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data = a->host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = a->ctx; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = a->size; break;
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

static CUresult copy(uintptr_t dst, uintptr_t src, size_t n) { memmove((void *)dst, (const void *)src, n); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { NEED_CTX(); return copy((uintptr_t)d, (uintptr_t)s, n); }
CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { NEED_CTX(); return copy((uintptr_t)d, (uintptr_t)s, n); }
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { NEED_CTX(); return copy((uintptr_t)d, (uintptr_t)s, n); }
CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { NEED_CTX(); return copy((uintptr_t)d, (uintptr_t)s, n); }
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st) { (void)st; return cuMemcpyHtoD(d, s, n); }
CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st) { (void)st; return cuMemcpyDtoH(d, s, n); }
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; return cuMemcpyDtoD(d, s, n); }
CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) { NEED_CTX(); memset((void *)(uintptr_t)d, v, n); return CUDA_SUCCESS; }
CUresult cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n)
{
    NEED_CTX();
    for (size_t i = 0; i < n; i++) memcpy((char *)(uintptr_t)d + 2 * i, &v, 2);
    return CUDA_SUCCESS;
}
CUresult cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n)
{
    NEED_CTX();
    for (size_t i = 0; i < n; i++) memcpy((char *)(uintptr_t)d + 4 * i, &v, 4);
    return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { (void)s; return cuMemsetD8(d, v, n); }
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) { (void)s; return cuMemsetD16(d, v, n); }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) { (void)s; return cuMemsetD32(d, v, n); }

CUresult cuStreamCreate(CUstream *s, unsigned int flags) { (void)flags; NEED_CTX(); *s = malloc(8); return CUDA_SUCCESS; }
CUresult cuStreamDestroy(CUstream s) { free(s); return CUDA_SUCCESS; }
CUresult cuStreamQuery(CUstream s) { (void)s; NEED_CTX(); return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream s) { (void)s; NEED_CTX(); return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int f) { (void)s; (void)e; (void)f; return CUDA_SUCCESS; }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
CUresult cuEventCreate(CUevent *e, unsigned int flags) { (void)flags; NEED_CTX(); *e = calloc(1, sizeof(double)); return CUDA_SUCCESS; }
CUresult cuEventDestroy(CUevent e) { free(e); return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent e, CUstream s) { (void)s; *(double *)(void *)e = now_ms(); return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent e) { (void)e; return CUDA_SUCCESS; }
CUresult cuEventQuery(CUevent e) { (void)e; return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { *ms = (float)(*(double *)(void *)b - *(double *)(void *)a); return CUDA_SUCCESS; }

static const char *const kernel_names[] = { "vector_add", "matmul", "scale_add", "spin_then_fill", "sum_u32",
                                            "fill_index", "empty_kernel", "sleep_kernel",
                                            /* gpu/kernels/kernel_path.cu (also a library below) */
                                            "kp_scale", "kp_fill_global", "kp_cluster_rank", "kp_grid_sum",
                                            "kp_large_param",
                                            /* gpu/kernels/device_printf.cu */
                                            "dp_print",
                                            /* gpu/programs/jit_logs.c's own PTX */
                                            "jit_logs_fill",
                                            /* gpu/kernels/tensor_map.cu */
                                            "tma_load_tile" };
CUresult cuModuleLoadData(CUmodule *m, const void *image) { NEED_CTX(); if (!image) return CUDA_ERROR_INVALID_VALUE; *m = (CUmodule)&module_object; return CUDA_SUCCESS; }
CUresult cuModuleLoadFatBinary(CUmodule *m, const void *image)
{
    NEED_CTX();
    if (*(const uint32_t *)image != 0xBA55ED50u) return CUDA_ERROR_INVALID_IMAGE;
    *m = (CUmodule)&module_object;
    return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) { (void)m; return CUDA_SUCCESS; }
static float vector_add_bias[4]; /* gpu/kernels/vector_add.cu's __device__ global */
CUresult cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name)
{
    (void)m;
    if (strcmp(name, "kp_counter") == 0) return cuLibraryGetGlobal(dptr, bytes, NULL, name); /* kernel_path's linked module */
    if (strcmp(name, "vector_add_bias") != 0) return CUDA_ERROR_NOT_FOUND;
    if (dptr) *dptr = (CUdeviceptr)(uintptr_t)vector_add_bias;
    if (bytes) *bytes = sizeof vector_add_bias;
    return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    (void)m;
    for (size_t i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++) {
        if (strcmp(kernel_names[i], name) == 0) {
            *f = (CUfunction)(uintptr_t)kernel_names[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}
CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction f) { (void)f; *pi = (int)attrib + 10; return CUDA_SUCCESS; }
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int bs, size_t sm) { (void)f; (void)sm; *n = 2048 / bs; return CUDA_SUCCESS; }
CUresult cuOccupancyMaxPotentialBlockSize(int *grid, int *block, CUfunction f, CUoccupancyB2DSize cb, size_t sm, int lim)
{
    (void)f; (void)cb; (void)sm; (void)lim;
    *grid = 264;
    *block = 256;
    return CUDA_SUCCESS;
}

static int kernel_path_launch(const char *name, unsigned gx, unsigned bx, void **params);
static int tma_load_tile(const void *map, float *out, int x, int y);

/* Parameter i of the launch: from kernelParams, or at `offset` in the extra buffer. */
static void *param(void **kernel_params, void **extra, int i, size_t offset)
{
    if (kernel_params) return kernel_params[i];
    for (int k = 0; extra && extra[k] != CU_LAUNCH_PARAM_END; k += 2) {
        if (extra[k] == CU_LAUNCH_PARAM_BUFFER_POINTER) return (char *)extra[k + 1] + offset;
    }
    return NULL;
}
#define P(type, i, off) (*(type *)param(kernelParams, extra, (i), (off)))

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void **kernelParams,
                        void **extra)
{
    (void)shared; (void)stream; (void)gz; (void)bz;
    NEED_CTX();
    const char *name = (const char *)(uintptr_t)f;
    long threads = (long)gx * bx;
    if (strcmp(name, "vector_add") == 0) {
        float *a = (float *)(uintptr_t)P(CUdeviceptr, 0, 0), *b = (float *)(uintptr_t)P(CUdeviceptr, 1, 8);
        float *c = (float *)(uintptr_t)P(CUdeviceptr, 2, 16);
        int n = P(int, 3, 24);
        for (long i = 0; i < threads && i < n; i++) c[i] = a[i] + b[i];
    } else if (strcmp(name, "matmul") == 0) {
        const float *A = (float *)(uintptr_t)P(CUdeviceptr, 0, 0), *B = (float *)(uintptr_t)P(CUdeviceptr, 1, 8);
        float *C = (float *)(uintptr_t)P(CUdeviceptr, 2, 16);
        int n = P(int, 3, 24);
        if ((long)gx * bx != n || (long)gy * by != n) return CUDA_ERROR_INVALID_VALUE;
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < n; c++) C[(size_t)r * n + c] = 0.0f;
            for (int k = 0; k < n; k++) {
                float a = A[(size_t)r * n + k];
                for (int c = 0; c < n; c++) C[(size_t)r * n + c] += a * B[(size_t)k * n + c];
            }
        }
    } else if (strcmp(name, "scale_add") == 0) {
        float *x = (float *)(uintptr_t)P(CUdeviceptr, 0, 0);
        float s = P(float, 1, 8), add = P(float, 2, 12);
        int n = P(int, 3, 16);
        for (long i = 0; i < threads && i < n; i++) x[i] = x[i] * s + add;
    } else if (strcmp(name, "spin_then_fill") == 0) {
        int *out = (int *)(uintptr_t)P(CUdeviceptr, 0, 0);
        int value = P(int, 1, 8), n = P(int, 2, 12);
        unsigned long long ns = P(unsigned long long, 3, 16);
        usleep((useconds_t)(ns / 1000));
        for (long i = 0; i < threads && i < n; i++) out[i] = value;
    } else if (strcmp(name, "sum_u32") == 0) {
        const unsigned *in = (unsigned *)(uintptr_t)P(CUdeviceptr, 0, 0);
        int n = P(int, 1, 8);
        unsigned long long *out = (unsigned long long *)(uintptr_t)P(CUdeviceptr, 2, 16), s = 0;
        for (int i = 0; i < n; i++) s += in[i];
        *out = s;
    } else if (strcmp(name, "fill_index") == 0) {
        unsigned *out = (unsigned *)(uintptr_t)P(CUdeviceptr, 0, 0);
        int n = P(int, 1, 8);
        for (long i = 0; i < threads && i < n; i++) out[i] = (unsigned)i * 3u + 1u;
    } else if (strcmp(name, "sleep_kernel") == 0) {
        double until = now_ms() + (double)P(unsigned long long, 0, 0) * 1e-6;
        while (now_ms() < until) {
        }
    } else if (strcmp(name, "dp_print") == 0) {
        /* the CPU prints at once (the GPU at the next synchronisation): only the program's logic is checked */
        int launch = P(int, 0, 0), lines = P(int, 1, 4);
        for (int i = 0; i < lines; i++) printf("device: launch %d line %d of %d\n", launch, i, lines);
    } else if (strcmp(name, "tma_load_tile") == 0) {
        if (kernelParams == NULL || !tma_load_tile(kernelParams[0], (float *)(uintptr_t)*(CUdeviceptr *)kernelParams[1],
                                                   *(int *)kernelParams[2], *(int *)kernelParams[3]))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
    } else if (strcmp(name, "empty_kernel") != 0 && !kernel_path_launch(name, gx, bx, kernelParams)) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    return CUDA_SUCCESS;
}

/* ---- gpu/kernels/kernel_path.cu as a CUDA 12 library (gpu/programs/kernel_path.c) ---- */
static int kp_counter[4]; /* kernel_path.cu's __device__ global */
static struct { int tag; } library_object;
static unsigned launch_cluster_x = 1; /* the cluster dimension of the launch running (cuLaunchKernelEx) */

static int kernel_path_launch(const char *name, unsigned gx, unsigned bx, void **params)
{
    if (params == NULL) return 0;
    if (strcmp(name, "kp_scale") == 0) {
        float *x = (float *)(uintptr_t)*(CUdeviceptr *)params[0], s = *(float *)params[1];
        int n = *(int *)params[2];
        for (long i = 0; i < (long)gx * bx && i < n; i++) x[i] = x[i] * s + (float)i;
    } else if (strcmp(name, "kp_fill_global") == 0) {
        for (int i = 0; i < 4; i++) kp_counter[i] = *(int *)params[0] + i;
    } else if (strcmp(name, "kp_cluster_rank") == 0) {
        unsigned *out = (unsigned *)(uintptr_t)*(CUdeviceptr *)params[0];
        for (unsigned b = 0; b < gx; b++) out[b] = b % launch_cluster_x;
    } else if (strcmp(name, "kp_grid_sum") == 0) {
        unsigned *out = (unsigned *)(uintptr_t)*(CUdeviceptr *)params[0];
        for (unsigned b = 0; b < gx; b++) out[0] += b;
        out[1] = out[0];
    } else if (strcmp(name, "kp_large_param") == 0) {
        const unsigned *v = params[0];
        unsigned long long *out = (unsigned long long *)(uintptr_t)*(CUdeviceptr *)params[1], s = 0;
        for (int i = 0; i < 8000; i++) s += v[i];
        *out = s;
    } else {
        return 0;
    }
    return 1;
}

/* The JIT options' outputs as the driver writes them (jit_logs.c): a PTX text naming an unknown
 * instruction fails with an error log, any other load writes an info log; each log's size option
 * gets the bytes written with the NUL, CU_JIT_WALL_TIME a float. */
static CUresult mock_jit(const void *image, unsigned int n, CUjit_option *o, void **v)
{
    int bad = image != NULL && strstr((const char *)image, "frobnicate") != NULL;
    const char *text[2] = {bad ? "" : "mock ptxas: compiled\n", bad ? "mock ptxas: unknown instruction\n" : ""};
    for (unsigned int i = 0; o != NULL && v != NULL && i < n; i++) {
        int w = o[i] == CU_JIT_ERROR_LOG_BUFFER;
        if (o[i] == CU_JIT_INFO_LOG_BUFFER || o[i] == CU_JIT_ERROR_LOG_BUFFER) {
            for (unsigned int k = 0; k < n; k++) {
                if (o[k] == (w ? CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES : CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)) {
                    size_t room = (size_t)(uintptr_t)v[k], len = strlen(text[w]);
                    if (room == 0) continue;
                    if (len >= room) len = room - 1;
                    memcpy(v[i], text[w], len);
                    ((char *)v[i])[len] = '\0';
                    v[k] = (void *)(uintptr_t)(len + 1);
                }
            }
        } else if (o[i] == CU_JIT_WALL_TIME) {
            float ms = 0.5f;
            memcpy(&v[i], &ms, sizeof ms);
        }
    }
    return bad ? CUDA_ERROR_INVALID_PTX : CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *o, void **v)
{
    NEED_CTX();
    if (!image) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = mock_jit(image, n, o, v);
    if (r == CUDA_SUCCESS) *m = (CUmodule)&module_object;
    return r;
}
CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv, unsigned int nj,
                           CUlibraryOption *lo, void **lv, unsigned int nl)
{
    (void)lo; (void)lv; (void)nl;
    NEED_INIT();
    if (code == NULL) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = mock_jit(code, nj, jo, jv);
    if (r == CUDA_SUCCESS) *lib = (CUlibrary)&library_object;
    return r;
}
CUresult cuLibraryLoadFromFile(CUlibrary *lib, const char *path, CUjit_option *jo, void **jv, unsigned int nj,
                               CUlibraryOption *lo, void **lv, unsigned int nl)
{
    if (access(path, R_OK) != 0) return CUDA_ERROR_FILE_NOT_FOUND;
    return cuLibraryLoadData(lib, path, jo, jv, nj, lo, lv, nl);
}
CUresult cuLibraryUnload(CUlibrary lib) { return lib == (CUlibrary)&library_object ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib) { (void)lib; *count = 5; return CUDA_SUCCESS; }
CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    (void)lib;
    for (size_t i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++) {
        if (strncmp(kernel_names[i], "kp_", 3) == 0 && strcmp(kernel_names[i], name) == 0) {
            *k = (CUkernel)(uintptr_t)kernel_names[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib, const char *name)
{
    (void)lib;
    if (strcmp(name, "kp_counter") != 0) return CUDA_ERROR_NOT_FOUND;
    *dptr = (CUdeviceptr)(uintptr_t)kp_counter;
    *bytes = sizeof kp_counter;
    return CUDA_SUCCESS;
}
CUresult cuLibraryGetModule(CUmodule *m, CUlibrary lib) { (void)lib; *m = (CUmodule)&module_object; return CUDA_SUCCESS; }
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k) { *f = (CUfunction)k; return CUDA_SUCCESS; }
CUresult cuKernelGetLibrary(CUlibrary *lib, CUkernel k) { (void)k; *lib = (CUlibrary)&library_object; return CUDA_SUCCESS; }
CUresult cuFuncGetName(const char **name, CUfunction f) { *name = (const char *)(uintptr_t)f; return CUDA_SUCCESS; }
CUresult cuKernelGetParamInfo(CUkernel k, size_t index, size_t *offset, size_t *size)
{
    (void)k;
    *offset = index * 8;
    *size = 4;
    return CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    launch_cluster_x = 1;
    for (unsigned i = 0; i < config->numAttrs; i++) {
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) launch_cluster_x = config->attrs[i].value.clusterDim.x;
        else if (config->attrs[i].id != CU_LAUNCH_ATTRIBUTE_COOPERATIVE) return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r = cuLaunchKernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                                config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream, params,
                                extra);
    launch_cluster_x = 1;
    return r;
}
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                   unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params)
{
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, NULL);
}
CUresult cuOccupancyMaxPotentialClusterSize(int *size, CUfunction f, const CUlaunchConfig *c) { (void)f; (void)c; *size = 8; return CUDA_SUCCESS; }
CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *c) { (void)f; (void)c; *n = 66; return CUDA_SUCCESS; }
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *smem, CUfunction f, int blocks, int threads)
{
    (void)f; (void)blocks; (void)threads;
    *smem = 232448;
    return CUDA_SUCCESS;
}
static CUfunc_cache cache_config;
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id) { (void)ctx; NEED_CTX(); *id = 1; return CUDA_SUCCESS; }
CUresult cuCtxSetCacheConfig(CUfunc_cache c) { NEED_CTX(); cache_config = c; return CUDA_SUCCESS; }
CUresult cuCtxGetCacheConfig(CUfunc_cache *c) { NEED_CTX(); *c = cache_config; return CUDA_SUCCESS; }
CUresult cuCtxResetPersistingL2Cache(void) { NEED_CTX(); return CUDA_SUCCESS; }
CUresult cuCtxRecordEvent(CUcontext ctx, CUevent e) { (void)ctx; return cuEventRecord(e, NULL); }
CUresult cuCtxWaitEvent(CUcontext ctx, CUevent e) { (void)ctx; (void)e; return CUDA_SUCCESS; }
CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) { (void)dev; (void)peer; *can = 0; return CUDA_SUCCESS; }
CUresult cuDeviceGetP2PAttribute(int *v, CUdevice_P2PAttribute a, CUdevice s, CUdevice d) { (void)v; (void)a; (void)s; (void)d; return CUDA_ERROR_INVALID_DEVICE; }
CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) { (void)peer; (void)flags; return CUDA_ERROR_INVALID_DEVICE; }
CUresult cuCtxDisablePeerAccess(CUcontext peer) { (void)peer; return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED; }
static const unsigned char linked_image[16] = { 0x7f, 'E', 'L', 'F', 2 };
static struct { int tag; } link_object;
CUresult cuLinkCreate(unsigned int n, CUjit_option *o, void **v, CUlinkState *state)
{
    (void)n; (void)o; (void)v;
    NEED_CTX();
    *state = (CUlinkState)&link_object;
    return CUDA_SUCCESS;
}
CUresult cuLinkAddFile(CUlinkState s, CUjitInputType t, const char *path, unsigned int n, CUjit_option *o, void **v)
{
    (void)s; (void)t; (void)n; (void)o; (void)v;
    return access(path, R_OK) == 0 ? CUDA_SUCCESS : CUDA_ERROR_FILE_NOT_FOUND;
}
CUresult cuLinkComplete(CUlinkState s, void **cubin, size_t *size) { (void)s; *cubin = (void *)linked_image; *size = sizeof linked_image; return CUDA_SUCCESS; }
CUresult cuLinkDestroy(CUlinkState s) { (void)s; return CUDA_SUCCESS; }

/* ---- virtual memory: a reservation is host memory of its own, mapped or not (vmm_pools, tensor_map) ---- */
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)
{
    (void)alignment; (void)addr; (void)flags; /* the hint is never honoured here */
    NEED_CTX();
    void *p = aligned_alloc(2u << 20, (size + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1));
    *ptr = (CUdeviceptr)(uintptr_t)p;
    return track(p, size, 0, 0);
}
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) { (void)size; return untrack((uintptr_t)ptr); }
CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)prop; (void)flags;
    *h = size;
    return CUDA_SUCCESS;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle h) { (void)h; return CUDA_SUCCESS; }
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags)
{
    (void)offset; (void)h; (void)flags;
    return find_allocation((uintptr_t)ptr) && find_allocation((uintptr_t)ptr + size - 1) ? CUDA_SUCCESS
                                                                                         : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) { (void)ptr; (void)size; return CUDA_SUCCESS; }
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    (void)ptr; (void)size; (void)desc; (void)count;
    return CUDA_SUCCESS;
}

/* ---- tensor maps: the mock's own encoding (qword 0 the address, 1 the rank and type, 2-6 the dims,
 * 7-10 the strides, 11-15 the box), checked as cuda.h documents the driver's rules ---- */
static CUresult encode(CUtensorMap *m, CUtensorMapDataType type, cuuint32_t rank, cuuint32_t min_rank, void *address,
                       const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                       const cuuint32_t *elements, CUtensorMapFloatOOBfill fill)
{
    if (m == NULL || (uintptr_t)m % 64 || rank < min_rank || rank > 5 || (uintptr_t)address % 16 || type > 15 ||
        dims == NULL || elements == NULL || (rank > 1 && strides == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && type != CU_TENSOR_MAP_DATA_TYPE_FLOAT16 &&
        type != CU_TENSOR_MAP_DATA_TYPE_FLOAT32 && type != CU_TENSOR_MAP_DATA_TYPE_FLOAT64 &&
        type != CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)
        return CUDA_ERROR_INVALID_VALUE;
    memset(m, 0, sizeof *m);
    m->opaque[0] = (uintptr_t)address;
    m->opaque[1] = rank | (uint64_t)type << 8;
    for (cuuint32_t i = 0; i < rank; i++) {
        if (dims[i] == 0 || dims[i] > (1ULL << 32) || (box && (box[i] == 0 || box[i] > 256)) || elements[i] == 0 ||
            elements[i] > 8)
            return CUDA_ERROR_INVALID_VALUE;
        if (i > 0 && (strides[i - 1] % 16 || strides[i - 1] >= (1ULL << 40))) return CUDA_ERROR_INVALID_VALUE;
        m->opaque[2 + i] = dims[i];
        if (i > 0) m->opaque[6 + i] = strides[i - 1];
        m->opaque[11 + i] = box ? box[i] : 0;
    }
    return CUDA_SUCCESS;
}
CUresult cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType type, cuuint32_t rank, void *address,
                                const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                const cuuint32_t *elements, CUtensorMapInterleave interleave,
                                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill)
{
    (void)interleave; (void)swizzle; (void)l2;
    if (box == NULL) return CUDA_ERROR_INVALID_VALUE;
    return encode(m, type, rank, 1, address, dims, strides, box, elements, fill);
}
CUresult cuTensorMapEncodeIm2col(CUtensorMap *m, CUtensorMapDataType type, cuuint32_t rank, void *address,
                                 const cuuint64_t *dims, const cuuint64_t *strides, const int *lower, const int *upper,
                                 cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *elements,
                                 CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill)
{
    (void)channels; (void)pixels; (void)interleave; (void)swizzle; (void)l2;
    if (lower == NULL || upper == NULL) return CUDA_ERROR_INVALID_VALUE;
    return encode(m, type, rank, 3, address, dims, strides, NULL, elements, fill);
}
CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *m, CUtensorMapDataType type, cuuint32_t rank, void *address,
                                     const cuuint64_t *dims, const cuuint64_t *strides, int lower, int upper,
                                     cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *elements,
                                     CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
                                     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                     CUtensorMapFloatOOBfill fill)
{
    (void)lower; (void)upper; (void)channels; (void)pixels; (void)interleave; (void)mode; (void)swizzle; (void)l2;
    return encode(m, type, rank, 3, address, dims, strides, NULL, elements, fill);
}
CUresult cuTensorMapReplaceAddress(CUtensorMap *m, void *address)
{
    if (m == NULL || (uintptr_t)m % 64 || (uintptr_t)address % 16) return CUDA_ERROR_INVALID_VALUE;
    m->opaque[0] = (uintptr_t)address;
    return CUDA_SUCCESS;
}

/* gpu/kernels/tensor_map.cu: the 2D float box at (x, y) of the mock's map, zeros outside the tensor */
static int tma_load_tile(const void *map, float *out, int x, int y)
{
    const CUtensorMap *m = map;
    if ((m->opaque[1] & 0xff) != 2) return 0;
    const char *base = (const char *)(uintptr_t)m->opaque[0];
    uint64_t w = m->opaque[2], h = m->opaque[3], pitch = m->opaque[7], bw = m->opaque[11], bh = m->opaque[12];
    for (uint64_t r = 0; r < bh; r++)
        for (uint64_t c = 0; c < bw; c++) {
            uint64_t gx = (uint64_t)x + c, gy = (uint64_t)y + r;
            out[r * bw + c] = gx < w && gy < h ? *(const float *)(base + gy * pitch + gx * 4) : 0.0f;
        }
    return 1;
}
