/* Export table 263e8860, "context checks" (120 bytes: size word + 14 slots). cudart calls
 * slot 3 while it initialises and, per the public write-ups, slot 2 with a context
 * (docs/export-tables.md: both answers are to be confirmed by the GPU trace). */
#include "export_tables.h"
#include "ivc_internal.h"
#include "log.h"

/* Slot 2: (context, unsigned *first, const void **second). Measured (driver 580 on the H200,
 * PyTorch's CNN training: cudart, cuBLAS, cuBLASLt and cuDNN call it, 11 calls): the driver
 * writes 0 into *first (4 bytes) and leaves *second as the caller set it — a pointer of the
 * caller's own (e.g. 0x22eb1000) or 0. Overwriting it with NULL, as ivcuda did from the public
 * write-ups, took the callers' own value away from them. */
CUresult ivc_context_check(CUcontext context, unsigned *first, const void **second)
{
    (void)second;
    if (first != NULL)
        *first = 0;
    ivc_trace("context checks slot 2 (%p) -> 0, *second left as it was", (void *)context);
    return CUDA_SUCCESS;
}

/* Slot 3: cudart passes a pointer and 0x40 (measured with cudart 13.0); answering 0 without
 * touching them lets its initialisation go on. */
CUresult ivc_context_check3(void *buffer, size_t size)
{
    ivc_trace("context checks slot 3 (%p, %zu) -> 0", buffer, size);
    return CUDA_SUCCESS;
}
