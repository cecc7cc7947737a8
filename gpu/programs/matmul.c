/* matmul: a tiled shared-memory multiply of two 1024 x 1024 float matrices.
 * The inputs are multiples of 1/8 in [-1, 1], so every product and partial sum is
 * exact in float: the GPU result is deterministic and a sample of entries is
 * checked against the CPU in double precision. */
#include "common.h"
#include <math.h>

enum { N = 1024, TILE = 16, SAMPLES = 4096 };

static float value_a(int i) { return (float)((i * 7) % 17 - 8) / 8.0f; }
static float value_b(int i) { return (float)((i * 5) % 13 - 6) / 8.0f; }

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
    for (int i = 0; i < N * N; i++) {
        a[i] = value_a(i);
        b[i] = value_b(i);
    }
    CUdeviceptr da, db, dc;
    CK(cuMemAlloc(&da, bytes));
    CK(cuMemAlloc(&db, bytes));
    CK(cuMemAlloc(&dc, bytes));
    double t0 = now_seconds();
    CK(cuMemcpyHtoD(da, a, bytes));
    CK(cuMemcpyHtoD(db, b, bytes));
    int n = N;
    void *args[] = { &da, &db, &dc, &n };
    CK(cuLaunchKernel(fn, N / TILE, N / TILE, 1, TILE, TILE, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(c, dc, bytes));
    double t1 = now_seconds();

    /* A fixed pseudo-random sample plus the four corners. */
    int bad = 0;
    uint32_t state = 12345;
    for (int s = 0; s < SAMPLES; s++) {
        int row, col;
        if (s < 4) {
            row = (s & 1) ? N - 1 : 0;
            col = (s & 2) ? N - 1 : 0;
        } else {
            state = state * 1664525u + 1013904223u;
            row = (int)(state >> 8) % N;
            state = state * 1664525u + 1013904223u;
            col = (int)(state >> 8) % N;
        }
        double want = 0.0;
        for (int k = 0; k < N; k++) want += (double)a[row * N + k] * (double)b[k * N + col];
        double got = c[row * N + col];
        if (fabs(got - want) > 1e-3 * (1.0 + fabs(want))) {
            if (bad < 3) printf("mismatch row=%d col=%d got=%.6f want=%.6f\n", row, col, got, want);
            bad++;
        }
    }
    double sum = 0.0;
    for (int i = 0; i < N * N; i++) sum += c[i];
    printf("matmul n=%d samples=%d %s sum=%.3f checksum=%016llx\n", N, SAMPLES, bad ? "WRONG" : "ok", sum,
           (unsigned long long)fnv1a(c, bytes));
    printf("time: matmul upload+compute+download %.3f ms\n", (t1 - t0) * 1e3);
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
