/* exit_teardown_check: an exit handler registered before the first CUDA call (as cudart
 * registers its teardown) runs after the library's ivc_process_exit and still calls the
 * driver. The server is freeing the process by then: the calls must answer
 * CUDA_ERROR_DEINITIALIZED without a new hello (which the server refuses, with a line on
 * stderr). Prints "ok" from that handler when they did. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda.h>

static CUdeviceptr block;

static void teardown(void)
{
    CUdeviceptr more = 0;
    CUresult freed = cuMemFree(block);
    CUresult allocated = cuMemAlloc(&more, 4096);
    if (freed == CUDA_ERROR_DEINITIALIZED && allocated == CUDA_ERROR_DEINITIALIZED)
        printf("ok\n");
    else
        printf("exit_teardown_check: after exit: cuMemFree %d, cuMemAlloc %d (expected %d)\n", freed, allocated,
               CUDA_ERROR_DEINITIALIZED);
    fflush(stdout);
}

int main(void)
{
    atexit(teardown);
    CUdevice device;
    CUcontext context;
    CUresult r;
    if ((r = cuInit(0)) != CUDA_SUCCESS || (r = cuDeviceGet(&device, 0)) != CUDA_SUCCESS
        || (r = cuDevicePrimaryCtxRetain(&context, device)) != CUDA_SUCCESS
        || (r = cuCtxSetCurrent(context)) != CUDA_SUCCESS || (r = cuMemAlloc(&block, 1 << 20)) != CUDA_SUCCESS) {
        fprintf(stderr, "exit_teardown_check: setup failed (%d)\n", r);
        return 1;
    }
    return 0; /* exit: the library's handler first (registered later), then teardown */
}
