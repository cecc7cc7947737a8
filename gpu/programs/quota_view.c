/* quota_view: a VM's memory quota as a program in it sees and meets it (issue 15 acceptance,
 * docs/sharing.md "Memory quota as the guest sees it"). Run by gpu/sharing.sh through a server
 * with memory.quota = QUOTA_MIB MiB.
 *
 *   quota_view QUOTA_MIB HOLD_SECONDS
 *
 * Prints what CUDA (cuDeviceTotalMem, cuMemGetInfo) and NVML (nvmlDeviceGetMemoryInfo, through
 * the libnvidia-ml.so.1 beside the libcuda.so.1 in use) report as the total, then allocates 64 MiB
 * blocks until the first refusal and prints how much it got and what the refusal was; then holds
 * it all HOLD_SECONDS (so that another VM can allocate meanwhile) and frees it. The verdict line:
 *   quota: PASS | FAIL <why>
 * PASS when both totals are the quota, the blocks reached more than the quota less one block and
 * the context's own memory allowance (CONTEXT_SLACK_MIB, 256: the quota does not count it), never
 * more than the quota, and the refusal is CUDA_ERROR_OUT_OF_MEMORY. No nvml.h is needed: the few
 * signatures are declared here. */
#include "common.h"

#include <dlfcn.h>
#include <unistd.h>

#define BLOCK (64ull << 20)
#define CONTEXT_SLACK_MIB 256ull
#define MAX_BLOCKS 4096

typedef struct {
    unsigned long long total, free, used;
} memory_v1;

/* NVML's total for the device CUDA calls 0 (found by its bus id); 0 and a line saying why if none */
static unsigned long long nvml_total(CUdevice dev)
{
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (nvml == NULL) {
        printf("nvml: dlopen libnvidia-ml.so.1: %s\n", dlerror());
        return 0;
    }
    int (*init)(void) = (int (*)(void))dlsym(nvml, "nvmlInit_v2");
    int (*by_bus)(const char *, void **) = (int (*)(const char *, void **))dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2");
    int (*memory)(void *, memory_v1 *) = (int (*)(void *, memory_v1 *))dlsym(nvml, "nvmlDeviceGetMemoryInfo");
    if (init == NULL || by_bus == NULL || memory == NULL) {
        printf("nvml: a function is missing\n");
        return 0;
    }
    char bus[64];
    CK(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
    void *d = NULL;
    memory_v1 m = {0, 0, 0};
    int r = init();
    if (r == 0)
        r = by_bus(bus, &d);
    if (r == 0)
        r = memory(d, &m);
    if (r != 0) {
        printf("nvml: %d\n", r);
        return 0;
    }
    return m.total;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        printf("usage: quota_view QUOTA_MIB HOLD_SECONDS\n");
        return 2;
    }
    unsigned long long quota = strtoull(argv[1], NULL, 10) << 20;
    int hold = atoi(argv[2]);
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    size_t device_total = 0, free_bytes = 0, total = 0;
    CK(cuDeviceTotalMem(&device_total, dev));
    CK(cuMemGetInfo(&free_bytes, &total));
    unsigned long long nvml = nvml_total(dev);
    printf("totals: cuDeviceTotalMem %zu MiB, cuMemGetInfo %zu MiB (free %zu MiB), NVML %llu MiB; quota %llu MiB\n",
           device_total >> 20, total >> 20, free_bytes >> 20, nvml >> 20, quota >> 20);

    static CUdeviceptr blocks[MAX_BLOCKS];
    int n = 0;
    CUresult refusal = CUDA_SUCCESS;
    while (n < MAX_BLOCKS) {
        refusal = cuMemAlloc(&blocks[n], BLOCK);
        if (refusal != CUDA_SUCCESS)
            break;
        n++;
    }
    unsigned long long got = (unsigned long long)n * BLOCK;
    printf("allocated %llu MiB in 64 MiB blocks; the next one: %s\n", got >> 20, result_name(refusal));
    fflush(stdout);
    const char *why = NULL;
    if (device_total != quota || total != quota)
        why = "CUDA's total is not the quota";
    else if (nvml != quota)
        why = "NVML's total is not the quota";
    else if (refusal != CUDA_ERROR_OUT_OF_MEMORY)
        why = "the refusal is not CUDA_ERROR_OUT_OF_MEMORY";
    else if (got > quota)
        why = "more than the quota was allocated";
    else if (got + BLOCK + (CONTEXT_SLACK_MIB << 20) <= quota)
        why = "the allocations stopped well short of the quota";
    if (hold > 0) {
        printf("holding %llu MiB for %d s\n", got >> 20, hold);
        fflush(stdout);
        sleep((unsigned)hold);
    }
    for (int i = 0; i < n; i++)
        CK(cuMemFree(blocks[i]));
    if (why != NULL) {
        printf("quota: FAIL %s\n", why);
        return 1;
    }
    printf("quota: PASS\n");
    return 0;
}
