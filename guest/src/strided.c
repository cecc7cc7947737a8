/* Strided copies (cuMemcpy2D/3D, their peer, async and batch forms) and 2D memsets
 * (docs/memory.md). Each side of a copy is reduced to a start address (X/Y/Z offsets
 * folded in), a pitch and a slice height; the server gets the exact byte span the copy
 * touches from each start, checks it against the process's device memory or pool blocks
 * and recomputes it from the geometry. Host sides are guest memory: in the pool they
 * travel by offset, pageable ones packed (width bytes a row) inline in the request or
 * response, or row by row through memory.c's copies when a single row is too wide.
 * Arrays (CU_MEMORYTYPE_ARRAY) are not remoted yet: CUDA_ERROR_NOT_SUPPORTED. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "memory.h"
#include "strided.h"

struct side {
    int type; /* CU_MEMORYTYPE_HOST or CU_MEMORYTYPE_DEVICE */
    uint64_t start;
    size_t pitch;
    size_t rows; /* rows a slice */
};

struct strided {
    struct side dst, src;
    size_t width, height, depth;
};

/* a*b+c without wrapping; 0 when it would */
static int mul_add(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t product;
    if (__builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(product, c, out))
        return 0;
    return 1;
}

/* The bytes a side touches from its start (StridedCopyHandler.span, same rules): 0 when
 * impossible. */
static uint64_t side_span(const struct side *s, size_t width, size_t height, size_t depth)
{
    if ((height > 1 || depth > 1) && s->pitch < width)
        return 0;
    if (depth > 1 && s->rows < height)
        return 0;
    uint64_t slice = 0, span = 0;
    if (depth > 1 && !mul_add(s->pitch, s->rows, 0, &slice))
        return 0;
    if (!mul_add(depth - 1, slice, 0, &span) || !mul_add(height - 1, s->pitch, span, &span) ||
        !mul_add(1, span, width, &span))
        return 0;
    return span;
}

/* One side of a CUDA_MEMCPY3D(_PEER) or CUDA_MEMCPY2D: its type resolved (unified pointers
 * by the device map), its X/Y/Z offsets folded into the start. */
static CUresult make_side(struct side *s, const char *function, CUmemorytype type, const void *host,
                          CUdeviceptr device, size_t pitch, size_t rows, size_t x, size_t y, size_t z)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        s->type = CU_MEMORYTYPE_HOST;
        s->start = (uint64_t)(uintptr_t)host;
        break;
    case CU_MEMORYTYPE_DEVICE:
        s->type = CU_MEMORYTYPE_DEVICE;
        s->start = device;
        break;
    case CU_MEMORYTYPE_UNIFIED:
        s->type = ivc_memory_is_device(device) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        s->start = device;
        break;
    case CU_MEMORYTYPE_ARRAY:
        ivc_log("%s: CUDA arrays are not remoted by this ivcuda version (CUDA_ERROR_NOT_SUPPORTED)", function);
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (s->start == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t offset;
    uint64_t slice;
    if (!mul_add(pitch, rows, 0, &slice) || !mul_add(z, slice, x, &offset) || !mul_add(y, pitch, offset, &offset) ||
        __builtin_add_overflow(s->start, offset, &s->start))
        return CUDA_ERROR_INVALID_VALUE;
    s->pitch = pitch;
    s->rows = rows;
    return CUDA_SUCCESS;
}

/* The largest packed copy sent inline: the inline limit less room for the geometry. */
static size_t packed_limit(void)
{
    size_t limit = ivc_inline_limit();
    return limit > 256 ? limit - 256 : 0;
}

/* The host row (z, y) of a side. */
static void *host_row(const struct side *s, size_t y, size_t z)
{
    return (void *)(uintptr_t)(s->start + z * s->pitch * s->rows + y * s->pitch);
}

static CUdeviceptr device_row(const struct side *s, size_t y, size_t z)
{
    return s->start + z * s->pitch * s->rows + y * s->pitch;
}

/* One wide row through memory.c's copies, in the form (sync, per-thread, async) of the call. */
static CUresult row_htod(CUdeviceptr dst, const void *src, size_t n, CUstream stream, int async)
{
    if (async)
        return cuMemcpyHtoDAsync_v2(dst, src, n, stream);
    return stream == CU_STREAM_PER_THREAD ? cuMemcpyHtoD_v2_ptds(dst, src, n) : cuMemcpyHtoD_v2(dst, src, n);
}

