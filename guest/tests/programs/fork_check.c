/* fork_check [bytes]: the parent initialises CUDA and copies; a forked child, which
 * must get its own channel and server-side state, does the same; then the parent again.
 * Prints "ok" when all three round trips verified. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

static int round_trip(const char *who, size_t bytes, unsigned seed)
{
    CUresult r;
    CUdevice device;
    CUcontext context;
    if ((r = cuInit(0)) != CUDA_SUCCESS || (r = cuDeviceGet(&device, 0)) != CUDA_SUCCESS
        || (r = cuDevicePrimaryCtxRetain(&context, device)) != CUDA_SUCCESS
        || (r = cuCtxSetCurrent(context)) != CUDA_SUCCESS) {
        fprintf(stderr, "fork_check: %s: setup failed (%d)\n", who, r);
        return 1;
    }
    uint8_t *out = malloc(bytes), *back = calloc(1, bytes);
    for (size_t i = 0; i < bytes; i++)
        out[i] = (uint8_t)(i + seed);
    CUdeviceptr d = 0;
    int bad = (r = cuMemAlloc(&d, bytes)) != CUDA_SUCCESS || (r = cuMemcpyHtoD(d, out, bytes)) != CUDA_SUCCESS
              || (r = cuMemcpyDtoH(back, d, bytes)) != CUDA_SUCCESS || memcmp(out, back, bytes) != 0;
    if (bad)
        fprintf(stderr, "fork_check: %s: round trip failed (%d)\n", who, r);
    if (d != 0)
        cuMemFree(d);
    free(out);
    free(back);
    return bad;
}

int main(int argc, char **argv)
{
    size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 1 << 20;
    if (round_trip("parent", bytes, 1))
        return 1;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        exit(round_trip("child", bytes, 2)); /* exit, not _exit: the library says process_exit */
    int status = -1;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork_check: the child failed\n");
        return 1;
    }
    if (round_trip("parent after fork", bytes, 3))
        return 1;
    printf("ok\n");
    return 0;
}
