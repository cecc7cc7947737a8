/* A kernel's function and the query-only limits are asked once per context, then answered in the
 * guest; a settable limit always goes to the server (context_answers.c). */
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"

static int asks(void)
{
    return atomic_load(&fake.per_context_asks);
}

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CUcontext first = (CUcontext)0x0100000100000009ULL, second = (CUcontext)0x010000010000000aULL;
    CHECK(cuCtxSetCurrent(first) == CUDA_SUCCESS);
    CUkernel kernel = (CUkernel)0x0300000100000100ULL;
    CUfunction f = NULL, again = NULL;
    int before = asks();
    CHECK(cuKernelGetFunction(&f, kernel) == CUDA_SUCCESS && f == (CUfunction)((uintptr_t)kernel + (uintptr_t)first));
    CHECK(cuKernelGetFunction(&again, kernel) == CUDA_SUCCESS && again == f && asks() == before + 1);
    CHECK(cuCtxSetCurrent(second) == CUDA_SUCCESS);
    CHECK(cuKernelGetFunction(&again, kernel) == CUDA_SUCCESS && asks() == before + 2); /* another context */
    CHECK(again == (CUfunction)((uintptr_t)kernel + (uintptr_t)second));

    size_t value = 0;
    before = asks();
    CHECK(cuCtxGetLimit(&value, 8) == CUDA_SUCCESS && value == 80); /* CU_LIMIT_CIG_ENABLED */
    CHECK(cuCtxGetLimit(&value, 8) == CUDA_SUCCESS && value == 80 && asks() == before + 1);
    CHECK(cuCtxGetLimit(&value, 2) == CUDA_SUCCESS && value == 20); /* MALLOC_HEAP_SIZE: settable */
    CHECK(cuCtxGetLimit(&value, 2) == CUDA_SUCCESS && asks() == before + 3);
    CHECK(cuCtxSetCurrent(first) == CUDA_SUCCESS);
    CHECK(cuCtxGetLimit(&value, 8) == CUDA_SUCCESS && asks() == before + 4); /* per context */
    unlink(path);
    return check_summary("test_context_answers");
}
