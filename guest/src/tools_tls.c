/* Export table 42d85a81, the tools TLS (24 bytes: size word + 2 slots). cuBLASLt calls slot 2
 * before its work (82 calls in one sgemm program) with a pointer as its first argument; driver
 * 580 writes one pointer there — the same on every call of a thread — and answers 0.
 *
 * That pointer is the thread's current context: cuBLASLt hands it on as the first argument of
 * slot 4 of table 21318c60, which the driver trace shows to be the value cuCtxGetCurrent gives
 * (0x3cd2dc40 in PyTorch's matmul on the H200, 2026-12-01). So slot 2 answers what
 * cuCtxGetCurrent answers, NULL included when no context is current. (Until 2026-12-01 it handed
 * out a stand-in block; PyTorch's bf16 GEMMs then failed with a NULL library, but that had another
 * cause: library.c, library options.) Refused altogether, cuBLAS answers
 * CUBLAS_STATUS_NOT_SUPPORTED to every call. */

#include "export_tables.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

CUresult ivc_tools_tls_slot2(void **state)
{
    if (state == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext current = NULL;
    CUresult r = cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS)
        return r;
    *state = (void *)current;
    ivc_trace("tools TLS slot 2 -> %p (the current context)", (void *)current);
    return CUDA_SUCCESS;
}
