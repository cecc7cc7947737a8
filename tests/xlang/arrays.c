/*
 * Cross-language array checker (docs/memory.md): CUDA arrays through the guest library against
 * the host-memory server, whose arrays are host blocks with packed rows — a transport test of
 * the array sides of cuMemcpy2D/3D from pageable memory (one inline request, runs of rows,
 * several slices a request, rows wider than a request cut in pieces) and from pinned memory
 * (the pool), the 1D array copies, a copy leaving its array, and texture and surface objects
 * created, queried and destroyed (never sampled: no kernel runs there). Every result is
 * compared with the CPU's copy. Prints "arrays: ok" or the first difference, exits non-zero then.
 * Built with the guest's own cuda.h (no NVIDIA toolkit).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray);
CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray);
CUresult cuArrayDestroy(CUarray hArray);
CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray);
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy);
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy);
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream);
CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,
                              CUstream hStream);
CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                           const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc);
CUresult cuTexObjectDestroy(CUtexObject texObject);
CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject);
CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc);
CUresult cuSurfObjectDestroy(CUsurfObject surfObject);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h, unsigned elementSize);

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 151 + seed + (i >> 9));
}

/* An array of `depth` slices (0: a 2D array) of uint8 x4 elements. */
static CUarray array_of(size_t w, size_t h, size_t depth)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = w, .Height = h, .Depth = depth, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                 .NumChannels = 4};
    CUarray a;
    CK(cuArray3DCreate_v2(&a, &d));
    return a;
}

/* host (pitch `pitch`, from x 3 y 1) → array (at x 4 bytes y 2 z 1) → host packed, against the CPU */
static void round_trip(unsigned char *src, unsigned char *dst, size_t w, size_t h, size_t d, size_t pitch,
                       const char *what)
{
    size_t ew = (w + 8) / 4 + 1, rows = h + 2, slices = d + 1; /* the array: room around the copy */
    size_t src_rows = h + 1;
    CUarray a = array_of(ew, rows, slices);
    size_t src_bytes = pitch * src_rows * d;
    fill(src, src_bytes, (unsigned)(w + h + d));
    CUDA_MEMCPY3D up = {.srcXInBytes = 3, .srcY = 1, .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src,
                        .srcPitch = pitch, .srcHeight = src_rows, .dstXInBytes = 4, .dstY = 2, .dstZ = 1,
                        .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a, .WidthInBytes = w, .Height = h,
                        .Depth = d};
    CK(cuMemcpy3D_v2(&up));
    memset(dst, 0xee, w * h * d);
    CUDA_MEMCPY3D down = {.srcXInBytes = 4, .srcY = 2, .srcZ = 1, .srcMemoryType = CU_MEMORYTYPE_ARRAY,
                          .srcArray = a, .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = dst, .dstPitch = w,
                          .dstHeight = h, .WidthInBytes = w, .Height = h, .Depth = d};
    CK(cuMemcpy3D_v2(&down));
    int same = 1;
    for (size_t z = 0; z < d && same; z++)
        for (size_t y = 0; y < h && same; y++)
            same = memcmp(dst + (z * h + y) * w, src + z * pitch * src_rows + (y + 1) * pitch + 3, w) == 0;
    expect(same, what);
    CK(cuArrayDestroy(a));
}

