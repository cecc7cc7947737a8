/* Tensor maps (docs/memory.md "Tensor maps"): the driver encodes a CUtensorMap on the host from a
 * device address and the tensor's shape; kernels take the 128 bytes by value. The server calls the
 * driver's encoder with the same arguments and answers its bytes, which land in the caller's map
 * only when the driver succeeded. Each array travels with tensorRank entries and zeros after them
 * (api/memory-objects.api); a rank out of the driver's range is refused here, before an array is
 * read past what the caller could have meant, and the server checks it again. */
#include <stdint.h>
#include <string.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

#define MAX_RANK 5
/* No check of the map's alignment: cuda.h asks for 64 bytes, but driver 580 encodes into a map 8
 * bytes off 64 and answers CUDA_SUCCESS (gpu/programs/tensor_map.c on the H200, 2026-12-02), so
 * the guest does the same: the server encodes into its own aligned buffer and the guest copies the
 * 128 bytes to wherever the caller's map is. */

/* The checks every encoder shares; copies the dims and strides of `rank` into the wire arrays. */
static CUresult common(const char *function, CUtensorMap *tensorMap, cuuint32_t rank, cuuint32_t minRank,
                       const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                       const cuuint32_t *elementStrides, ivc_tensor_dims *dims, ivc_tensor_strides *strides,
                       ivc_tensor_box *elements)
{
    if (tensorMap == NULL)
        return ivc_null_argument(function, "tensorMap");
    if (rank < minRank || rank > MAX_RANK) {
        ivc_trace("%s: tensorRank %u is not in %u..%d -> CUDA_ERROR_INVALID_VALUE", function, rank, minRank, MAX_RANK);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (globalDim == NULL)
        return ivc_null_argument(function, "globalDim");
    if (rank > 1 && globalStrides == NULL)
        return ivc_null_argument(function, "globalStrides");
    if (elementStrides == NULL)
        return ivc_null_argument(function, "elementStrides");
    memset(dims, 0, sizeof *dims);
    memset(strides, 0, sizeof *strides);
    memset(elements, 0, sizeof *elements);
    memcpy(dims->v, globalDim, rank * sizeof globalDim[0]);
    if (rank > 1)
        memcpy(strides->v, globalStrides, (rank - 1) * sizeof globalStrides[0]);
    memcpy(elements->v, elementStrides, rank * sizeof elementStrides[0]);
    return CUDA_SUCCESS;
}

/* The encoded bytes reach the caller's map only when the driver succeeded. */
static CUresult answer(CUresult result, CUtensorMap *tensorMap, const CUtensorMap *encoded)
{
    if (result == CUDA_SUCCESS)
        memcpy(tensorMap, encoded, sizeof *tensorMap);
    return result;
}

IVC_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                           cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                           const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                                           const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                           CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                           CUtensorMapFloatOOBfill oobFill)
{
    ivc_tensor_dims dims;
    ivc_tensor_strides strides;
    ivc_tensor_box elements;
    CUresult r = common("cuTensorMapEncodeTiled", tensorMap, tensorRank, 1, globalDim, globalStrides, elementStrides,
                        &dims, &strides, &elements);
    if (r != CUDA_SUCCESS)
        return r;
    if (boxDim == NULL)
        return ivc_null_argument("cuTensorMapEncodeTiled", "boxDim");
    ivc_tensor_box box;
    memset(&box, 0, sizeof box);
    memcpy(box.v, boxDim, tensorRank * sizeof boxDim[0]);
    CUtensorMap encoded;
    r = ivc_tensor_map_encode_tiled(&encoded, tensorDataType, tensorRank, (CUdeviceptr)(uintptr_t)globalAddress, dims,
                                    strides, box, elements, interleave, swizzle, l2Promotion, oobFill);
    return answer(r, tensorMap, &encoded);
}

IVC_EXPORT CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                            cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                            const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
                                            const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
                                            cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                                            CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                            CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    ivc_tensor_dims dims;
    ivc_tensor_strides strides;
    ivc_tensor_box elements;
    CUresult r = common("cuTensorMapEncodeIm2col", tensorMap, tensorRank, 3, globalDim, globalStrides, elementStrides,
                        &dims, &strides, &elements);
    if (r != CUDA_SUCCESS)
        return r;
    if (pixelBoxLowerCorner == NULL)
        return ivc_null_argument("cuTensorMapEncodeIm2col", "pixelBoxLowerCorner");
    if (pixelBoxUpperCorner == NULL)
        return ivc_null_argument("cuTensorMapEncodeIm2col", "pixelBoxUpperCorner");
    /* the corners of the spatial dimensions: all but the channels (first) and the batch (last) */
    ivc_tensor_corner lower, upper;
    memset(&lower, 0, sizeof lower);
    memset(&upper, 0, sizeof upper);
    memcpy(lower.v, pixelBoxLowerCorner, (tensorRank - 2) * sizeof pixelBoxLowerCorner[0]);
    memcpy(upper.v, pixelBoxUpperCorner, (tensorRank - 2) * sizeof pixelBoxUpperCorner[0]);
    CUtensorMap encoded;
    r = ivc_tensor_map_encode_im2col(&encoded, tensorDataType, tensorRank, (CUdeviceptr)(uintptr_t)globalAddress, dims,
                                     strides, lower, upper, channelsPerPixel, pixelsPerColumn, elements, interleave,
                                     swizzle, l2Promotion, oobFill);
    return answer(r, tensorMap, &encoded);
}

IVC_EXPORT CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                                cuuint32_t tensorRank, void *globalAddress,
                                                const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                                int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth,
                                                cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                                const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                                CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
                                                CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    ivc_tensor_dims dims;
    ivc_tensor_strides strides;
    ivc_tensor_box elements;
    CUresult r = common("cuTensorMapEncodeIm2colWide", tensorMap, tensorRank, 3, globalDim, globalStrides,
                        elementStrides, &dims, &strides, &elements);
    if (r != CUDA_SUCCESS)
        return r;
    CUtensorMap encoded;
    r = ivc_tensor_map_encode_im2col_wide(&encoded, tensorDataType, tensorRank, (CUdeviceptr)(uintptr_t)globalAddress,
                                          dims, strides, pixelBoxLowerCornerWidth, pixelBoxUpperCornerWidth,
                                          channelsPerPixel, pixelsPerColumn, elements, interleave, mode, swizzle,
                                          l2Promotion, oobFill);
    return answer(r, tensorMap, &encoded);
}

IVC_EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    if (tensorMap == NULL)
        return ivc_null_argument("cuTensorMapReplaceAddress", "tensorMap");
    ivc_tensor_map_bytes held;
    memcpy(&held, tensorMap, sizeof held);
    CUtensorMap replaced;
    CUresult r = ivc_tensor_map_replace_address(&replaced, held, (CUdeviceptr)(uintptr_t)globalAddress);
    return answer(r, tensorMap, &replaced);
}