static CUresult row_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream stream, int async)
{
    if (async)
        return cuMemcpyDtoHAsync_v2(dst, src, n, stream);
    return stream == CU_STREAM_PER_THREAD ? cuMemcpyDtoH_v2_ptds(dst, src, n) : cuMemcpyDtoH_v2(dst, src, n);
}

/* Pageable host → device: whole slices, or runs of rows, packed into inline requests;
 * rows wider than that one by one through cuMemcpyHtoD's paths (window). */
static CUresult htod_pageable(const struct strided *c, CUstream stream, int async)
{
    size_t limit = packed_limit();
    if (c->width > limit) {
        for (size_t z = 0; z < c->depth; z++) {
            for (size_t y = 0; y < c->height; y++) {
                CUresult r = row_htod(device_row(&c->dst, y, z), host_row(&c->src, y, z), c->width, stream, async);
                if (r != CUDA_SUCCESS)
                    return r;
            }
        }
        return CUDA_SUCCESS;
    }
    size_t slice = c->width * c->height; /* ≤ width·height of a span already checked */
    size_t rows_per = slice <= limit ? c->height : limit / c->width;
    size_t slices_per = slice <= limit ? limit / slice : 1;
    char *packed = malloc(slice <= limit ? slice * (slices_per < c->depth ? slices_per : c->depth) : rows_per * c->width);
    if (packed == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = CUDA_SUCCESS;
    for (size_t z = 0; z < c->depth && r == CUDA_SUCCESS; z += slices_per) {
        size_t nz = c->depth - z < slices_per ? c->depth - z : slices_per;
        for (size_t y = 0; y < c->height && r == CUDA_SUCCESS; y += rows_per) {
            size_t ny = c->height - y < rows_per ? c->height - y : rows_per;
            char *p = packed;
            for (size_t k = 0; k < nz; k++)
                for (size_t j = 0; j < ny; j++, p += c->width)
                    memcpy(p, host_row(&c->src, y + j, z + k), c->width);
            struct side d = c->dst;
            d.start = device_row(&c->dst, y, z);
            uint64_t span = side_span(&d, c->width, ny, nz);
            r = ivc_memcpy3d_htod_inline(d.start, span, d.pitch, d.rows, c->width, ny, nz, stream, packed,
                                         (size_t)(p - packed));
        }
    }
    free(packed);
    return r;
}

/* Device → pageable host: the mirror of htod_pageable. */
static CUresult dtoh_pageable(const struct strided *c, CUstream stream, int async)
{
    size_t limit = packed_limit();
    if (c->width > limit) {
        for (size_t z = 0; z < c->depth; z++) {
            for (size_t y = 0; y < c->height; y++) {
                CUresult r = row_dtoh(host_row(&c->dst, y, z), device_row(&c->src, y, z), c->width, stream, async);
                if (r != CUDA_SUCCESS)
                    return r;
            }
        }
        return CUDA_SUCCESS;
    }
    size_t slice = c->width * c->height;
    size_t rows_per = slice <= limit ? c->height : limit / c->width;
    size_t slices_per = slice <= limit ? limit / slice : 1;
    char *packed = malloc(slice <= limit ? slice * (slices_per < c->depth ? slices_per : c->depth) : rows_per * c->width);
    if (packed == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = CUDA_SUCCESS;
    for (size_t z = 0; z < c->depth && r == CUDA_SUCCESS; z += slices_per) {
        size_t nz = c->depth - z < slices_per ? c->depth - z : slices_per;
        for (size_t y = 0; y < c->height && r == CUDA_SUCCESS; y += rows_per) {
            size_t ny = c->height - y < rows_per ? c->height - y : rows_per;
            struct side s = c->src;
            s.start = device_row(&c->src, y, z);
            uint64_t span = side_span(&s, c->width, ny, nz);
            r = ivc_memcpy3d_dtoh_inline(s.start, span, s.pitch, s.rows, c->width, ny, nz, stream, packed,
                                         c->width * ny * nz);
            if (r != CUDA_SUCCESS)
                break;
            const char *p = packed;
            for (size_t k = 0; k < nz; k++)
                for (size_t j = 0; j < ny; j++, p += c->width)
                    memcpy(host_row(&c->dst, y + j, z + k), p, c->width);
        }
    }
    free(packed);
    return r;
}

static CUresult run(const struct strided *c, CUstream stream, int async)
{
    if (c->width == 0 || c->height == 0 || c->depth == 0)
        return CUDA_SUCCESS;
    uint64_t dst_span = side_span(&c->dst, c->width, c->height, c->depth);
    uint64_t src_span = side_span(&c->src, c->width, c->height, c->depth);
    if (dst_span == 0 || src_span == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ivc_need_region();
    if (r != CUDA_SUCCESS)
        return r;
    const struct side *d = &c->dst, *s = &c->src;
    if (d->type == CU_MEMORYTYPE_DEVICE && s->type == CU_MEMORYTYPE_DEVICE) {
        return async ? ivc_memcpy3d_dtod_async(d->start, dst_span, d->pitch, d->rows, s->start, src_span, s->pitch,
                                               s->rows, c->width, c->height, c->depth, stream)
                     : ivc_memcpy3d_dtod(d->start, dst_span, d->pitch, d->rows, s->start, src_span, s->pitch, s->rows,
                                         c->width, c->height, c->depth, stream);
    }
    if (d->type == CU_MEMORYTYPE_DEVICE) {
        const void *host = (const void *)(uintptr_t)s->start;
        if (ivc_in_pool(host, src_span)) {
            uint64_t offset = ivc_pool_offset(host);
            return async ? ivc_memcpy3d_htod_pool_async(d->start, dst_span, d->pitch, d->rows, offset, src_span,
                                                        s->pitch, s->rows, c->width, c->height, c->depth, stream)
                         : ivc_memcpy3d_htod_pool(d->start, dst_span, d->pitch, d->rows, offset, src_span, s->pitch,
                                                  s->rows, c->width, c->height, c->depth, stream);
        }
        return htod_pageable(c, stream, async);
    }
    if (s->type == CU_MEMORYTYPE_DEVICE) {
        void *host = (void *)(uintptr_t)d->start;
        if (ivc_in_pool(host, dst_span)) {
            uint64_t offset = ivc_pool_offset(host);
            return async ? ivc_memcpy3d_dtoh_pool_async(offset, dst_span, d->pitch, d->rows, s->start, src_span,
                                                        s->pitch, s->rows, c->width, c->height, c->depth, stream)
                         : ivc_memcpy3d_dtoh_pool(offset, dst_span, d->pitch, d->rows, s->start, src_span, s->pitch,
                                                  s->rows, c->width, c->height, c->depth, stream);
        }
        return dtoh_pageable(c, stream, async);
    }
    /* host to host: the driver copies these on the CPU too */
    for (size_t z = 0; z < c->depth; z++)
        for (size_t y = 0; y < c->height; y++)
            memmove(host_row(d, y, z), host_row(s, y, z), c->width);
    return CUDA_SUCCESS;
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, const char *function, CUstream stream, int async)
{
    if (p == NULL)
        return ivc_null_argument(function, "pCopy");
    struct strided c = {.width = p->WidthInBytes, .height = p->Height, .depth = 1};
    CUresult r = make_side(&c.src, function, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcPitch, p->Height,
                           p->srcXInBytes, p->srcY, 0);
    if (r == CUDA_SUCCESS)
        r = make_side(&c.dst, function, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstPitch, p->Height,
                      p->dstXInBytes, p->dstY, 0);
    return r == CUDA_SUCCESS ? run(&c, stream, async) : r;
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, const char *function, CUstream stream, int async)
{
    if (p == NULL)
        return ivc_null_argument(function, "pCopy");
    if (p->reserved0 != NULL || p->reserved1 != NULL || p->srcLOD != 0 || p->dstLOD != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct strided c = {.width = p->WidthInBytes, .height = p->Height, .depth = p->Depth};
    CUresult r = make_side(&c.src, function, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcPitch, p->srcHeight,
                           p->srcXInBytes, p->srcY, p->srcZ);
    if (r == CUDA_SUCCESS)
        r = make_side(&c.dst, function, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstPitch, p->dstHeight,
                      p->dstXInBytes, p->dstY, p->dstZ);
    return r == CUDA_SUCCESS ? run(&c, stream, async) : r;
}

/* One GPU per VM: both contexts of a peer copy are on it, and with unified addressing a
 * peer copy is the same copy as within one context (the contexts are dropped). */
static CUresult copy3d_peer(const CUDA_MEMCPY3D_PEER *p, const char *function, CUstream stream, int async)
{
    if (p == NULL)
        return ivc_null_argument(function, "pCopy");
    CUDA_MEMCPY3D c = {.srcXInBytes = p->srcXInBytes, .srcY = p->srcY, .srcZ = p->srcZ, .srcLOD = p->srcLOD,
                       .srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost, .srcDevice = p->srcDevice,
                       .srcArray = p->srcArray, .srcPitch = p->srcPitch, .srcHeight = p->srcHeight,
                       .dstXInBytes = p->dstXInBytes, .dstY = p->dstY, .dstZ = p->dstZ, .dstLOD = p->dstLOD,
                       .dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost, .dstDevice = p->dstDevice,
                       .dstArray = p->dstArray, .dstPitch = p->dstPitch, .dstHeight = p->dstHeight,
                       .WidthInBytes = p->WidthInBytes, .Height = p->Height, .Depth = p->Depth};
    return copy3d(&c, function, stream, async);
}

static CUstream per_thread(CUstream stream)
{
    return stream == NULL ? CU_STREAM_PER_THREAD : stream;
}

IVC_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, "cuMemcpy2D_v2", NULL, 0);
}

IVC_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, "cuMemcpy2D_v2", CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, "cuMemcpy2DUnaligned_v2", NULL, 0);
}

