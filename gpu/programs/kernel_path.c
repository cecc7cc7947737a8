/* kernel_path: the CUDA 12/13 kernel path as cudart uses it, and the launch extensions —
 * a library loaded from memory (fat binary) and from a file (cubin), CUkernels launched as
 * CUfunctions, a library global, the library's module, cuLaunchKernelEx with a cluster
 * dimension, a cooperative launch, a large (32000-byte) kernel parameter, the cluster and
 * shared-memory occupancy queries, the linker (PTX file to a cubin, loaded as a module), context
 * extensions and the one-device peer answers.
 * Every printed line is deterministic on one GPU, natively and through ivcuda. */
#include "common.h"

enum { N = 1000, THREADS = 128, CLUSTER_BLOCKS = 8, COOP_BLOCKS = 8, BIG = 8000 };

struct kp_big {
    unsigned v[BIG];
};

static CUkernel get_kernel(CUlibrary lib, const char *name)
{
    CUkernel k;
    CK(cuLibraryGetKernel(&k, lib, name));
    return k;
}

static void scale(CUlibrary lib)
{
    CUkernel k = get_kernel(lib, "kp_scale");
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)(i % 17);
    CUdeviceptr d;
    CK(cuMemAlloc(&d, sizeof host));
    CK(cuMemcpyHtoD(d, host, sizeof host));
    float s = 2.0f;
    int n = N;
    void *args[] = {&d, &s, &n};
    /* cudart's way: the CUkernel cast to a CUfunction */
    CK(cuLaunchKernel((CUfunction)k, (N + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(host, d, sizeof host));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += host[i] != (float)(i % 17) * 2.0f + (float)i;
    printf("library kernel kp_scale launched as a function: %s checksum=%016llx\n", bad ? "WRONG" : "ok",
           (unsigned long long)fnv1a(host, sizeof host));
    CK(cuMemFree(d));
    if (bad) exit(1);

    CUfunction f;
    CK(cuKernelGetFunction(&f, k));
    const char *name = NULL;
    CK(cuFuncGetName(&name, f));
    printf("cuKernelGetFunction: name=%s\n", name);
    int regs = -1;
    CK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    printf("kernel max threads per block via cuFuncGetAttribute: %d\n", regs);
    size_t offset = 0, size = 0;
    CK(cuKernelGetParamInfo(k, 1, &offset, &size));
    printf("kp_scale parameter 1: offset=%zu size=%zu\n", offset, size);
    CUlibrary back;
    CK(cuKernelGetLibrary(&back, k));
    printf("cuKernelGetLibrary: %s\n", back == lib ? "the same library" : "ANOTHER library");
}

static void global(CUlibrary lib)
{
    CUdeviceptr g;
    size_t bytes = 0;
    CK(cuLibraryGetGlobal(&g, &bytes, lib, "kp_counter"));
    int v = 40;
    void *args[] = {&v};
    CK(cuLaunchKernel((CUfunction)get_kernel(lib, "kp_fill_global"), 1, 1, 1, 4, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    int got[4] = {0};
    CK(cuMemcpyDtoH(got, g, sizeof got));
    printf("library global kp_counter: %zu bytes = %d %d %d %d\n", bytes, got[0], got[1], got[2], got[3]);
    if (got[3] != 43) die("library global");
}

static void module_of_library(CUlibrary lib)
{
    CUmodule m;
    CK(cuLibraryGetModule(&m, lib));
    CUfunction f;
    CK(cuModuleGetFunction(&f, m, "kp_fill_global"));
    int v = 7;
    void *args[] = {&v};
    CK(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    printf("the library's module: kp_fill_global found and launched\n");
}

static void cluster(CUlibrary lib)
{
    CUkernel k = get_kernel(lib, "kp_cluster_rank");
    CUdeviceptr d;
    CK(cuMemAlloc(&d, CLUSTER_BLOCKS * sizeof(unsigned)));
    CK(cuMemsetD8(d, 0xff, CLUSTER_BLOCKS * sizeof(unsigned)));
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = 2;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    CUlaunchConfig config;
    memset(&config, 0, sizeof config);
    config.gridDimX = CLUSTER_BLOCKS;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 32;
    config.blockDimY = config.blockDimZ = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
    void *args[] = {&d};
    CK(cuLaunchKernelEx(&config, (CUfunction)k, args, NULL));
    CK(cuCtxSynchronize());
    unsigned ranks[CLUSTER_BLOCKS];
    CK(cuMemcpyDtoH(ranks, d, sizeof ranks));
    printf("cuLaunchKernelEx with a 2x1x1 cluster: ranks");
    for (int i = 0; i < CLUSTER_BLOCKS; i++) printf(" %u", ranks[i]);
    printf("\n");
    int size = 0, active = 0;
    CK(cuOccupancyMaxPotentialClusterSize(&size, (CUfunction)k, &config));
    CK(cuOccupancyMaxActiveClusters(&active, (CUfunction)k, &config));
    printf("cluster occupancy: potential cluster size %d, active 2-block clusters %d\n", size, active);
    /* an unknown launch attribute is the driver's INVALID_VALUE natively and ivcuda's refusal */
    attr.id = 9999;
    CUresult r = cuLaunchKernelEx(&config, (CUfunction)k, args, NULL);
    if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
    printf("cuLaunchKernelEx with attribute 9999: %s\n", result_name(r));
    CK(cuMemFree(d));
}

static void cooperative(CUlibrary lib)
{
    CUkernel k = get_kernel(lib, "kp_grid_sum");
    CUdeviceptr out, arrived;
    CK(cuMemAlloc(&out, 2 * sizeof(unsigned)));
    CK(cuMemAlloc(&arrived, sizeof(unsigned)));
    CK(cuMemsetD8(out, 0, 2 * sizeof(unsigned)));
    CK(cuMemsetD8(arrived, 0, sizeof(unsigned)));
    void *args[] = {&out, &arrived};
    CK(cuLaunchCooperativeKernel((CUfunction)k, COOP_BLOCKS, 1, 1, 32, 1, 1, 0, NULL, args));
    CK(cuCtxSynchronize());
    unsigned got[2];
    CK(cuMemcpyDtoH(got, out, sizeof got));
    printf("cooperative launch of %d blocks: total %u, seen by block 0 after the grid barrier %u\n", COOP_BLOCKS, got[0],
           got[1]);
    if (got[1] != COOP_BLOCKS * (COOP_BLOCKS - 1) / 2) die("cooperative launch");
    CK(cuMemFree(out));
    CK(cuMemFree(arrived));
}

static void large_param(CUlibrary lib)
{
    static struct kp_big big;
    unsigned long long want = 0;
    for (int i = 0; i < BIG; i++) {
        big.v[i] = (unsigned)(i * 7 + 3);
        want += big.v[i];
    }
    CUdeviceptr out;
    CK(cuMemAlloc(&out, sizeof(unsigned long long)));
    void *args[] = {&big, &out};
    CK(cuLaunchKernel((CUfunction)get_kernel(lib, "kp_large_param"), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    unsigned long long got = 0;
    CK(cuMemcpyDtoH(&got, out, sizeof got));
    printf("a %zu-byte kernel parameter: sum %llu (%s)\n", sizeof big, got, got == want ? "ok" : "WRONG");
    if (got != want) exit(1);
    CK(cuMemFree(out));
}

/* ptxjit's pattern: link the kernels' PTX (a file) into a cubin, load it as a module, launch. */
static void linker(const char *dir)
{
    char info[1024] = "", error[1024] = "";
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {info, (void *)(uintptr_t)sizeof info, error, (void *)(uintptr_t)sizeof error};
    CUlinkState state;
    CK(cuLinkCreate(4, options, values, &state));
    char path[4096];
    snprintf(path, sizeof path, "%s/kernel_path.ptx", dir);
    CK(cuLinkAddFile(state, CU_JIT_INPUT_PTX, path, 0, NULL, NULL));
    void *cubin = NULL;
    size_t size = 0;
    CK(cuLinkComplete(state, &cubin, &size));
    const unsigned char *elf = cubin;
    printf("cuLinkComplete: %s image\n", size > 4 && elf[0] == 0x7f && elf[1] == 'E' ? "an ELF" : "NOT an ELF");
    CUmodule m;
    CK(cuModuleLoadData(&m, cubin));
    CK(cuLinkDestroy(state));
    CUfunction f;
    CK(cuModuleGetFunction(&f, m, "kp_fill_global"));
    int v = 100;
    void *args[] = {&v};
    CK(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    CUdeviceptr g;
    size_t bytes = 0;
    CK(cuModuleGetGlobal(&g, &bytes, m, "kp_counter"));
    int got[4] = {0};
    CK(cuMemcpyDtoH(got, g, sizeof got));
    printf("linked module: kp_counter = %d %d %d %d\n", got[0], got[1], got[2], got[3]);
    CK(cuModuleUnload(m));
}

static void contexts_and_peers(CUcontext ctx)
{
    unsigned long long id = 0;
    CK(cuCtxGetId(ctx, &id));
    printf("cuCtxGetId: %s\n", id != 0 ? "an id" : "zero");
    CUfunc_cache cache;
    CK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED));
    CK(cuCtxGetCacheConfig(&cache));
    printf("cuCtxGetCacheConfig after PREFER_SHARED: %d\n", (int)cache);
    CK(cuCtxResetPersistingL2Cache());
    CUevent e;
    CK(cuEventCreate(&e, 0));
    CK(cuCtxRecordEvent(ctx, e));
    CK(cuCtxWaitEvent(ctx, e));
    CK(cuEventSynchronize(e));
    CK(cuEventDestroy(e));
    printf("cuCtxRecordEvent / cuCtxWaitEvent: ok\n");
    int can = -1;
    CK(cuDeviceCanAccessPeer(&can, 0, 0));
    printf("cuDeviceCanAccessPeer(0, 0): %d\n", can);
    int value = -1;
    printf("cuDeviceGetP2PAttribute(0, 0): %s\n",
           result_name(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0)));
    printf("cuCtxEnablePeerAccess(own context): %s\n", result_name(cuCtxEnablePeerAccess(ctx, 0)));
    printf("cuCtxDisablePeerAccess(own context): %s\n", result_name(cuCtxDisablePeerAccess(ctx)));
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    void *fatbin = read_kernel(dir, "kernel_path", "fatbin", NULL);
    double t0 = now_seconds();

    CUlibrary lib;
    CK(cuLibraryLoadData(&lib, fatbin, NULL, NULL, 0, NULL, NULL, 0));
    unsigned count = 0;
    CK(cuLibraryGetKernelCount(&count, lib));
    printf("cuLibraryLoadData (fat binary): %u kernels\n", count);
    scale(lib);
    global(lib);
    module_of_library(lib);
    cluster(lib);
    cooperative(lib);
    large_param(lib);

    char path[4096];
    snprintf(path, sizeof path, "%s/kernel_path.cubin", dir);
    CUlibrary from_file;
    CK(cuLibraryLoadFromFile(&from_file, path, NULL, NULL, 0, NULL, NULL, 0));
    size_t smem = 0;
    CK(cuOccupancyAvailableDynamicSMemPerBlock(&smem, (CUfunction)get_kernel(from_file, "kp_scale"), 1, THREADS));
    printf("cuLibraryLoadFromFile (cubin): dynamic shared memory available to 1 block of %d: %zu\n", THREADS, smem);
    CK(cuLibraryUnload(from_file));

    linker(dir);
    contexts_and_peers(ctx);
    CK(cuLibraryUnload(lib));
    printf("info: time %.3f s\n", now_seconds() - t0);
    CK(cuCtxDestroy(ctx));
    printf("kernel_path PASSED\n");
    free(fatbin);
    return 0;
}
