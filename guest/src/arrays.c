/* Arrays, mipmapped arrays, texture and surface objects (docs/memory.md). Arrays are server
 * handles: their creation sends the descriptor's fields, and their 1D copies (cuMemcpyHtoA and
 * the rest) are 3D copies of one row through strided.c, whose array sides the server holds to
 * the array's geometry. Texture and surface objects are the driver's values: the resource
 * descriptor is split by its type so that the server checks its handle or device range itself;
 * the texture and view descriptors hold no handles and travel whole. */
#include <stdint.h>
#include <string.h>

#include "channel.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "strided.h"

/* ---- arrays ---- */

IVC_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    if (pHandle == NULL)
        return ivc_null_argument("cuArrayCreate_v2", "pHandle");
    if (pAllocateArray == NULL)
        return ivc_null_argument("cuArrayCreate_v2", "pAllocateArray");
    const CUDA_ARRAY_DESCRIPTOR d = *pAllocateArray;
    return ivc_array_create(pHandle, d.Width, d.Height, 0, d.Format, d.NumChannels, 0);
}

IVC_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    if (pHandle == NULL)
        return ivc_null_argument("cuArray3DCreate_v2", "pHandle");
    if (pAllocateArray == NULL)
        return ivc_null_argument("cuArray3DCreate_v2", "pAllocateArray");
    const CUDA_ARRAY3D_DESCRIPTOR d = *pAllocateArray;
    return ivc_array_create(pHandle, d.Width, d.Height, d.Depth, d.Format, d.NumChannels, d.Flags);
}

IVC_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                           unsigned int numMipmapLevels)
{
    if (pHandle == NULL)
        return ivc_null_argument("cuMipmappedArrayCreate", "pHandle");
    if (pMipmappedArrayDesc == NULL)
        return ivc_null_argument("cuMipmappedArrayCreate", "pMipmappedArrayDesc");
    const CUDA_ARRAY3D_DESCRIPTOR d = *pMipmappedArrayDesc;
    return ivc_mipmapped_array_create(pHandle, d.Width, d.Height, d.Depth, d.Format, d.NumChannels, d.Flags,
                                      numMipmapLevels);
}

/* ---- 1D copies to and from arrays: one row at X = the offset ---- */

static CUresult row_copy(CUmemorytype dstType, void *dstHost, CUdeviceptr dstDevice, CUarray dstArray, size_t dstOffset,
                         CUmemorytype srcType, const void *srcHost, CUdeviceptr srcDevice, CUarray srcArray,
                         size_t srcOffset, size_t bytes, const char *function, CUstream stream, int async)
{
    CUDA_MEMCPY3D c = {.srcMemoryType = srcType, .srcHost = srcHost, .srcDevice = srcDevice, .srcArray = srcArray,
                       .dstMemoryType = dstType, .dstHost = dstHost, .dstDevice = dstDevice, .dstArray = dstArray,
                       .WidthInBytes = bytes, .Height = 1, .Depth = 1};
    if (srcType == CU_MEMORYTYPE_ARRAY)
        c.srcXInBytes = srcOffset;
    if (dstType == CU_MEMORYTYPE_ARRAY)
        c.dstXInBytes = dstOffset;
    return ivc_strided_copy3d(&c, function, stream, async);
}

static CUstream per_thread(CUstream stream)
{
    return stream == NULL ? CU_STREAM_PER_THREAD : stream;
}

#define HTOA(dst, off, src, n, fn, stream, async)                                                                      \
    row_copy(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, off, CU_MEMORYTYPE_HOST, src, 0, NULL, 0, n, fn, stream, async)
#define ATOH(dst, src, off, n, fn, stream, async)                                                                      \
    row_copy(CU_MEMORYTYPE_HOST, dst, 0, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, src, off, n, fn, stream, async)
#define DTOA(dst, off, src, n, fn, stream)                                                                             \
    row_copy(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, off, CU_MEMORYTYPE_DEVICE, NULL, src, NULL, 0, n, fn, stream, 0)
#define ATOD(dst, src, off, n, fn, stream)                                                                             \
    row_copy(CU_MEMORYTYPE_DEVICE, NULL, dst, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, src, off, n, fn, stream, 0)
#define ATOA(dst, doff, src, soff, n, fn, stream)                                                                      \
    row_copy(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, doff, CU_MEMORYTYPE_ARRAY, NULL, 0, src, soff, n, fn, stream, 0)

IVC_EXPORT CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount)
{
    return HTOA(dstArray, dstOffset, srcHost, ByteCount, "cuMemcpyHtoA_v2", NULL, 0);
}

IVC_EXPORT CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount)
{
    return HTOA(dstArray, dstOffset, srcHost, ByteCount, "cuMemcpyHtoA_v2", CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    return ATOH(dstHost, srcArray, srcOffset, ByteCount, "cuMemcpyAtoH_v2", NULL, 0);
}

IVC_EXPORT CUresult cuMemcpyAtoH_v2_ptds(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    return ATOH(dstHost, srcArray, srcOffset, ByteCount, "cuMemcpyAtoH_v2", CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount)
{
    return DTOA(dstArray, dstOffset, srcDevice, ByteCount, "cuMemcpyDtoA_v2", NULL);
}

IVC_EXPORT CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount)
{
    return DTOA(dstArray, dstOffset, srcDevice, ByteCount, "cuMemcpyDtoA_v2", CU_STREAM_PER_THREAD);
}

IVC_EXPORT CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    return ATOD(dstDevice, srcArray, srcOffset, ByteCount, "cuMemcpyAtoD_v2", NULL);
}

