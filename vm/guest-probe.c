/*
 * Runs inside the test guest: finds the ivshmem device by PCI scan (through the ivcuda
 * libcuda.so.1), and reports what the server answers. On a host without a GPU the
 * expected answers are a driver version and CUDA_ERROR_NO_DEVICE from cuInit.
 * Declares its own prototypes: it builds without NVIDIA's toolkit.
 */
#include <stdio.h>
#include <unistd.h>

typedef int CUresult;
CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuDeviceGetCount(int *count);
CUresult cuGetErrorName(CUresult error, const char **name);

static const char *name_of(CUresult r)
{
    const char *n = "?";
    cuGetErrorName(r, &n);
    return n;
}

int main(void)
{
    int version = 0, count = -1;
    /* the host test matches this pid against the server's hello line */
    printf("probe: pid=%d\n", (int)getpid());
    CUresult r = cuDriverGetVersion(&version);
    printf("probe: cuDriverGetVersion=%s version=%d\n", name_of(r), version);
    r = cuInit(0);
    printf("probe: cuInit=%s\n", name_of(r));
    if (r == 0) {
        r = cuDeviceGetCount(&count);
        printf("probe: cuDeviceGetCount=%s count=%d\n", name_of(r), count);
    }
    fflush(stdout);
    return 0;
}
