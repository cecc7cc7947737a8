/*
 * One guest program whose synchronisation answers a fatal GPU fault (CUDA_ERROR_ILLEGAL_ADDRESS),
 * for the server's recovery (docs/architecture.md, "Fault recovery"). The host-memory backend
 * runs no kernels and never faults: run.sh arms its test-only trigger (IVCUDA_HOST_MEMORY_FAULT,
 * a file the backend removes when it answers one cuCtxSynchronize with 700), so the server's real
 * path, poisoning to re-exec, runs without a GPU. Exits 0 when the fault came and the program
 * left as a program does (exit: the library says ivc_process_exit).
 */
#include "check.h"

/* cuda.h CUDA_ERROR_ILLEGAL_ADDRESS (this library answers it as the server sends it) */
#define ILLEGAL_ADDRESS 700

int main(void)
{
    CUdevice dev = xlang_device();
    xlang_primary_context(dev);
    CUresult r = cuCtxSynchronize();
    expect(r == ILLEGAL_ADDRESS, "cuCtxSynchronize answers the fault (700)");
    return xlang_report("fault");
}