int main(void)
{
    xlang_primary_context(xlang_device());

    /* pageable: one request, runs of rows, several slices a request, wide rows in pieces */
    size_t shapes[][4] = {{40, 7, 1, 64}, {300, 1000, 1, 333}, {64, 16, 9, 70}, {400000, 3, 2, 400017}};
    for (size_t i = 0; i < 4; i++) {
        size_t w = shapes[i][0], h = shapes[i][1], d = shapes[i][2], pitch = shapes[i][3];
        unsigned char *a = malloc(pitch * (h + 1) * d), *b = malloc(w * h * d);
        char what[80];
        snprintf(what, sizeof what, "array pageable %zux%zux%zu pitch %zu", w, h, d, pitch);
        round_trip(a, b, w, h, d, pitch, what);
        free(a);
        free(b);
    }
    /* pinned (the pool) */
    {
        size_t w = 1000, h = 300, pitch = 1024;
        unsigned char *a, *b;
        CK(cuMemAllocHost_v2((void **)&a, pitch * (h + 1)));
        CK(cuMemAllocHost_v2((void **)&b, w * h));
        round_trip(a, b, w, h, 1, pitch, "array pinned 1000x300 pitch 1024");
        CK(cuMemFreeHost(a));
        CK(cuMemFreeHost(b));
    }

    /* the 1D copies: HtoA, AtoA, AtoD, DtoA, AtoH, HtoAAsync */
    {
        CUDA_ARRAY_DESCRIPTOR d = {.Width = 2500, .Height = 0, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
        CUarray a, b;
        CK(cuArrayCreate_v2(&a, &d));
        CK(cuArrayCreate_v2(&b, &d));
        CUDA_ARRAY_DESCRIPTOR got;
        CK(cuArrayGetDescriptor_v2(&got, a));
        expect(got.Width == 2500 && got.Height == 0 && got.Format == CU_AD_FORMAT_FLOAT && got.NumChannels == 1,
               "cuArrayGetDescriptor_v2 answers the descriptor");
        size_t n = 10000;
        unsigned char *src = malloc(n), *back = malloc(n);
        fill(src, n, 3);
        CK(cuMemcpyHtoA_v2(a, 0, src, n));
        CK(cuMemcpyAtoA_v2(b, 8, a, 0, n - 8));
        CUdeviceptr dev_buf;
        CK(cuMemAlloc_v2(&dev_buf, n));
        CK(cuMemcpyAtoD_v2(dev_buf, b, 8, n - 8));
        CK(cuMemcpyDtoA_v2(a, 0, dev_buf, n - 8));
        memset(back, 0, n);
        CK(cuMemcpyAtoH_v2(back, a, 0, n - 8));
        expect(memcmp(back, src, n - 8) == 0, "HtoA AtoA AtoD DtoA AtoH");
        CUstream s;
        CK(cuStreamCreate(&s, 0));
        CK(cuMemcpyHtoAAsync_v2(b, 0, src + 1, n - 1, s));
        CK(cuStreamSynchronize(s));
        CK(cuMemcpyAtoH_v2(back, b, 0, n - 1));
        expect(memcmp(back, src + 1, n - 1) == 0, "HtoAAsync");
        /* past the end of the array: refused, nothing written */
        expect(cuMemcpyHtoA_v2(a, 8, src, n) == CUDA_ERROR_INVALID_VALUE, "a 1D copy past the array is refused");
        CUDA_MEMCPY2D wide = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = n,
                              .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a, .WidthInBytes = n, .Height = 2};
        expect(cuMemcpy2D_v2(&wide) == CUDA_ERROR_INVALID_VALUE, "a second row of a 1D array is refused");
        CK(cuMemcpyAtoH_v2(back, a, 0, n - 8));
        expect(memcmp(back, src, n - 8) == 0, "the refused copies wrote nothing");
        CK(cuStreamDestroy_v2(s));
        CK(cuMemFree_v2(dev_buf));
        free(src);
        free(back);

        /* texture and surface objects: created, queried, destroyed */
        CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_ARRAY};
        res.res.array.hArray = a;
        CUDA_TEXTURE_DESC tex = {.filterMode = CU_TR_FILTER_MODE_POINT};
        CUtexObject t;
        CK(cuTexObjectCreate(&t, &res, &tex, NULL));
        CUDA_RESOURCE_DESC q;
        memset(&q, 0, sizeof q);
        CK(cuTexObjectGetResourceDesc(&q, t));
        expect(q.resType == CU_RESOURCE_TYPE_ARRAY && q.res.array.hArray == a,
               "the texture's resource names the array by its handle");
        CUsurfObject surf;
        CK(cuSurfObjectCreate(&surf, &res));
        CK(cuSurfObjectDestroy(surf));
        CK(cuTexObjectDestroy(t));
        expect(cuTexObjectDestroy(t) == CUDA_ERROR_INVALID_VALUE, "a texture object destroyed twice is refused");
        CUdeviceptr pitched;
        size_t pitch;
        CK(cuMemAllocPitch_v2(&pitched, &pitch, 64 * 4, 16, 4));
        CUDA_RESOURCE_DESC pres = {.resType = CU_RESOURCE_TYPE_PITCH2D};
        pres.res.pitch2D.devPtr = pitched, pres.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
        pres.res.pitch2D.numChannels = 1, pres.res.pitch2D.width = 64, pres.res.pitch2D.height = 16;
        pres.res.pitch2D.pitchInBytes = pitch;
        CK(cuTexObjectCreate(&t, &pres, &tex, NULL));
        CK(cuTexObjectDestroy(t));
        pres.res.pitch2D.height = 17; /* one row past the allocation */
        expect(cuTexObjectCreate(&t, &pres, &tex, NULL) == CUDA_ERROR_INVALID_VALUE,
               "a pitch2D texture past its allocation is refused");
        CK(cuMemFree_v2(pitched));
        CK(cuArrayDestroy(a));
        CK(cuArrayDestroy(b));
        unsigned char four[4];
        expect(cuMemcpyAtoH_v2(four, a, 0, 4) == CUDA_ERROR_INVALID_HANDLE, "a destroyed array is refused");
    }
    return xlang_report("arrays");
}
