/* What strided.c offers the graph code: a CUDA_MEMCPY3D reduced as the strided copies reduce
 * it, each side a start (offsets folded in), the span it touches, its pitch and rows a slice. */
#ifndef IVC_STRIDED_H
#define IVC_STRIDED_H

#include "ivc_internal.h"

struct ivc_copy_geometry {
    int dst_type, src_type; /* CU_MEMORYTYPE_HOST or CU_MEMORYTYPE_DEVICE */
    uint64_t dst, src;
    uint64_t dst_span, src_span;
    size_t dst_pitch, dst_rows, src_pitch, src_rows;
    size_t width, height, depth;
};

/* CUDA_SUCCESS and *g, or the refusal (an empty extent is refused: a node copies something). */
CUresult ivc_strided_geometry(const CUDA_MEMCPY3D *p, const char *function, struct ivc_copy_geometry *g);

#endif
