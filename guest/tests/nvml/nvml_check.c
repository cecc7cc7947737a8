/* nvml_check [fail]: the guest libnvidia-ml.so.1 end to end against fake_serve (run_programs.sh),
 * through the guest libcuda.so.1's transport. Prints "ok" when every answer is as the fake server
 * and NVML's contract say; else the first difference. `fail`: no server is reachable, and
 * nvmlInit must say the driver is not loaded (and everything else that NVML is uninitialised). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "nvml_types.h"

nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlInternalGetExportTable(const void **table, const void *id);

static int failures;

#define EXPECT(cond, ...)                                                                           \
    do {                                                                                            \
        if (!(cond) && failures++ == 0) {                                                           \
            printf("line %d: ", __LINE__);                                                          \
            printf(__VA_ARGS__);                                                                    \
            printf("\n");                                                                           \
        }                                                                                           \
    } while (0)

#define EXPECT_R(call, want)                                                                        \
    do {                                                                                            \
        nvmlReturn_t r_ = (call);                                                                   \
        EXPECT(r_ == (want), "%s -> %d (%s), expected %d", #call, r_, nvmlErrorString(r_), (want)); \
    } while (0)

static int unreachable(void)
{
    nvmlDevice_t d = NULL;
    unsigned count = 7;
    EXPECT_R(nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
    EXPECT_R(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    EXPECT_R(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_UNINITIALIZED);
    EXPECT_R(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    if (failures == 0)
        printf("ok\n");
    return failures != 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "fail") == 0)
        return unreachable();

    nvmlDevice_t d = NULL;
    unsigned count = 0;
    EXPECT_R(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    EXPECT_R(nvmlInit_v2(), NVML_SUCCESS);
    EXPECT_R(nvmlInit(), NVML_SUCCESS); /* counted: two shutdowns end it */
    EXPECT_R(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    EXPECT(count == 1, "count %u", count);

    char text[96];
    EXPECT_R(nvmlSystemGetDriverVersion(text, sizeof text), NVML_SUCCESS);
    EXPECT(strcmp(text, "580.00.01") == 0, "driver version '%s'", text);
    EXPECT_R(nvmlSystemGetNVMLVersion(text, 4), NVML_ERROR_INSUFFICIENT_SIZE);
    int cuda = 0;
    EXPECT_R(nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
    EXPECT(cuda == 100, "fake CUDA driver version %d (what*10)", cuda);

    EXPECT_R(nvmlDeviceGetHandleByIndex_v2(1, &d), NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_R(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
    EXPECT_R(nvmlDeviceGetName(d, text, sizeof text), NVML_SUCCESS);
    EXPECT(strcmp(text, "Fake GPU") == 0, "name '%s'", text);
    EXPECT_R(nvmlDeviceGetName(d, text, 4), NVML_ERROR_INSUFFICIENT_SIZE);
    EXPECT_R(nvmlDeviceGetUUID(d, text, sizeof text), NVML_SUCCESS);
    nvmlDevice_t same = NULL;
    EXPECT_R(nvmlDeviceGetHandleByUUID(text, &same), NVML_SUCCESS);
    EXPECT(same == d, "the handle by UUID is another");
    EXPECT_R(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &same), NVML_ERROR_NOT_FOUND);
    /* the bus id in any spelling the driver takes */
    EXPECT_R(nvmlDeviceGetHandleByPciBusId_v2("0000:05:00.0", &same), NVML_SUCCESS);
    EXPECT_R(nvmlDeviceGetHandleByPciBusId_v2("05:00.0", &same), NVML_SUCCESS);
    EXPECT_R(nvmlDeviceGetHandleByPciBusId_v2("0000:06:00.0", &same), NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_R(nvmlDeviceGetHandleByPciBusId_v2("not a bus id", &same), NVML_ERROR_INVALID_ARGUMENT);
    unsigned index = 9;
    EXPECT_R(nvmlDeviceGetIndex(d, &index), NVML_SUCCESS);
    EXPECT(index == 0, "index %u", index);
    /* a handle that is not ours */
    EXPECT_R(nvmlDeviceGetIndex((nvmlDevice_t)&index, &index), NVML_ERROR_INVALID_ARGUMENT);

    nvmlPciInfo_t pci;
    EXPECT_R(nvmlDeviceGetPciInfo_v3(d, &pci), NVML_SUCCESS);
    EXPECT(strcmp(pci.busId, "00000000:05:00.0") == 0 && strcmp(pci.busIdLegacy, "0000:05:00.0") == 0
               && pci.bus == 5 && pci.device == 0 && pci.pciDeviceId == 0x233310de && pci.pciSubSystemId == 0x1234,
           "pci %s %s %u %u %x %x", pci.busId, pci.busIdLegacy, pci.bus, pci.device, pci.pciDeviceId, pci.pciSubSystemId);

    nvmlUtilization_t util;
    EXPECT_R(nvmlDeviceGetUtilizationRates(d, &util), NVML_SUCCESS);
    EXPECT(util.gpu == 42 && util.memory == 7, "utilization %u %u", util.gpu, util.memory);
    int major = 0, minor = -1;
    EXPECT_R(nvmlDeviceGetCudaComputeCapability(d, &major, &minor), NVML_SUCCESS);
    EXPECT(major == 9 && minor == 0, "compute capability %d.%d", major, minor);
    unsigned clock = 0;
    EXPECT_R(nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &clock), NVML_SUCCESS);
    EXPECT(clock == 31, "SM clock %u (what*10+arg)", clock);
    EXPECT_R(nvmlDeviceGetClockInfo(d, 99, &clock), NVML_ERROR_INVALID_ARGUMENT);

    /* memory and processes follow this process's allocations (the fake server's counts) */
    CUdeviceptr p = 0;
    EXPECT(cuInit(0) == CUDA_SUCCESS && cuMemAlloc(&p, 1 << 20) == CUDA_SUCCESS, "cuMemAlloc");
    nvmlMemory_t m1;
    EXPECT_R(nvmlDeviceGetMemoryInfo(d, &m1), NVML_SUCCESS);
    EXPECT(m1.total == 64ull << 20 && m1.used >= 1 << 20 && m1.free == m1.total - m1.used, "memory %llu %llu %llu",
           m1.total, m1.free, m1.used);
    nvmlMemory_v2_t m2;
    memset(&m2, 0, sizeof m2);
    EXPECT_R(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_ERROR_FUNCTION_NOT_FOUND);
    m2.version = nvmlMemory_v2;
    EXPECT_R(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_SUCCESS);
    EXPECT(m2.total == m1.total && m2.used == m1.used && m2.reserved == 0, "memory v2");

    unsigned n = 0;
    EXPECT_R(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
    EXPECT(n == 1, "process count %u", n);
    nvmlProcessInfo_t infos[4];
    n = 4;
    EXPECT_R(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, infos), NVML_SUCCESS);
    EXPECT(n == 1 && infos[0].usedGpuMemory == m1.used && infos[0].gpuInstanceId == 0xFFFFFFFFu,
           "process %u: pid %u, %llu bytes", n, infos[0].pid, infos[0].usedGpuMemory);
    nvmlProcessInfo_v1_t v1[2];
    n = 2;
    EXPECT_R(nvmlDeviceGetComputeRunningProcesses(d, &n, v1), NVML_SUCCESS);
    EXPECT(n == 1 && v1[0].pid == infos[0].pid && v1[0].usedGpuMemory == m1.used, "v1 process");

    /* names NVML has and the VM does not answer: found, NOT_SUPPORTED */
    void *self = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
    nvmlReturn_t (*nvlink)(nvmlDevice_t, unsigned, unsigned *) = self ? dlsym(self, "nvmlDeviceGetNvLinkRemoteDeviceType") : NULL;
    EXPECT(nvlink != NULL, "nvmlDeviceGetNvLinkRemoteDeviceType is not exported");
    if (nvlink != NULL)
        EXPECT_R(nvlink(d, 0, &n), NVML_ERROR_NOT_SUPPORTED);
    EXPECT(self == NULL || dlsym(self, "ivc_nvml_open") == NULL, "an internal name is exported");
    const void *table = (const void *)1;
    unsigned char id[16] = {1, 2, 3};
    EXPECT_R(nvmlInternalGetExportTable(&table, id), NVML_ERROR_INVALID_ARGUMENT);
    EXPECT(table == NULL, "unknown export table %p", table);

    EXPECT_R(nvmlShutdown(), NVML_SUCCESS);
    EXPECT_R(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    EXPECT_R(nvmlShutdown(), NVML_SUCCESS);
    EXPECT_R(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    EXPECT_R(nvmlDeviceGetName(d, text, sizeof text), NVML_ERROR_UNINITIALIZED);
    EXPECT_R(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    if (failures == 0)
        printf("ok\n");
    return failures != 0;
}
