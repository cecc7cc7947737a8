/* What strided.c offers other units: one CUDA_MEMCPY3D copy, any sides (arrays.c sends the 1D
 * array copies through it). */
#ifndef IVC_STRIDED_H
#define IVC_STRIDED_H

#include "ivc_cuda_types.h"

/* A 3D copy in the form of the call: stream NULL with async 0 the legacy-stream copy,
 * CU_STREAM_PER_THREAD the per-thread one; `function` names the caller in messages. */
CUresult ivc_strided_copy3d(const CUDA_MEMCPY3D *p, const char *function, CUstream stream, int async);

#endif
