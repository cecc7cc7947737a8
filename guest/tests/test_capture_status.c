/* cuStreamIsCapturing of the default streams is answered in the guest while no capture this
 * process began runs; other streams, and any stream while a capture runs, ask the server. */
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CUcontext current = NULL;
    CHECK(cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != NULL);
    int status = 7, asks = atomic_load(&fake.is_capturing_asks);
    CHECK(cuStreamIsCapturing(NULL, &status) == CUDA_SUCCESS && status == 0);
    CHECK(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &status) == CUDA_SUCCESS && status == 0);
    CHECK(atomic_load(&fake.is_capturing_asks) == asks); /* answered here */
    CUstream mine = (CUstream)0x0400000100000002ULL;
    CHECK(cuStreamIsCapturing(mine, &status) == CUDA_SUCCESS && atomic_load(&fake.is_capturing_asks) == asks + 1);

    CHECK(cuStreamBeginCapture_v2(mine, 0) == CUDA_SUCCESS);
    CHECK(cuStreamIsCapturing(NULL, &status) == CUDA_SUCCESS && status == 1); /* the server's answer */
    CHECK(atomic_load(&fake.is_capturing_asks) == asks + 2);
    CUgraph graph = NULL;
    CHECK(cuStreamEndCapture(mine, &graph) == CUDA_SUCCESS);
    CHECK(cuStreamIsCapturing(NULL, &status) == CUDA_SUCCESS && status == 0);
    CHECK(atomic_load(&fake.is_capturing_asks) == asks + 2); /* here again */
    CHECK(cuStreamIsCapturing(NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    unlink(path);
    return check_summary("test_capture_status");
}
