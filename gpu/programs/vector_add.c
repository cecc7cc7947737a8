/* vector_add: the same kernel loaded four ways (PTX and cubin through
 * cuModuleLoadData, a fat binary through cuModuleLoadFatBinary) and launched with
 * kernelParams and with the `extra` parameter buffer; each result is checked
 * against the CPU. */
#include "common.h"

enum { THREADS = 256 };

struct vector_add_params {  /* the kernel's parameter buffer: offsets 0, 8, 16, 24 */
    CUdeviceptr a, b, c;
    int n;
} __attribute__((packed));

static void run_variant(CUmodule module, const char *variant, int n, int use_extra)
{
    CUfunction fn;
    CK(cuModuleGetFunction(&fn, module, "vector_add"));

    size_t bytes = (size_t)n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    if (!a || !b || !c) die("malloc");
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i % 1000) * 0.5f;
        b[i] = (float)(i % 777) * 0.25f;
        c[i] = -1.0f;
    }
    CUdeviceptr da, db, dc;
    CK(cuMemAlloc(&da, bytes));
    CK(cuMemAlloc(&db, bytes));
    CK(cuMemAlloc(&dc, bytes));
    CK(cuMemcpyHtoD(da, a, bytes));
    CK(cuMemcpyHtoD(db, b, bytes));
    CK(cuMemsetD8(dc, 0xff, bytes));

    unsigned grid = (unsigned)((n + THREADS - 1) / THREADS);
    if (use_extra) {
        struct vector_add_params params = { da, db, dc, n };
        size_t params_size = sizeof params;
        void *extra[] = {
            CU_LAUNCH_PARAM_BUFFER_POINTER, &params,
            CU_LAUNCH_PARAM_BUFFER_SIZE, &params_size,
            CU_LAUNCH_PARAM_END
        };
        CK(cuLaunchKernel(fn, grid, 1, 1, THREADS, 1, 1, 0, NULL, NULL, extra));
    } else {
        void *args[] = { &da, &db, &dc, &n };
        CK(cuLaunchKernel(fn, grid, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
    }
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(c, dc, bytes));

    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (c[i] != a[i] + b[i]) {
            if (bad < 3) printf("mismatch variant=%s i=%d got=%g want=%g\n", variant, i, c[i], a[i] + b[i]);
            bad++;
        }
    }
    printf("vector_add variant=%s n=%d %s checksum=%016llx\n", variant, n, bad ? "WRONG" : "ok",
           (unsigned long long)fnv1a(c, bytes));
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuMemFree(dc));
    free(a);
    free(b);
    free(c);
    if (bad) exit(1);
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);

    char *ptx = read_kernel(dir, "vector_add", "ptx", NULL);
    void *cubin = read_kernel(dir, "vector_add", "cubin", NULL);
    void *fatbin = read_kernel(dir, "vector_add", "fatbin", NULL);
    double t0 = now_seconds();

    CUmodule m_ptx, m_cubin, m_fatbin;
    CK(cuModuleLoadData(&m_ptx, ptx));
    CK(cuModuleLoadData(&m_cubin, cubin));
    CK(cuModuleLoadFatBinary(&m_fatbin, fatbin));

    run_variant(m_ptx, "ptx", 1 << 20, 0);
    run_variant(m_ptx, "ptx-odd", 1000003, 0);
    run_variant(m_cubin, "cubin", 1 << 20, 0);
    run_variant(m_fatbin, "fatbin", 1 << 20, 0);
    run_variant(m_ptx, "ptx-extra", 1 << 20, 1);
    run_variant(m_cubin, "cubin-extra", 12345, 1);

    /* A module's global through cuMemcpy, which must tell its address from a host one. */
    CUdeviceptr bias;
    size_t bias_size = 0;
    CK(cuModuleGetGlobal(&bias, &bias_size, m_cubin, "vector_add_bias"));
    float bias_in[4] = {1.5f, -2.0f, 3.25f, 4.0f}, bias_out[4] = {0}, bias_back[4] = {0};
    CK(cuMemcpy(bias, (CUdeviceptr)(uintptr_t)bias_in, sizeof bias_in));
    CK(cuMemcpyDtoH(bias_out, bias, sizeof bias_out));
    CK(cuMemcpy((CUdeviceptr)(uintptr_t)bias_back, bias, sizeof bias_back));
    int bias_ok = memcmp(bias_in, bias_out, sizeof bias_in) == 0 && memcmp(bias_in, bias_back, sizeof bias_in) == 0;
    printf("global vector_add_bias: %zu bytes, cuMemcpy both ways %s\n", bias_size, bias_ok ? "ok" : "MISMATCH");
    if (!bias_ok) exit(1);

    /* Loading the same image twice gives two working modules. */
    CUmodule m_again;
    CK(cuModuleLoadData(&m_again, ptx));
    run_variant(m_again, "ptx-reloaded", 4096, 0);
    CK(cuModuleUnload(m_again));

    CK(cuModuleUnload(m_ptx));
    CK(cuModuleUnload(m_cubin));
    CK(cuModuleUnload(m_fatbin));
    printf("time: vector_add %.3f ms\n", (now_seconds() - t0) * 1e3);
    CK(cuCtxDestroy(ctx));
    free(ptx);
    free(cubin);
    free(fatbin);
    printf("vector_add done\n");
    return 0;
}
