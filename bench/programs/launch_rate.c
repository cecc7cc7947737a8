/* launch_rate: asynchronous launches of an empty kernel, 100000 then one
 * cuStreamSynchronize; best of three rounds, in launches per second. */
#include "bench_util.h"

enum { LAUNCHES = 100000, ROUNDS = 3 };

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    char *ptx = read_kernel(dir, "bench", "ptx", NULL);
    CUmodule module;
    CUfunction fn;
    CK(cuModuleLoadData(&module, ptx));
    CK(cuModuleGetFunction(&fn, module, "empty_kernel"));
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    for (int i = 0; i < 1000; i++) CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
    CK(cuStreamSynchronize(stream));
    double best = 0.0, enqueue_of_best = 0.0;
    for (int round = 0; round < ROUNDS; round++) {
        double t0 = now_seconds();
        for (int i = 0; i < LAUNCHES; i++) CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
        double t1 = now_seconds();
        CK(cuStreamSynchronize(stream));
        double rate = LAUNCHES / (now_seconds() - t0);
        if (rate > best) {
            best = rate;
            enqueue_of_best = (t1 - t0) * 1e6 / LAUNCHES;
        }
    }
    printf("{\"bench\":\"launch_rate\",\"launches\":%d,\"launches_per_s\":%.0f,\"enqueue_us_per_launch\":%.3f}\n",
           LAUNCHES, best, enqueue_of_best);
    CK(cuStreamDestroy(stream));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(ptx);
    return 0;
}
