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

/* Zeros the wire array `wire` and copies the first `count` entries of the caller's `from` into it. */
#define FILL(wire, from, count)                                                                                   \
    do {                                                                                                          \
        memset(&(wire), 0, sizeof(wire));                                                                         \
        if ((count) > 0)                                                                                          \
            memcpy((wire).v, (from), (size_t)(count) * sizeof (from)[0]);                                         \
    } while (0)

/* The arrays every encoder sends: globalDim, globalStrides (one entry fewer) and elementStrides. */
typedef struct {
    ivc_tensor_dims dims;
    ivc_tensor_strides strides;
    ivc_tensor_box elements;
} common_arrays;

/* The checks every encoder shares; copies the common arrays of `rank` into `wire`. */
static CUresult common(const char *function, CUtensorMap *tensorMap, cuuint32_t rank, cuuint32_t minRank,
                       const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                       const cuuint32_t *elementStrides, common_arrays *wire)
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
    FILL(wire->dims, globalDim, rank);
    FILL(wire->strides, globalStrides, rank - 1);
    FILL(wire->elements, elementStrides, rank);
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
    common_arrays a;
    CUresult r = common(__func__, tensorMap, tensorRank, 1, globalDim, globalStrides, elementStrides, &a);
    if (r != CUDA_SUCCESS)
        return r;
    if (boxDim == NULL)
        return ivc_null_argument(__func__, "boxDim");
    ivc_tensor_box box;
    FILL(box, boxDim, tensorRank);
    CUtensorMap encoded;
    r = ivc_tensor_map_encode_tiled(&encoded, tensorDataType, tensorRank, (CUdeviceptr)(uintptr_t)globalAddress,
                                    a.dims, a.strides, box, a.elements, interleave, swizzle, l2Promotion, oobFill);
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
    common_arrays a;
    CUresult r = common(__func__, tensorMap, tensorRank, 3, globalDim, globalStrides, elementStrides, &a);
    if (r != CUDA_SUCCESS)
        return r;
    if (pixelBoxLowerCorner == NULL)
        return ivc_null_argument(__func__, "pixelBoxLowerCorner");
    if (pixelBoxUpperCorner == NULL)
        return ivc_null_argument(__func__, "pixelBoxUpperCorner");
    /* the corners of the spatial dimensions: all but the channels (first) and the batch (last) */
    ivc_tensor_corner lower, upper;
    FILL(lower, pixelBoxLowerCorner, tensorRank - 2);
    FILL(upper, pixelBoxUpperCorner, tensorRank - 2);
    CUtensorMap encoded;
    r = ivc_tensor_map_encode_im2col(&encoded, tensorDataType, tensorRank, (CUdeviceptr)(uintptr_t)globalAddress,
                                     a.dims, a.strides, lower, upper, channelsPerPixel, pixelsPerColumn, a.elements,
                                     interleave, swizzle, l2Promotion, oobFill);
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
    common_arrays a;
    CUresult r = common(__func__, tensorMap, tensorRank, 3, globalDim, globalStrides, elementStrides, &a);
    if (r != CUDA_SUCCESS)
        return r;
    CUtensorMap encoded;
    r = ivc_tensor_map_encode_im2col_wide(&encoded, tensorDataType, tensorRank, (CUdeviceptr)(uintptr_t)globalAddress,
                                          a.dims, a.strides, pixelBoxLowerCornerWidth, pixelBoxUpperCornerWidth,
                                          channelsPerPixel, pixelsPerColumn, a.elements, interleave, mode, swizzle,
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
