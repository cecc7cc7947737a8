/* module_globals: a module's module-scope variables counted against the VM's memory quota (issue 15,
 * docs/sharing.md "Memory quota as the guest sees it"). Run by gpu/module-globals.sh natively and
 * through a server with memory.quota = QUOTA_MIB MiB.
 *
 *   module_globals KERNEL_DIR QUOTA_MIB
 *
 * module_globals.cu declares a 256 MiB __device__ array. For its cubin (cuModuleLoadData), fat binary
 * (cuModuleLoadFatBinary) and PTX (cuModuleLoadData, JIT-compiled) in turn: cuMemGetInfo's free before
 * the load, after it and after cuModuleUnload. With QUOTA_MIB > 0 (through ivcuda) then: the cubin
 * loaded and held, an allocation of what is left less 128 MiB, and a second load of the cubin, which
 * must be refused with CUDA_ERROR_OUT_OF_MEMORY; everything freed, free back where it started. Verdict:
 *   module_globals: PASS | FAIL <why>        (QUOTA_MIB > 0)
 *   module_globals: native (no verdict)      (QUOTA_MIB 0: what the driver itself shows, for reference)
 * PASS when every load lowers free by at least 256 MiB, every unload gives it back (within 1 MiB: the
 * driver's own pool figures may move), the load beyond the quota is refused with
 * CUDA_ERROR_OUT_OF_MEMORY, and free ends within 1 MiB of where it started. */
#include "common.h"

#define MIB_BYTES (1ull << 20)
#define BIG (256ull << 20)
#define SLACK MIB_BYTES

static size_t free_now(void)
{
    size_t free_b = 0, total = 0;
    CK(cuMemGetInfo(&free_b, &total));
    return free_b;
}

static double mib(long long bytes)
{
    return (double)bytes / (double)MIB_BYTES;
}

static long long llabs_(long long v)
{
    return v < 0 ? -v : v;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: module_globals KERNEL_DIR QUOTA_MIB\n");
        return 2;
    }
    const char *dir = argv[1];
    unsigned long long quota_mib = strtoull(argv[2], NULL, 10);
    char path[4096];
    const char *kinds[] = {"cubin", "fatbin", "ptx"};
    void *images[3];
    for (int i = 0; i < 3; i++) {
        size_t size;
        snprintf(path, sizeof path, "%s/module_globals.%s", dir, kinds[i]);
        images[i] = read_file(path, &size);
        if (images[i] == NULL)
            die(path);
    }
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    size_t total = 0, start = 0;
    CK(cuMemGetInfo(&start, &total));
    printf("info: total %.1f MiB, free at the start %.1f MiB\n", mib((long long)total), mib((long long)start));
    const char *why = NULL;
    for (int i = 0; i < 3; i++) {
        size_t before = free_now();
        CUmodule m;
        if (i == 1)
            CK(cuModuleLoadFatBinary(&m, images[i]));
        else
            CK(cuModuleLoadData(&m, images[i]));
        size_t loaded = free_now();
        CUdeviceptr big = 0;
        size_t big_size = 0;
        CUresult g = cuModuleGetGlobal(&big, &big_size, m, "module_globals_big");
        CK(cuModuleUnload(m));
        size_t after = free_now();
        long long fell = (long long)before - (long long)loaded;
        long long back = (long long)after - (long long)before;
        printf("%s: free fell by %s at the load and came back at the unload %s\n", kinds[i],
               fell >= (long long)BIG ? "at least 256 MiB" : "LESS than 256 MiB",
               llabs_(back) <= (long long)SLACK ? "within 1 MiB" : "NOT within 1 MiB");
        printf("info: %s: free %.1f -> %.1f -> %.1f MiB (load: -%.1f MiB); cuModuleGetGlobal: %s, %.1f MiB\n", kinds[i],
               mib((long long)before), mib((long long)loaded), mib((long long)after), mib(fell), result_name(g),
               mib((long long)big_size));
        if (why == NULL && fell < (long long)BIG)
            why = "a load lowered free by less than 256 MiB";
        if (why == NULL && llabs_(back) > (long long)SLACK)
            why = "an unload did not give the globals back";
    }
    if (quota_mib == 0) {
        printf("module_globals: native (no verdict)\n");
        return 0;
    }
    CUmodule held;
    CK(cuModuleLoadData(&held, images[0]));
    size_t left = free_now();
    CUdeviceptr fill = 0;
    size_t fill_size = left > 128 * MIB_BYTES ? left - 128 * MIB_BYTES : 0;
    if (fill_size > 0)
        CK(cuMemAlloc(&fill, fill_size));
    size_t before_refusal = free_now();
    CUmodule second;
    CUresult r = cuModuleLoadData(&second, images[0]);
    printf("load beyond the quota (%.1f MiB free, 256 MiB of globals): %s\n", mib((long long)before_refusal),
           result_name(r));
    if (r == CUDA_SUCCESS)
        CK(cuModuleUnload(second));
    if (why == NULL && r != CUDA_ERROR_OUT_OF_MEMORY)
        why = "the load beyond the quota was not refused with CUDA_ERROR_OUT_OF_MEMORY";
    if (why == NULL && free_now() != before_refusal)
        why = "the refused load changed free";
    if (fill != 0)
        CK(cuMemFree(fill));
    CK(cuModuleUnload(held));
    size_t end = free_now();
    printf("info: free at the end %.1f MiB (start %.1f MiB)\n", mib((long long)end), mib((long long)start));
    if (why == NULL && llabs_((long long)end - (long long)start) > (long long)SLACK)
        why = "free did not come back to where it started";
    if (why == NULL && quota_mib * MIB_BYTES != total)
        why = "cuMemGetInfo's total is not the quota";
    printf("module_globals: %s%s\n", why == NULL ? "PASS" : "FAIL ", why == NULL ? "" : why);
    return why == NULL ? 0 : 1;
}