IVC_EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, "cuMemcpy2DUnaligned_v2", CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy2d(pCopy, "cuMemcpy2DAsync_v2", hStream, 1);
}

IVC_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy2d(pCopy, "cuMemcpy2DAsync_v2", per_thread(hStream), 1);
}

IVC_EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
    return copy3d(pCopy, "cuMemcpy3D_v2", NULL, 0);
}

IVC_EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
    return copy3d(pCopy, "cuMemcpy3D_v2", CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return copy3d(pCopy, "cuMemcpy3DAsync_v2", hStream, 1);
}

IVC_EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return copy3d(pCopy, "cuMemcpy3DAsync_v2", per_thread(hStream), 1);
}

IVC_EXPORT CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy)
{
    return copy3d_peer(pCopy, "cuMemcpy3DPeer", NULL, 0);
}

IVC_EXPORT CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy)
{
    return copy3d_peer(pCopy, "cuMemcpy3DPeer", CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return copy3d_peer(pCopy, "cuMemcpy3DPeerAsync", hStream, 1);
}

IVC_EXPORT CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return copy3d_peer(pCopy, "cuMemcpy3DPeerAsync", per_thread(hStream), 1);
}

/* ---- peer copies: one GPU per VM, so a device-to-device copy (see copy3d_peer) ---- */

