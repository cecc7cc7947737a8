/*
 * Cross-language strided-copy checker (docs/memory.md): cuMemcpy2D/3D (sync, async, peer,
 * unified), cuMemsetD2D8/16/32 and cuMemcpyBatchAsync through the guest library against
 * the host-memory server, from pageable memory (packed inline, batched rows, wide rows one
 * by one) and from pinned memory (the pool). Every result is compared with the same copy
 * done on the CPU. Prints "strided: ok" or the first difference, and exits non-zero then.
 * Built with the guest's own cuda.h (no NVIDIA toolkit).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy);
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream);
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy);
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy);
CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n);
CUresult cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h);
CUresult cuMemsetD2D16_v2(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h);
CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s);
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                               CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream s);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned flags);
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h, unsigned elementSize);

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131 + seed + (i >> 8));
}

/* The CPU's strided copy: what every cuMemcpy2D below must produce. */
static void cpu_copy(unsigned char *dst, size_t dpitch, size_t drows, const unsigned char *src, size_t spitch,
                     size_t srows, size_t w, size_t h, size_t d)
{
    for (size_t z = 0; z < d; z++)
        for (size_t y = 0; y < h; y++)
            memcpy(dst + z * dpitch * drows + y * dpitch, src + z * spitch * srows + y * spitch, w);
}

/* A 2D round trip host → pitched device → host with offsets on every side. */
static void round_trip_2d(unsigned char *host_src, unsigned char *host_dst, size_t w, size_t h, size_t hpitch,
                          const char *what)
{
    CUdeviceptr d;
    size_t dpitch;
    CK(cuMemAllocPitch_v2(&d, &dpitch, w + 16, h + 2, 4));
    size_t hbytes = hpitch * (h + 3);
    fill(host_src, hbytes, (unsigned)w);
    memset(host_dst, 0x5a, hbytes);
    CUDA_MEMCPY2D up = {.srcXInBytes = 3, .srcY = 2, .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host_src,
                        .srcPitch = hpitch, .dstXInBytes = 16, .dstY = 1, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = d, .dstPitch = dpitch, .WidthInBytes = w, .Height = h};
    CK(cuMemcpy2D_v2(&up));
    CUDA_MEMCPY2D down = {.srcXInBytes = 16, .srcY = 1, .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d,
                          .srcPitch = dpitch, .dstXInBytes = 1, .dstY = 0, .dstMemoryType = CU_MEMORYTYPE_HOST,
                          .dstHost = host_dst, .dstPitch = hpitch, .WidthInBytes = w, .Height = h};
    CK(cuMemcpy2D_v2(&down));
    unsigned char *want = malloc(hbytes);
    memset(want, 0x5a, hbytes);
    cpu_copy(want + 1, hpitch, h, host_src + 3 + 2 * hpitch, hpitch, h, w, h, 1);
    expect(memcmp(want, host_dst, hbytes) == 0, what);
    free(want);
    CK(cuMemFree_v2(d));
}

