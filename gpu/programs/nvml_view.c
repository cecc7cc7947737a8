/* nvml_view: NVML as a program in the VM sees it (issue 15, docs/sharing.md), next to CUDA's
 * view of the same device. It loads libnvidia-ml.so.1 by name (natively NVIDIA's; through ivcuda
 * the guest library beside our libcuda.so.1, found on LD_LIBRARY_PATH), finds the device CUDA
 * calls 0 by its PCI bus id, and prints its identity, NVML's answers and errors on compared lines;
 * figures that move (temperature, power, clocks, utilisation, free memory) and what legitimately
 * differs between the host and a VM (the device count, NvLink, the processes' pids) go on `info:`
 * lines. No nvml.h is needed: the few signatures are declared here. */
#include "common.h"

#include <dlfcn.h>
#include <unistd.h>

typedef int nvml_return;
typedef void *nvml_device;

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} pci_info;

typedef struct {
    unsigned long long total, free, used;
} memory_v1;

typedef struct {
    unsigned version;
    unsigned long long total, reserved, free, used;
} memory_v2;

typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} process_info;

static void *nvml;

static void *need(const char *name)
{
    void *f = dlsym(nvml, name);
    if (f == NULL) {
        printf("FAIL libnvidia-ml.so.1 has no %s\n", name);
        exit(1);
    }
    return f;
}

#define NVML(name, ...) ((nvml_return(*)(__VA_ARGS__))need(#name))