static CUresult peer(CUcontext dst_ctx, CUcontext src_ctx)
{
    return dst_ctx == NULL || src_ctx == NULL ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                 CUcontext srcContext, size_t ByteCount)
{
    CUresult r = peer(dstContext, srcContext);
    return r == CUDA_SUCCESS ? cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount) : r;
}

IVC_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                      CUcontext srcContext, size_t ByteCount)
{
    CUresult r = peer(dstContext, srcContext);
    return r == CUDA_SUCCESS ? cuMemcpyDtoD_v2_ptds(dstDevice, srcDevice, ByteCount) : r;
}

IVC_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                      CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    CUresult r = peer(dstContext, srcContext);
    return r == CUDA_SUCCESS ? cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, hStream) : r;
}

IVC_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                           CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    CUresult r = peer(dstContext, srcContext);
    return r == CUDA_SUCCESS ? cuMemcpyDtoDAsync_v2_ptsz(dstDevice, srcDevice, ByteCount, hStream) : r;
}

/* ---- batches of 1D copies: each through cuMemcpyAsync's classification ---- */

static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
                      size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream stream, int ptsz)
{
    if (failIdx != NULL)
        *failIdx = SIZE_MAX;
    if (count == 0 || dsts == NULL || srcs == NULL || sizes == NULL || attrs == NULL || attrsIdxs == NULL ||
        numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t a = 0; a < numAttrs; a++) {
        if (attrs[a].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID ||
            attrs[a].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY || (a > 0 && attrsIdxs[a] <= attrsIdxs[a - 1]) ||
            attrsIdxs[a] >= count)
            return CUDA_ERROR_INVALID_VALUE;
    }
    /* pageable sources are read before each call returns, which every access order allows */
    for (size_t i = 0; i < count; i++) {
        CUresult r = ptsz ? cuMemcpyAsync_ptsz(dsts[i], srcs[i], sizes[i], stream)
                          : cuMemcpyAsync(dsts[i], srcs[i], sizes[i], stream);
        if (r != CUDA_SUCCESS) {
            if (failIdx != NULL)
                *failIdx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                          CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                          CUstream hStream)
{
    return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream, 0);
}

IVC_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                               CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                               CUstream hStream)
{
    return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, per_thread(hStream), 1);
}