int main(void)
{
    CUdevice dev = xlang_device();
    CUcontext ctx = xlang_primary_context(dev);

    /* pageable: small (one inline request), many rows (batched), wide rows (one by one) */
    size_t sizes[][3] = {{40, 7, 64}, {300, 1000, 333}, {200000, 3, 200017}};
    for (size_t i = 0; i < 3; i++) {
        size_t w = sizes[i][0], h = sizes[i][1], pitch = sizes[i][2];
        unsigned char *a = malloc(pitch * (h + 3)), *b = malloc(pitch * (h + 3));
        char what[64];
        snprintf(what, sizeof what, "2D pageable %zux%zu pitch %zu", w, h, pitch);
        round_trip_2d(a, b, w, h, pitch, what);
        free(a);
        free(b);
    }
    /* pinned (the pool) */
    {
        size_t w = 1000, h = 300, pitch = 1024;
        unsigned char *a, *b;
        CK(cuMemAllocHost_v2((void **)&a, pitch * (h + 3)));
        CK(cuMemAllocHost_v2((void **)&b, pitch * (h + 3)));
        round_trip_2d(a, b, w, h, pitch, "2D pinned 1000x300 pitch 1024");
        CK(cuMemFreeHost(a));
        CK(cuMemFreeHost(b));
    }

    /* 3D: host → device (pitch 64, 6 rows a slice) → device (unified, pitch 48, 5 rows) → host */
    {
        size_t w = 40, h = 5, dz = 4;
        size_t n1 = 64 * 6 * dz, n2 = 48 * 5 * dz;
        CUdeviceptr d1, d2;
        CK(cuMemAlloc_v2(&d1, n1));
        CK(cuMemAlloc_v2(&d2, n2));
        CK(cuMemsetD8_v2(d1, 0, n1));
        CK(cuMemsetD8_v2(d2, 0, n2));
        unsigned char *src = malloc(w * h * dz), *got = malloc(n2), *want = calloc(1, n2), *mid = calloc(1, n1);
        fill(src, w * h * dz, 77);
        CUDA_MEMCPY3D up = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = w, .srcHeight = h,
                            .dstY = 1, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d1, .dstPitch = 64,
                            .dstHeight = 6, .WidthInBytes = w, .Height = h, .Depth = dz};
        CK(cuMemcpy3D_v2(&up));
        CUDA_MEMCPY3D across = {.srcY = 1, .srcMemoryType = CU_MEMORYTYPE_UNIFIED, .srcDevice = d1, .srcPitch = 64,
                                .srcHeight = 6, .dstXInBytes = 8, .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
                                .dstDevice = d2, .dstPitch = 48, .dstHeight = 5, .WidthInBytes = w, .Height = h,
                                .Depth = dz};
        CK(cuMemcpy3D_v2(&across));
        CK(cuMemcpyDtoH_v2(got, d2, n2));
        cpu_copy(mid + 64, 64, 6, src, w, h, w, h, dz);
        cpu_copy(want + 8, 48, 5, mid + 64, 64, 6, w, h, dz);
        expect(memcmp(want, got, n2) == 0, "3D host → device → device (unified)");
        /* the peer form of the same copy back into d1's first slice, then a peer 1D copy */
        CUDA_MEMCPY3D_PEER peer = {.srcXInBytes = 8, .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d2,
                                   .srcContext = ctx, .srcPitch = 48, .srcHeight = 5,
                                   .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d1, .dstContext = ctx,
                                   .dstPitch = 64, .dstHeight = 6, .WidthInBytes = w, .Height = h, .Depth = 1};
        CK(cuMemcpy3DPeer(&peer));
        CK(cuMemcpyPeer(d2, ctx, d1, ctx, 64));
        unsigned char row[64];
        CK(cuMemcpyDtoH_v2(row, d2, 64));
        expect(memcmp(row, src, w) == 0, "3D peer copy and cuMemcpyPeer");
        /* an array side without an array (array copies themselves: tests/xlang/arrays.c) */
        CUDA_MEMCPY3D arr = up;
        arr.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        expect(cuMemcpy3D_v2(&arr) == CUDA_ERROR_INVALID_VALUE, "an array side without an array is refused");
        free(src);
        free(got);
        free(want);
        free(mid);
        CK(cuMemFree_v2(d1));
        CK(cuMemFree_v2(d2));
    }

    /* 2D memsets, sync and async, and an async 2D copy on a stream */
    {
        CUdeviceptr d;
        CUstream s;
        CK(cuStreamCreate(&s, 0));
        CK(cuMemAlloc_v2(&d, 32 * 8));
        CK(cuMemsetD8_v2(d, 0, 32 * 8));
        CK(cuMemsetD2D8_v2(d, 32, 0x11, 5, 2));
        CK(cuMemsetD2D16_v2(d + 2 * 32, 32, 0x2233, 4, 2));
        CK(cuMemsetD2D32Async(d + 4 * 32 + 4, 32, 0x44556677u, 3, 3, s));
        unsigned char got[32 * 8], want[32 * 8];
        memset(want, 0, sizeof want);
        for (int y = 0; y < 2; y++)
            memset(want + y * 32, 0x11, 5);
        for (int y = 2; y < 4; y++)
            for (int x = 0; x < 4; x++) {
                want[y * 32 + 2 * x] = 0x33;
                want[y * 32 + 2 * x + 1] = 0x22;
            }
        for (int y = 4; y < 7; y++)
            for (int x = 0; x < 3; x++) {
                unsigned char *p = want + y * 32 + 4 + 4 * x;
                p[0] = 0x77, p[1] = 0x66, p[2] = 0x55, p[3] = 0x44;
            }
        CUDA_MEMCPY2D down = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d, .srcPitch = 32,
                              .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = got, .dstPitch = 32,
                              .WidthInBytes = 32, .Height = 8};
        CK(cuMemcpy2DAsync_v2(&down, s));
        CK(cuStreamSynchronize(s));
        expect(memcmp(want, got, sizeof want) == 0, "cuMemsetD2D8/16/32");
        /* a batch of three 1D copies: host → device, device → device, device → host */
        unsigned char in[100], out[100];
        fill(in, sizeof in, 5);
        CUdeviceptr dsts[3] = {d, d + 128, (CUdeviceptr)(uintptr_t)out};
        CUdeviceptr srcs[3] = {(CUdeviceptr)(uintptr_t)in, d, d + 128};
        size_t lens[3] = {100, 100, 100}, idx = 0;
        CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL};
        CK(cuMemcpyBatchAsync_v2(dsts, srcs, lens, 3, &attr, &idx, 1, s));
        CK(cuStreamSynchronize(s));
        expect(memcmp(in, out, sizeof in) == 0, "cuMemcpyBatchAsync");
        /* a span past the allocation is refused by the server, not copied */
        CUDA_MEMCPY2D past = down;
        past.Height = 9;
        expect(cuMemcpy2D_v2(&past) == CUDA_ERROR_INVALID_VALUE, "a 2D copy past the allocation is refused");
        CK(cuMemFree_v2(d));
        CK(cuStreamDestroy_v2(s));
    }
    /* managed memory is refused at allocation, and the device says it has none (docs/memory.md) */
    {
        CUdeviceptr m = 0;
        expect(cuMemAllocManaged(&m, 4096, 1) == CUDA_ERROR_NOT_SUPPORTED, "cuMemAllocManaged is refused");
        int managed = -1;
        CUresult r = cuDeviceGetAttribute(&managed, 83 /* CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY */, dev);
        expect(r != CUDA_SUCCESS || managed == 0, "CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY answers 0");
    }
    /* stream-ordered allocation: device memory until its free (docs/memory.md) */
    {
        CUdeviceptr a = 0;
        unsigned char in[64], out[64];
        fill(in, sizeof in, 9);
        CK(cuMemAllocAsync(&a, 4096, NULL));
        CK(cuMemcpy(a + 100, (CUdeviceptr)(uintptr_t)in, sizeof in)); /* classified as device memory */
        CK(cuMemcpyDtoH_v2(out, a + 100, sizeof out));
        expect(memcmp(in, out, sizeof in) == 0, "cuMemAllocAsync memory is device memory");
        CK(cuMemFreeAsync(a, NULL));
        expect(cuMemsetD8_v2(a, 0, 1) == CUDA_ERROR_INVALID_VALUE, "freed async memory is refused");
        expect(cuMemFreeAsync(a, NULL) == CUDA_ERROR_INVALID_VALUE, "a second cuMemFreeAsync is refused");
    }
    /* host registration is the guest's: remembered, not mapped */
    {
        static unsigned char page[8192];
        CK(cuMemHostRegister_v2(page, sizeof page, 0));
        expect(cuMemHostRegister_v2(page + 100, 10, 0) == 712, "an overlapping registration is refused");
        CK(cuMemHostUnregister(page));
        expect(cuMemHostUnregister(page) == 713, "unregistering twice is refused");
        expect(cuMemHostRegister_v2(page, sizeof page, 0x02) == CUDA_ERROR_NOT_SUPPORTED,
               "a DEVICEMAP registration is refused");
    }
    return xlang_report("strided");
}
