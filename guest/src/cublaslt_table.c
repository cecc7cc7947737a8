/* Export table 21318c60 (744 bytes: size word + 92 slots), asked by cuBLASLt, cuBLAS and cuFFT.
 * The driver-580 trace (docs/export-tables.md, "21318c60") shows three slots called:
 *   - slot 4 (context, uint64_t *out, ...): before every cuLaunchKernelEx of cuBLASLt, and twice
 *     in cuFFT; in all 748 calls it wrote the 8-byte value 1 and returned 0. What it asks is
 *     not known (the arguments after out vary and look like leftover registers).
 *   - slot 51 (context, CUstream, void **out): by cuBLAS, after cuStreamGetCaptureInfo_v2 on the
 *     same stream (always 0 in the trace); writes a driver object whose words include the
 *     context: the stream's driver object.
 *   - slot 39 (context, that object, uint64_t *out): right after 51; wrote 7 for the default
 *     stream in both programs. Guessed: the stream's id (what cuStreamGetId answers), which
 *     cuBLAS 12+ keys its per-stream workspace by.
 * Guest contexts and streams are the server's ids, not driver pointers: the stream "object" is
 * the stream handle itself (CU_STREAM_LEGACY for 0, so that it is never NULL), and the id is
 * made in the guest from handle values, unique among live streams. */
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "export_tables.h"
#include "ivc_internal.h"
#include "log.h"

/* The guesses, said once at IVCUDA_DEBUG: a wrong one would show as a cuBLAS misbehaviour. */
static void guessed(atomic_int *said, const char *what)
{
    if (ivc_debug() && atomic_exchange(said, 1) == 0)
        ivc_log("export table asked by cuBLASLt (21318c60): %s is a guess from the driver trace "
                "(docs/export-tables.md)", what);
}

CUresult ivc_cublaslt_slot4(CUcontext context, uint64_t *out)
{
    static atomic_int said;
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *out = 1;
    guessed(&said, "slot 4 (always 1, meaning unknown)");
    ivc_trace("cuBLASLt table slot 4 (%p) -> 1", (void *)context);
    return CUDA_SUCCESS;
}

CUresult ivc_cublaslt_stream_object(CUcontext context, CUstream stream, void **out)
{
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *out = stream != NULL ? (void *)stream : (void *)CU_STREAM_LEGACY;
    ivc_trace("cuBLASLt table slot 51 (%p, %p) -> %p", (void *)context, (void *)stream, *out);
    return CUDA_SUCCESS;
}

CUresult ivc_cublaslt_stream_id(CUcontext context, void *object, uint64_t *out)
{
    static atomic_int said;
    if (out == NULL || object == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    /* Handles are kind << 56 | generation << 32 | index with kinds below 128: a stream's and a
     * context's never coincide, and bit 63 is never set. So the legacy default stream of each
     * context gets the context's value, the per-thread one bit 63 and the thread's id, every
     * other stream its handle. */
    uintptr_t handle = (uintptr_t)object;
    if (handle == (uintptr_t)CU_STREAM_LEGACY)
        *out = (uint64_t)(uintptr_t)context;
    else if (handle == (uintptr_t)CU_STREAM_PER_THREAD)
        *out = 1ULL << 63 | (uint32_t)gettid();
    else
        *out = (uint64_t)handle;
    guessed(&said, "slot 39 (the stream's id)");
    ivc_trace("cuBLASLt table slot 39 (%p, %p) -> %llu", (void *)context, object, (unsigned long long)*out);
    return CUDA_SUCCESS;
}
