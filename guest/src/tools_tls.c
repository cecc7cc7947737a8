/* Export table 42d85a81, the tools TLS (24 bytes: size word + 2 slots). cuBLASLt calls slot 2
 * before its work (82 calls in one sgemm program, trace of driver 580: /work/.device/4 in the
 * session's notes, docs/export-tables.md) with a pointer as its first argument; the driver writes
 * one pointer there — the same heap address on every call of a thread — and answers 0. Refused,
 * cuBLAS answers CUBLAS_STATUS_NOT_SUPPORTED to every call (measured: matrixMulCUBLAS, PyTorch's
 * matmul through ivcuda). What the driver keeps behind that pointer is its per-thread state for
 * profiling tools; with no tool attached nothing sets it, so a zeroed block per thread stands in
 * for it. The block lives as long as the process: cuBLASLt may keep the pointer after the thread
 * that asked is gone. */
#include <stdint.h>
#include <stdlib.h>

#include "export_tables.h"
#include "ivc_internal.h"
#include "log.h"

/* Larger than any tools state the driver could hand out in its 24-byte table's world; only read. */
#define TOOLS_STATE_SIZE 4096

static _Thread_local void *thread_state;

CUresult ivc_tools_tls_slot2(void **state)
{
    if (state == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (thread_state == NULL) {
        thread_state = calloc(1, TOOLS_STATE_SIZE);
        if (thread_state == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *state = thread_state;
    ivc_trace("tools TLS slot 2 -> %p", thread_state);
    return CUDA_SUCCESS;
}
