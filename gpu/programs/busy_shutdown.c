/* busy_shutdown: the guest side of gpu/busy-shutdown.sh (issue 13, finding 1c). The script SIGTERMs
 * the cuda-server while this program's worker is inside cuCtxSynchronize on a kernel that spins
 * SPIN seconds (argv[2], default 4). Before the fix the server unmapped the region after its 10 s
 * stop wait with the worker still using it, and the JVM crashed. This program only reports: it
 * prints `launched` once the kernel is queued, then the CUresult name of the synchronisation and of
 * one later small copy, and exits 0 whatever they were — the script judges them, because through
 * ivcuda a stopping server is the expected answer here, and natively there is none. */
#include "common.h"

enum { N = 4096, THREADS = 256 };

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    double spin_s = argc > 2 ? atof(argv[2]) : 4.0;
    if (!(spin_s > 0 && spin_s <= 60))
        die("the spin seconds (argv[2]) must be in (0, 60]");
    create_context(NULL);
    char *ptx = read_kernel(dir, "streams", "ptx", NULL);
    CUmodule module;
    CUfunction spin;
    CK(cuModuleLoadData(&module, ptx));
    CK(cuModuleGetFunction(&spin, module, "spin_then_fill"));
    free(ptx);
    CUdeviceptr out;
    CK(cuMemAlloc(&out, N * sizeof(int)));
    int value = 7, n = N;
    unsigned long long ns = (unsigned long long)(spin_s * 1e9);
    void *args[] = {&out, &value, &n, &ns};
    CK(cuLaunchKernel(spin, N / THREADS, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
    printf("launched a %.1f s kernel\n", spin_s);
    fflush(stdout); /* the script waits for this line before it stops the server */
    double t0 = now_seconds();
    CUresult sync = cuCtxSynchronize();
    printf("synchronize: %s\n", result_name(sync));
    printf("info: the synchronisation returned after %.2f s\n", now_seconds() - t0);
    fflush(stdout);
    static int host[N];
    CUresult copy = cuMemcpyDtoH(host, out, sizeof host);
    printf("after: cuMemcpyDtoH %s\n", result_name(copy));
    if (copy == CUDA_SUCCESS)
        printf("info: out[0] = %d (%d expected once the kernel ran)\n", host[0], value);
    fflush(stdout);
    return 0;
}