IVC_EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                       CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                       size_t *failIdx, CUstream hStream)
{
    return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, 0);
}

IVC_EXPORT CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                            CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                            size_t *failIdx, CUstream hStream)
{
    return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, per_thread(hStream), 1);
}

/* ---- 2D memsets ---- */

static CUresult memset2d(CUdeviceptr dst, size_t pitch, unsigned value, unsigned element, size_t width,
                         size_t height, CUstream stream, int async)
{
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    uint64_t row, span;
    if (!mul_add(width, element, 0, &row) || (height > 1 && pitch < row) || !mul_add(height - 1, pitch, row, &span))
        return CUDA_ERROR_INVALID_VALUE;
    return async ? ivc_memset2d_async(dst, span, pitch, value, element, width, height, stream)
                 : ivc_memset2d(dst, span, pitch, value, element, width, height, stream);
}

IVC_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                    size_t Height)
{
    return memset2d(dstDevice, dstPitch, uc, 1, Width, Height, NULL, 0);
}

IVC_EXPORT CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                         size_t Height)
{
    return memset2d(dstDevice, dstPitch, uc, 1, Width, Height, CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                     size_t Height)
{
    return memset2d(dstDevice, dstPitch, us, 2, Width, Height, NULL, 0);
}

IVC_EXPORT CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                          size_t Height)
{
    return memset2d(dstDevice, dstPitch, us, 2, Width, Height, CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                     size_t Height)
{
    return memset2d(dstDevice, dstPitch, ui, 4, Width, Height, NULL, 0);
}

IVC_EXPORT CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                          size_t Height)
{
    return memset2d(dstDevice, dstPitch, ui, 4, Width, Height, CU_STREAM_PER_THREAD, 0);
}

IVC_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                      size_t Height, CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, uc, 1, Width, Height, hStream, 1);
}

IVC_EXPORT CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                           size_t Height, CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, uc, 1, Width, Height, per_thread(hStream), 1);
}

IVC_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                       size_t Height, CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, us, 2, Width, Height, hStream, 1);
}

IVC_EXPORT CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                            size_t Height, CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, us, 2, Width, Height, per_thread(hStream), 1);
}

IVC_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                       size_t Height, CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, ui, 4, Width, Height, hStream, 1);
}

IVC_EXPORT CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                            size_t Height, CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, ui, 4, Width, Height, per_thread(hStream), 1);
}

/* ---- for graph copy nodes (graphbuild.c) ---- */

CUresult ivc_strided_geometry(const CUDA_MEMCPY3D *p, const char *function, struct ivc_copy_geometry *g)
{
    if (p == NULL)
        return ivc_null_argument(function, "copyParams");
    if (p->reserved0 != NULL || p->reserved1 != NULL || p->srcLOD != 0 || p->dstLOD != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct strided c = {.width = p->WidthInBytes, .height = p->Height, .depth = p->Depth};
    CUresult r = make_side(&c.src, function, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcPitch, p->srcHeight,
                           p->srcXInBytes, p->srcY, p->srcZ);
    if (r == CUDA_SUCCESS)
        r = make_side(&c.dst, function, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstPitch, p->dstHeight,
                      p->dstXInBytes, p->dstY, p->dstZ);
    if (r != CUDA_SUCCESS)
        return r;
    if (c.width == 0 || c.height == 0 || c.depth == 0)
        return CUDA_ERROR_INVALID_VALUE;
    *g = (struct ivc_copy_geometry){.dst_type = c.dst.type, .dst = c.dst.start, .dst_pitch = c.dst.pitch,
                                    .dst_rows = c.dst.rows, .src_type = c.src.type, .src = c.src.start,
                                    .src_pitch = c.src.pitch, .src_rows = c.src.rows, .width = c.width,
                                    .height = c.height, .depth = c.depth};
    g->dst_span = side_span(&c.dst, c.width, c.height, c.depth);
    g->src_span = side_span(&c.src, c.width, c.height, c.depth);
    return g->dst_span == 0 || g->src_span == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