int main(void)
{
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    char cuda_bus[64], cuda_name[128];
    CK(cuDeviceGetPCIBusId(cuda_bus, sizeof cuda_bus, dev));
    CK(cuDeviceGetName(cuda_name, sizeof cuda_name, dev));
    CUuuid cu_uuid;
    CK(cuDeviceGetUuid(&cu_uuid, dev));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUdeviceptr held;
    CK(cuMemAlloc(&held, 64u << 20));
    size_t cuda_free = 0, cuda_total = 0;
    CK(cuMemGetInfo(&cuda_free, &cuda_total));

    nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (nvml == NULL) {
        printf("FAIL dlopen libnvidia-ml.so.1: %s\n", dlerror());
        return 1;
    }
    Dl_info where;
    if (dladdr(need("nvmlInit_v2"), &where) != 0)
        printf("info: NVML library %s\n", where.dli_fname);

    const char *(*error_string)(nvml_return) = (const char *(*)(nvml_return))need("nvmlErrorString");
    nvml_return r = NVML(nvmlInit_v2, void)();
    printf("nvmlInit_v2 -> %d (%s)\n", r, error_string(r));
    if (r != 0)
        return 1;

    char text[128];
    r = NVML(nvmlSystemGetDriverVersion, char *, unsigned)(text, sizeof text);
    printf("driver version -> %d: %s\n", r, r == 0 ? text : "");
    int cuda_version = 0, cuda_driver = 0;
    r = NVML(nvmlSystemGetCudaDriverVersion_v2, int *)(&cuda_version);
    CK(cuDriverGetVersion(&cuda_driver));
    printf("CUDA driver version -> %d: %d (cuDriverGetVersion %d)\n", r, cuda_version, cuda_driver);
    unsigned count = 0;
    r = NVML(nvmlDeviceGetCount_v2, unsigned *)(&count);
    printf("info: device count -> %d: %u\n", r, count);

    /* the device CUDA calls 0, by its bus id */
    nvml_device d = NULL;
    r = NVML(nvmlDeviceGetHandleByPciBusId_v2, const char *, nvml_device *)(cuda_bus, &d);
    printf("handle by CUDA's bus id -> %d\n", r);
    if (r != 0)
        return 1;
    r = NVML(nvmlDeviceGetName, nvml_device, char *, unsigned)(d, text, sizeof text);
    printf("name -> %d: %s (CUDA: %s)\n", r, r == 0 ? text : "", cuda_name);
    r = NVML(nvmlDeviceGetName, nvml_device, char *, unsigned)(d, text, 4);
    printf("name into 4 bytes -> %d (%s)\n", r, error_string(r));
    char uuid[96];
    r = NVML(nvmlDeviceGetUUID, nvml_device, char *, unsigned)(d, uuid, sizeof uuid);
    char cuda_uuid[64];
    const unsigned char *u = (const unsigned char *)cu_uuid.bytes;
    snprintf(cuda_uuid, sizeof cuda_uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    printf("uuid -> %d: %s, the same as CUDA's: %s\n", r, r == 0 ? uuid : "", strcmp(uuid, cuda_uuid) == 0 ? "yes" : "NO");
    nvml_device again = NULL;
    r = NVML(nvmlDeviceGetHandleByUUID, const char *, nvml_device *)(uuid, &again);
    printf("handle by uuid -> %d, the same handle: %s\n", r, again == d ? "yes" : "no");
    r = NVML(nvmlDeviceGetHandleByPciBusId_v2, const char *, nvml_device *)("0000:ff:1f.7", &again);
    printf("handle by a bus id that is no GPU's -> %d (%s)\n", r, error_string(r));
    pci_info pci;
    memset(&pci, 0, sizeof pci);
    r = NVML(nvmlDeviceGetPciInfo_v3, nvml_device, pci_info *)(d, &pci);
    printf("pci -> %d: %s legacy %s bus %u device %u id %08x subsystem %08x\n", r, pci.busId, pci.busIdLegacy, pci.bus,
           pci.device, pci.pciDeviceId, pci.pciSubSystemId);
    int major = 0, minor = 0;
    r = NVML(nvmlDeviceGetCudaComputeCapability, nvml_device, int *, int *)(d, &major, &minor);
    printf("compute capability -> %d: %d.%d\n", r, major, minor);
    unsigned value = 0;
    r = NVML(nvmlDeviceGetComputeMode, nvml_device, unsigned *)(d, &value);
    printf("compute mode -> %d: %u\n", r, value);
    r = NVML(nvmlDeviceGetPersistenceMode, nvml_device, unsigned *)(d, &value);
    printf("info: persistence mode -> %d: %u\n", r, value);
    r = NVML(nvmlDeviceGetMinorNumber, nvml_device, unsigned *)(d, &value);
    printf("info: minor number -> %d: %u\n", r, value);

    memory_v1 m1;
    r = NVML(nvmlDeviceGetMemoryInfo, nvml_device, memory_v1 *)(d, &m1);
    printf("memory -> %d: total %llu MiB\n", r, m1.total >> 20);
    printf("info: memory free %llu MiB used %llu MiB; CUDA: free %zu MiB total %zu MiB\n", m1.free >> 20, m1.used >> 20,
           cuda_free >> 20, cuda_total >> 20);
    memory_v2 m2;
    memset(&m2, 0, sizeof m2);
    r = NVML(nvmlDeviceGetMemoryInfo_v2, nvml_device, memory_v2 *)(d, &m2);
    printf("memory v2 without its version -> %d (%s)\n", r, error_string(r));
    m2.version = (unsigned)sizeof m2 | 2u << 24;
    r = NVML(nvmlDeviceGetMemoryInfo_v2, nvml_device, memory_v2 *)(d, &m2);
    printf("memory v2 -> %d: total %llu MiB\n", r, m2.total >> 20);
    printf("info: memory v2 reserved %llu MiB free %llu MiB used %llu MiB\n", m2.reserved >> 20, m2.free >> 20,
           m2.used >> 20);

    unsigned util[2] = {0, 0};
    r = NVML(nvmlDeviceGetUtilizationRates, nvml_device, unsigned *)(d, util);
    printf("utilization -> %d\n", r);
    printf("info: utilization gpu %u%% memory %u%%\n", util[0], util[1]);
    /* deprecated in newer NVML (nvmlDeviceGetTemperatureV): looked up without insisting */
    nvml_return (*temperature)(nvml_device, unsigned, unsigned *) =
        (nvml_return(*)(nvml_device, unsigned, unsigned *))dlsym(nvml, "nvmlDeviceGetTemperature");
    r = temperature != NULL ? temperature(d, 0, &value) : -1;
    printf("temperature -> %d\n", r);
    printf("info: temperature %u C\n", value);
    r = NVML(nvmlDeviceGetPowerUsage, nvml_device, unsigned *)(d, &value);
    printf("power -> %d\n", r);
    printf("info: power %u mW\n", value);
    for (unsigned type = 0; type < 3; type++) {
        unsigned clock = 0, max = 0;
        nvml_return a = NVML(nvmlDeviceGetClockInfo, nvml_device, unsigned, unsigned *)(d, type, &clock);
        nvml_return b = NVML(nvmlDeviceGetMaxClockInfo, nvml_device, unsigned, unsigned *)(d, type, &max);
        printf("clock %u -> %d, max -> %d: %u MHz\n", type, a, b, max);
        printf("info: clock %u now %u MHz\n", type, clock);
    }

    process_info procs[64];
    unsigned n = 64;
    r = NVML(nvmlDeviceGetComputeRunningProcesses_v3, nvml_device, unsigned *, process_info *)(d, &n, procs);
    printf("compute processes -> %d\n", r);
    int listed = 0;
    for (unsigned i = 0; r == 0 && i < n; i++) {
        printf("info: process %u: %llu MiB\n", procs[i].pid, procs[i].usedGpuMemory >> 20);
        listed |= procs[i].pid == (unsigned)getpid();
    }
    printf("info: this process (%d) listed: %s\n", (int)getpid(), listed ? "yes" : "no");
    nvml_return (*nvlink)(nvml_device, unsigned, unsigned *) =
        (nvml_return(*)(nvml_device, unsigned, unsigned *))dlsym(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType");
    r = nvlink != NULL ? nvlink(d, 0, &value) : -1;
    printf("info: NvLink 0 remote device type -> %d (%s)\n", r, nvlink != NULL ? error_string(r) : "not exported");

    /* an export table nobody knows: what the real library answers, ours must answer too */
    const void *table = (const void *)1;
    static const unsigned char unknown[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    nvml_return (*export_table)(const void **, const void *) =
        (nvml_return(*)(const void **, const void *))dlsym(nvml, "nvmlInternalGetExportTable");
    r = export_table != NULL ? export_table(&table, unknown) : -1;
    printf("nvmlInternalGetExportTable(unknown) -> %d, table %s\n", r, table == NULL ? "NULL" : table == (const void *)1 ? "untouched" : "set");

    r = NVML(nvmlShutdown, void)();
    printf("nvmlShutdown -> %d\n", r);
    r = NVML(nvmlDeviceGetCount_v2, unsigned *)(&count);
    printf("after shutdown, count -> %d (%s)\n", r, error_string(r));
    CK(cuMemFree(held));
    CK(cuDevicePrimaryCtxRelease(dev));
    printf("nvml_view done\n");
    return 0;
}
