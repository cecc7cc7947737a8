/* quota_view: a VM's memory quota as a program in it sees and meets it (issue 15 acceptance,
 * docs/sharing.md "Memory quota as the guest sees it"). Run by gpu/sharing.sh through a server
 * with memory.quota = QUOTA_MIB MiB, and natively as an MPS client with the VM's share and
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = the quota (what MPS alone leaves a process: the yardstick).
 *
 *   quota_view QUOTA_MIB HOLD_SECONDS [MIN_MIB]
 *
 * Prints what CUDA (cuDeviceTotalMem, cuMemGetInfo) and NVML (nvmlDeviceGetMemoryInfo, through
 * the libnvidia-ml.so.1 beside the libcuda.so.1 in use) report as the total; then the breakdown
 * of what is already taken before the first allocation ("start:"): through ivcuda NVML's used is
 * what the server counts against the quota (the VM's allocations and the driver's pool and graph
 * cache) and NVML's free is the quota less that (NVML's card figures are the whole card's), while
 * CUDA's free is also bounded by the driver's own free of the server process (under MPS with a
 * pinned-memory limit: the limit less all the process holds, its contexts included) — so CUDA's
 * free below NVML's says that the driver's figure binds, not the quota. Then it allocates 64 MiB
 * blocks (at most the quota and 16 blocks more) until the first refusal, prints how much it got,
 * what the refusal was and the same breakdown at the refusal ("at the refusal:"); holds it all
 * HOLD_SECONDS (so that another VM can allocate meanwhile) and frees it. The verdict line:
 *   quota: PASS | FAIL <why>
 * PASS when both totals are the quota, the refusal is CUDA_ERROR_OUT_OF_MEMORY, never more than the
 * quota was allocated and more than MIN_MIB MiB (default: the quota less one block and
 * CONTEXT_SLACK_MIB, 256, for the context's own memory, which the quota does not count but MPS's
 * pinned-memory limit does). No nvml.h is needed: the few signatures are declared here. */
#include "common.h"

#include <dlfcn.h>
#include <unistd.h>

#define BLOCK (64ull << 20)
#define CONTEXT_SLACK_MIB 256ull
#define MAX_BLOCKS 4096
#define MIB(x) ((unsigned long long)(x) >> 20)

typedef struct {
    unsigned long long total, free, used;
} memory_v1;

/* NVML's memory figures for the device CUDA calls 0 (found by its bus id); all 0 and a line saying
 * why if none. The library is opened once (a failure is said once). */
static memory_v1 nvml_memory(CUdevice dev)
{
    static void *nvml;
    static int (*by_bus)(const char *, void **);
    static int (*memory)(void *, memory_v1 *);
    static int tried;
    memory_v1 m = {0, 0, 0};
    if (!tried) {
        tried = 1;
        nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (nvml == NULL) {
            printf("nvml: dlopen libnvidia-ml.so.1: %s\n", dlerror());
            return m;
        }
        int (*init)(void) = (int (*)(void))dlsym(nvml, "nvmlInit_v2");
        by_bus = (int (*)(const char *, void **))dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2");
        memory = (int (*)(void *, memory_v1 *))dlsym(nvml, "nvmlDeviceGetMemoryInfo");
        if (init == NULL || by_bus == NULL || memory == NULL) {
            printf("nvml: a function is missing\n");
            memory = NULL;
            return m;
        }
        int r = init();
        if (r != 0) {
            printf("nvml: nvmlInit_v2 %d\n", r);
            memory = NULL;
            return m;
        }
    }
    if (memory == NULL)
        return m;
    char bus[64];
    CK(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
    void *d = NULL;
    int r = by_bus(bus, &d);
    if (r == 0)
        r = memory(d, &m);
    if (r != 0) {
        printf("nvml: %d\n", r);
        m = (memory_v1){0, 0, 0};
    }
    return m;
}

/* What is taken now, as CUDA and NVML say: the breakdown gpu/sharing.sh prints (header above). */
static void breakdown(const char *when, CUdevice dev, unsigned long long quota)
{
    size_t free_bytes = 0, total = 0;
    CUresult r = cuMemGetInfo(&free_bytes, &total);
    memory_v1 m = nvml_memory(dev);
    unsigned long long counted_left = quota > m.used ? quota - m.used : 0;
    printf("%s cuMemGetInfo %s free %llu MiB; NVML free %llu MiB used %llu MiB (through ivcuda: what the server "
           "counts against the quota); quota less NVML used %llu MiB; CUDA free below it by %lld MiB (the driver's "
           "own free binds: %s)\n",
           when, result_name(r), MIB(free_bytes), MIB(m.free), MIB(m.used), MIB(counted_left),
           (long long)MIB(counted_left) - (long long)MIB(free_bytes), free_bytes < counted_left ? "yes" : "no");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        printf("usage: quota_view QUOTA_MIB HOLD_SECONDS [MIN_MIB]\n");
        return 2;
    }
    unsigned long long quota = strtoull(argv[1], NULL, 10) << 20;
    int hold = atoi(argv[2]);
    unsigned long long at_least = quota > BLOCK + (CONTEXT_SLACK_MIB << 20) ? quota - BLOCK - (CONTEXT_SLACK_MIB << 20) : 0;
    if (argc == 4)
        at_least = strtoull(argv[3], NULL, 10) << 20;
    /* bounded: a driver that does not hold the process to the quota (a native run without MPS) is
     * not filled */
    unsigned long long limit_blocks = quota / BLOCK + 16;
    int max_blocks = limit_blocks < MAX_BLOCKS ? (int)limit_blocks : MAX_BLOCKS;
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    size_t device_total = 0, free_bytes = 0, total = 0;
    CK(cuDeviceTotalMem(&device_total, dev));
    CK(cuMemGetInfo(&free_bytes, &total));
    unsigned long long nvml = nvml_memory(dev).total;
    printf("totals: cuDeviceTotalMem %zu MiB, cuMemGetInfo %zu MiB (free %zu MiB), NVML %llu MiB; quota %llu MiB\n",
           device_total >> 20, total >> 20, free_bytes >> 20, MIB(nvml), MIB(quota));
    breakdown("start:", dev, quota);

    static CUdeviceptr blocks[MAX_BLOCKS];
    int n = 0;
    CUresult refusal = CUDA_SUCCESS;
    while (n < max_blocks) {
        refusal = cuMemAlloc(&blocks[n], BLOCK);
        if (refusal != CUDA_SUCCESS)
            break;
        n++;
    }
    unsigned long long got = (unsigned long long)n * BLOCK;
    printf("allocated %llu MiB in 64 MiB blocks; the next one: %s\n", MIB(got), result_name(refusal));
    breakdown("at the refusal:", dev, quota);
    const char *why = NULL;
    if (device_total != quota || total != quota)
        why = "CUDA's total is not the quota";
    else if (nvml != quota)
        why = "NVML's total is not the quota";
    else if (refusal != CUDA_ERROR_OUT_OF_MEMORY)
        why = "the refusal is not CUDA_ERROR_OUT_OF_MEMORY";
    else if (got > quota)
        why = "more than the quota was allocated";
    else if (got <= at_least)
        why = "the allocations stopped short of the least expected";
    printf("least expected: more than %llu MiB\n", MIB(at_least));
    if (hold > 0) {
        printf("holding %llu MiB for %d s\n", MIB(got), hold);
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
