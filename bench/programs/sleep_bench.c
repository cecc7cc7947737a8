/* sleep_bench: NVBench-style. A <<<1,1>>> kernel spins 0..100 us (5 us steps) of
 * %globaltimer; each task is one cuLaunchKernel + cuStreamSynchronize. Reports the
 * median and p99 time per task per duration; the ivcuda - native difference is the
 * overhead per task. */
#include "bench_util.h"

enum { TASKS = 400, WARMUP = 40 };

static double samples[TASKS];

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    char *ptx = read_kernel(dir, "bench", "ptx", NULL);
    CUmodule module;
    CUfunction fn;
    CK(cuModuleLoadData(&module, ptx));
    CK(cuModuleGetFunction(&fn, module, "sleep_kernel"));
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    for (int us = 0; us <= 100; us += 5) {
        unsigned long long ns = (unsigned long long)us * 1000ULL;
        void *args[] = { &ns };
        for (int i = 0; i < WARMUP + TASKS; i++) {
            double t0 = now_seconds();
            CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
            CK(cuStreamSynchronize(stream));
            if (i >= WARMUP) samples[i - WARMUP] = (now_seconds() - t0) * 1e6;
        }
        double avg = mean(samples, TASKS);
        double p50 = percentile(samples, TASKS, 50), p99 = percentile(samples, TASKS, 99);
        printf("{\"bench\":\"sleep\",\"sleep_us\":%d,\"tasks\":%d,\"p50_us\":%.3f,\"p99_us\":%.3f,\"mean_us\":%.3f}\n",
               us, TASKS, p50, p99, avg);
    }
    CK(cuStreamDestroy(stream));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(ptx);
    return 0;
}
