/* Shared helpers of the validation and benchmark programs: checked driver calls,
 * kernel image loading and a deterministic checksum. Plain CUDA driver API, so the
 * same binary runs on NVIDIA's libcuda.so.1 and on ivcuda's. */
#ifndef IVCUDA_GPU_COMMON_H
#define IVCUDA_GPU_COMMON_H

#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every driver call goes through CK: a failure names the call and the CUresult on
 * stdout (so the comparison sees it) and ends the program with status 1. */
static inline void ck_fail(CUresult r, const char *call, const char *file, int line)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) {
        name = "(unknown CUresult)";
    }
    printf("FAIL %s -> %s (%d) at %s:%d\n", call, name, (int)r, file, line);
    fprintf(stderr, "FAIL %s -> %s (%d) at %s:%d\n", call, name, (int)r, file, line);
    fflush(stdout);
    exit(1);
}

#define CK(call)                                                                   \
    do {                                                                           \
        CUresult ck_r_ = (call);                                                   \
        if (ck_r_ != CUDA_SUCCESS) ck_fail(ck_r_, #call, __FILE__, __LINE__);     \
    } while (0)

static inline const char *result_name(CUresult r)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) return "(none)";
    return name;
}

static inline void die(const char *what)
{
    printf("FAIL %s\n", what);
    fprintf(stderr, "FAIL %s\n", what);
    fflush(stdout);
    exit(1);
}

static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads a whole file; the buffer gets one extra NUL byte so PTX is a C string. */
static inline void *read_file(const char *path, size_t *size_out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        printf("FAIL cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)size + 1);
    if (buf == NULL || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        printf("FAIL cannot read %s\n", path);
        exit(1);
    }
    buf[size] = '\0';
    fclose(f);
    if (size_out != NULL) *size_out = (size_t)size;
    return buf;
}

/* "<dir>/<name>.<ext>" with dir from argv[1] (the script passes the kernel build dir). */
static inline void *read_kernel(const char *dir, const char *name, const char *ext, size_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    return read_file(path, size);
}

static inline const char *kernel_dir(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <kernel-dir>\n", argv[0]);
        exit(2);
    }
    return argv[1];
}

/* FNV-1a over bytes: exact, so native and ivcuda results must match bit for bit. */
static inline uint64_t fnv1a(const void *data, size_t size)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* First device, a fresh context of our own made current (cuCtxCreate is
 * cuCtxCreate_v4 in CUDA 13: NULL params = a plain context). */
static inline CUcontext create_context(CUdevice *dev_out)
{
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    if (dev_out != NULL) *dev_out = dev;
    return ctx;
}

#endif
