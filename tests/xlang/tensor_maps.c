/*
 * Cross-language tensor-map checker (docs/memory.md "Tensor maps"): the encoders through the guest
 * library against the host-memory server, which has no driver to encode a map and answers
 * CUDA_ERROR_NOT_SUPPORTED once its own checks passed. So the answer tells which side decided:
 * NOT_SUPPORTED, the request reached the backend with an extent the server held to the process's
 * memory; INVALID_VALUE, the guest library or the server refused it. The extents are exact (a
 * tensor that fills its allocation passes, one element more is refused), so the arrays the guest
 * library sends are the rank's entries of the caller's. A refused call leaves the caller's map as
 * it was. Prints "tensor_maps: ok" or what was wrong. Built with the guest's own cuda.h.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill);
CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                 void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                 const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill);
CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                     cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                     const cuuint64_t *globalStrides, int pixelBoxLowerCornerWidth,
                                     int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
                                     cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                                     CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
                                     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                     CUtensorMapFloatOOBfill oobFill);
CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);

#define FLOAT32 7

static CUresult tiled(CUtensorMap *m, cuuint32_t rank, CUdeviceptr address, const cuuint64_t *dims,
                      const cuuint64_t *strides)
{
    static const cuuint32_t box[] = {4, 4, 4, 4, 4}, ones[] = {1, 1, 1, 1, 1};
    return cuTensorMapEncodeTiled(m, FLOAT32, rank, (void *)(uintptr_t)address, dims, strides, box, ones, 0, 0, 0, 0);
}

int main(void)
{
    CUdevice dev = xlang_device();
    CUcontext ctx = xlang_primary_context(dev);
    CUdeviceptr dev_mem, other;
    CK(cuMemAlloc_v2(&dev_mem, 1024));
    CK(cuMemAlloc_v2(&other, 1024));
    CUtensorMap map;
    memset(&map, 0xA5, sizeof map);
    CUtensorMap before = map;

    /* 4x4x16 floats with strides 16 and 64 bytes span 16 + 3*16 + 15*64 = 1024 bytes */
    const cuuint64_t fits[] = {4, 4, 16}, more[] = {4, 4, 17}, strides[] = {16, 64};
    expect(tiled(&map, 3, dev_mem, fits, strides) == CUDA_ERROR_NOT_SUPPORTED,
           "a tensor filling its allocation reaches the backend");
    expect(tiled(&map, 3, dev_mem, more, strides) == CUDA_ERROR_INVALID_VALUE, "one row more is refused");
    expect(tiled(&map, 3, dev_mem + 16, fits, strides) == CUDA_ERROR_INVALID_VALUE, "16 bytes in is refused");
    /* rank 1: globalStrides is not read (NULL is fine); 256 floats fill 1024 bytes */
    const cuuint64_t line[] = {256}, longer[] = {257};
    expect(tiled(&map, 1, dev_mem, line, NULL) == CUDA_ERROR_NOT_SUPPORTED, "rank 1 without strides");
    expect(tiled(&map, 1, dev_mem, longer, NULL) == CUDA_ERROR_INVALID_VALUE, "rank 1, one float more");
    /* entries past the rank are never read: a rank-2 tensor with a huge third dimension given */
    const cuuint64_t two[] = {4, 16, 1ULL << 40};
    expect(tiled(&map, 2, dev_mem, two, strides) == CUDA_ERROR_NOT_SUPPORTED, "entries past the rank ignored");
    /* what the guest library refuses itself */
    expect(tiled(&map, 0, dev_mem, fits, strides) == CUDA_ERROR_INVALID_VALUE, "rank 0");
    expect(tiled(&map, 6, dev_mem, fits, strides) == CUDA_ERROR_INVALID_VALUE, "rank 6");
    expect(tiled(&map, 2, dev_mem, NULL, strides) == CUDA_ERROR_INVALID_VALUE, "no globalDim");
    expect(tiled(&map, 2, dev_mem, fits, NULL) == CUDA_ERROR_INVALID_VALUE, "rank 2 without strides");
    expect(tiled(NULL, 2, dev_mem, fits, strides) == CUDA_ERROR_INVALID_VALUE, "no map");
    static union { CUtensorMap map; unsigned char bytes[2 * sizeof(CUtensorMap)]; } holder;
    /* a map off the 64 bytes cuda.h asks for is encoded, as driver 580 does (the H200, 2026-12-02) */
    expect(tiled((CUtensorMap *)(void *)(holder.bytes + 8), 2, dev_mem, fits, strides) == CUDA_ERROR_NOT_SUPPORTED,
           "a map not 64-byte aligned reaches the server");
    /* a host address, and the memory the process freed */
    expect(tiled(&map, 2, (CUdeviceptr)(uintptr_t)&holder, fits, strides) == CUDA_ERROR_INVALID_VALUE,
           "a host address");
    CK(cuMemFree_v2(other));
    expect(tiled(&map, 2, other, fits, strides) == CUDA_ERROR_INVALID_VALUE, "freed memory");

    /* im2col: NHWC of 4 channels, 4x4 pixels, 4 images of floats: 16 + 3*16 + 3*64 + 3*256 = 1024 bytes */
    const cuuint64_t nhwc[] = {4, 4, 4, 4}, nhwc_bigger[] = {4, 4, 4, 5}, nhwc_strides[] = {16, 64, 256};
    const int lower[] = {0, 0}, upper[] = {0, 0};
    const cuuint32_t ones[] = {1, 1, 1, 1};
    expect(cuTensorMapEncodeIm2col(&map, FLOAT32, 4, (void *)(uintptr_t)dev_mem, nhwc, nhwc_strides, lower, upper, 4,
                                   16, ones, 0, 0, 0, 0) == CUDA_ERROR_NOT_SUPPORTED,
           "an im2col tensor filling its allocation");
    expect(cuTensorMapEncodeIm2col(&map, FLOAT32, 4, (void *)(uintptr_t)dev_mem, nhwc_bigger, nhwc_strides, lower,
                                   upper, 4, 16, ones, 0, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE,
           "an im2col tensor one image larger");
    expect(cuTensorMapEncodeIm2col(&map, FLOAT32, 2, (void *)(uintptr_t)dev_mem, nhwc, nhwc_strides, lower, upper, 4,
                                   16, ones, 0, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE,
           "im2col of rank 2");
    expect(cuTensorMapEncodeIm2colWide(&map, FLOAT32, 4, (void *)(uintptr_t)dev_mem, nhwc, nhwc_strides, 0, 0, 4, 16,
                                       ones, 0, 0, 0, 0, 0) == CUDA_ERROR_NOT_SUPPORTED,
           "an im2col-wide tensor filling its allocation");
    expect(cuTensorMapEncodeIm2colWide(&map, FLOAT32, 4, (void *)(uintptr_t)dev_mem, nhwc_bigger, nhwc_strides, 0, 0,
                                       4, 16, ones, 0, 0, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE,
           "an im2col-wide tensor one image larger");

    expect(cuTensorMapReplaceAddress(&map, (void *)(uintptr_t)dev_mem) == CUDA_ERROR_NOT_SUPPORTED,
           "replace by the process's memory reaches the backend");
    expect(cuTensorMapReplaceAddress(&map, (void *)(uintptr_t)other) == CUDA_ERROR_INVALID_VALUE,
           "replace by freed memory");
    expect(cuTensorMapReplaceAddress(NULL, (void *)(uintptr_t)dev_mem) == CUDA_ERROR_INVALID_VALUE, "replace no map");
    expect(memcmp(&map, &before, sizeof map) == 0, "no refused or unsupported call wrote the map");

    CK(cuMemFree_v2(dev_mem));
    CK(cuDevicePrimaryCtxRelease(dev));
    (void)ctx;
    return xlang_report("tensor_maps");
}
