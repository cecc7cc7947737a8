/* matmul_e2e: a 4096 x 4096 float multiply end to end, as a program does it: upload
 * both matrices from pageable memory, run the tiled kernel, download the result.
 * Median of five after one warm-up; a few entries are checked so a broken run
 * cannot post a good time. */
#include "bench_util.h"
#include <math.h>

enum { N = 4096, TILE = 16, REPS = 5 };

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    char *ptx = read_kernel(dir, "matmul", "ptx", NULL);
    CUmodule module;
    CUfunction fn;
    CK(cuModuleLoadData(&module, ptx));
    CK(cuModuleGetFunction(&fn, module, "matmul"));
    size_t bytes = (size_t)N * N * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    if (!a || !b || !c) die("malloc");
    for (size_t i = 0; i < (size_t)N * N; i++) {
        a[i] = (float)((i * 7) % 17) / 8.0f - 1.0f;
        b[i] = (float)((i * 5) % 13) / 8.0f - 0.75f;
    }
    CUdeviceptr da, db, dc;
    CK(cuMemAlloc(&da, bytes));
    CK(cuMemAlloc(&db, bytes));
    CK(cuMemAlloc(&dc, bytes));
    double times[REPS], kernel_times[REPS];
    int n = N;
    void *args[] = { &da, &db, &dc, &n };
    for (int rep = -1; rep < REPS; rep++) {
        double t0 = now_seconds();
        CK(cuMemcpyHtoD(da, a, bytes));
        CK(cuMemcpyHtoD(db, b, bytes));
        double t1 = now_seconds();
        CK(cuLaunchKernel(fn, N / TILE, N / TILE, 1, TILE, TILE, 1, 0, NULL, args, NULL));
        CK(cuCtxSynchronize());
        double t2 = now_seconds();
        CK(cuMemcpyDtoH(c, dc, bytes));
        double t3 = now_seconds();
        if (rep >= 0) {
            times[rep] = (t3 - t0) * 1e3;
            kernel_times[rep] = (t2 - t1) * 1e3;
        }
    }
    int bad = 0;
    for (int s = 0; s < 16; s++) {
        int row = (s * 977) % N, col = (s * 1543) % N;
        double want = 0.0;
        for (int k = 0; k < N; k++) want += (double)a[(size_t)row * N + k] * b[(size_t)k * N + col];
        bad += fabs(c[(size_t)row * N + col] - want) > 1e-2 * (1.0 + fabs(want));
    }
    printf("{\"bench\":\"matmul_e2e\",\"n\":%d,\"reps\":%d,\"verified\":%s,\"median_ms\":%.3f,\"kernel_median_ms\":%.3f}\n",
           N, REPS, bad ? "false" : "true", percentile(times, REPS, 50), percentile(kernel_times, REPS, 50));
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuMemFree(dc));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(a);
    free(b);
    free(c);
    free(ptx);
    return bad ? 1 : 0;
}