IVC_EXPORT CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    return ATOD(dstDevice, srcArray, srcOffset, ByteCount, "cuMemcpyAtoD_v2", CU_STREAM_PER_THREAD);
}

IVC_EXPORT CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                                    size_t ByteCount)
{
    return ATOA(dstArray, dstOffset, srcArray, srcOffset, ByteCount, "cuMemcpyAtoA_v2", NULL);
}

IVC_EXPORT CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                                         size_t ByteCount)
{
    return ATOA(dstArray, dstOffset, srcArray, srcOffset, ByteCount, "cuMemcpyAtoA_v2", CU_STREAM_PER_THREAD);
}

IVC_EXPORT CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,
                                         CUstream hStream)
{
    return HTOA(dstArray, dstOffset, srcHost, ByteCount, "cuMemcpyHtoAAsync_v2", hStream, 1);
}

IVC_EXPORT CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                              size_t ByteCount, CUstream hStream)
{
    return HTOA(dstArray, dstOffset, srcHost, ByteCount, "cuMemcpyHtoAAsync_v2", per_thread(hStream), 1);
}

IVC_EXPORT CUresult cuMemcpyAtoHAsync_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                                         CUstream hStream)
{
    return ATOH(dstHost, srcArray, srcOffset, ByteCount, "cuMemcpyAtoHAsync_v2", hStream, 1);
}

IVC_EXPORT CUresult cuMemcpyAtoHAsync_v2_ptsz(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                                              CUstream hStream)
{
    return ATOH(dstHost, srcArray, srcOffset, ByteCount, "cuMemcpyAtoHAsync_v2", per_thread(hStream), 1);
}

/* ---- texture and surface objects ---- */

/* Bytes of one element (ArrayFormat.elementBytes on the server, the same rules); 0 unknown. */
static size_t element_bytes(CUarray_format format, unsigned channels)
{
    size_t base = 0;
    switch ((int)format) {
    case 0x01: case 0x08: base = 1; break;
    case 0x02: case 0x09: case 0x10: base = 2; break;
    case 0x03: case 0x0a: case 0x20: base = 4; break;
    default: break;
    }
    if (base != 0)
        return channels == 1 || channels == 2 || channels == 4 ? base * channels : 0;
    if ((int)format >= 0xc0 && (int)format <= 0xcb) {
        int k = ((int)format - 0xc0) % 6;
        unsigned count = k % 3 == 0 ? 1 : k % 3 == 1 ? 2 : 4;
        return channels == count ? (k < 3 ? 1 : 2) * (size_t)count : 0;
    }
    return (int)format == 0x50 && channels == 4 ? 4 : 0;
}

IVC_EXPORT CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                                      const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
    if (pTexObject == NULL)
        return ivc_null_argument("cuTexObjectCreate", "pTexObject");
    if (pResDesc == NULL)
        return ivc_null_argument("cuTexObjectCreate", "pResDesc");
    if (pTexDesc == NULL)
        return ivc_null_argument("cuTexObjectCreate", "pTexDesc");
    const CUDA_RESOURCE_DESC res = *pResDesc;
    CUDA_RESOURCE_VIEW_DESC view;
    memset(&view, 0, sizeof view);
    if (pResViewDesc != NULL)
        view = *pResViewDesc;
    uint32_t has_view = pResViewDesc != NULL;
    switch (res.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
        return ivc_tex_create_array(pTexObject, res.res.array.hArray, res.flags, *pTexDesc, view, has_view);
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        return ivc_tex_create_mipmapped(pTexObject, res.res.mipmap.hMipmappedArray, res.flags, *pTexDesc, view,
                                        has_view);
    case CU_RESOURCE_TYPE_LINEAR:
        return ivc_tex_create_linear(pTexObject, res.res.linear.devPtr, res.res.linear.sizeInBytes,
                                     res.res.linear.format, res.res.linear.numChannels, res.flags, *pTexDesc, view,
                                     has_view);
    case CU_RESOURCE_TYPE_PITCH2D: {
        /* the bytes it reads: (height-1)*pitch + width*element size (the server recomputes them) */
        size_t element = element_bytes(res.res.pitch2D.format, res.res.pitch2D.numChannels);
        size_t row, span;
        if (element == 0 || res.res.pitch2D.height == 0 ||
            __builtin_mul_overflow(res.res.pitch2D.width, element, &row) ||
            __builtin_mul_overflow(res.res.pitch2D.height - 1, res.res.pitch2D.pitchInBytes, &span) ||
            __builtin_add_overflow(span, row, &span))
            return CUDA_ERROR_INVALID_VALUE;
        return ivc_tex_create_pitch2d(pTexObject, res.res.pitch2D.devPtr, span, res.res.pitch2D.format,
                                      res.res.pitch2D.numChannels, res.res.pitch2D.width, res.res.pitch2D.height,
                                      res.res.pitch2D.pitchInBytes, res.flags, *pTexDesc, view, has_view);
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

IVC_EXPORT CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
    if (pSurfObject == NULL)
        return ivc_null_argument("cuSurfObjectCreate", "pSurfObject");
    if (pResDesc == NULL)
        return ivc_null_argument("cuSurfObjectCreate", "pResDesc");
    const CUDA_RESOURCE_DESC res = *pResDesc;
    if (res.resType != CU_RESOURCE_TYPE_ARRAY)
        return CUDA_ERROR_INVALID_VALUE;
    return ivc_surf_create(pSurfObject, res.res.array.hArray, res.flags);
}
