/* NVML's device queries in the guest: one device, index 0, the VM's GPU as the server sees it
 * (docs/sharing.md). Identity (name, UUID, PCI) is the host GPU's; memory is the VM's quota and
 * use; processes are the VM's own; utilisation, temperature, power and clocks are the card's. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nvml_session.h"

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    nvmlReturn_t r = ivc_nvml_ready();
    if (r != NVML_SUCCESS)
        return r;
    if (device == NULL || index >= ivc_nvml_device_count())
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = ivc_nvml_the_device();
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    nvmlReturn_t r = ivc_nvml_ready();
    if (r != NVML_SUCCESS)
        return r;
    if (uuid == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlDevice_st *d = ivc_nvml_the_device();
    if (d == NULL || strcmp(uuid, d->uuid) != 0)
        return NVML_ERROR_NOT_FOUND;
    *device = d;
    return NVML_SUCCESS;
}

/* Any spelling of the device's bus id (with or without a domain, any case) names it. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    nvmlReturn_t r = ivc_nvml_ready();
    if (r != NVML_SUCCESS)
        return r;
    if (pciBusId == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned domain, bus, dev, function;
    if (!ivc_nvml_parse_bus_id(pciBusId, &domain, &bus, &dev, &function))
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlDevice_st *d = ivc_nvml_the_device();
    /* a well-formed bus id of no GPU: INVALID_ARGUMENT, as NVIDIA's library answers it (driver
     * 580.159.04, gpu/programs/nvml_view.c), not NOT_FOUND as for an unknown UUID */
    if (d == NULL || d->domain != domain || d->bus != bus || d->device != dev || d->function != function)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = d;
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

static nvmlReturn_t copy_string(nvmlDevice_t device, const char *value, char *out, unsigned int length)
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (out == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strlen(value);
    if (n + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, n + 1);
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    return copy_string(device, device != NULL ? device->name : "", name, length);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    return copy_string(device, device != NULL ? device->uuid : "", uuid, length);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (index == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = 0;
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (pci == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t ids = 0;
    r = ivc_nvml_get_value(IVC_NVML_PCI_IDS, 0, &ids);
    if (r != NVML_SUCCESS)
        return r;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.%x", device->domain & 0xffff, device->bus,
             device->device, device->function);
    snprintf(pci->busId, sizeof pci->busId, "%s", device->bus_id);
    pci->domain = device->domain;
    pci->bus = device->bus;
    pci->device = device->device;
    pci->pciDeviceId = (unsigned int)ids;
    pci->pciSubSystemId = (unsigned int)(ids >> 32);
    return NVML_SUCCESS;
}

/* The memory figures: with a quota the VM's (docs/sharing.md), as cuMemGetInfo's. */
static nvmlReturn_t memory_figures(nvmlDevice_t device, const void *memory, uint64_t figures[4])
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (memory == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    return ivc_nvml_get_memory(&figures[0], &figures[1], &figures[2], &figures[3]);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    uint64_t f[4] = {0, 0, 0, 0}; /* total, reserved, free, used */
    nvmlReturn_t r = memory_figures(device, memory, f);
    if (r != NVML_SUCCESS)
        return r;
    memory->total = f[0];
    memory->free = f[2];
    memory->used = f[3] + f[1]; /* v1 has no reserved: it is in use */
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    /* a struct without its version: FUNCTION_NOT_FOUND, as NVIDIA's library answers it (driver
     * 580.159.04, gpu/programs/nvml_view.c: version 0 -> 13), not ARGUMENT_VERSION_MISMATCH */
    if (memory != NULL && memory->version != nvmlMemory_v2 && ivc_nvml_check(device) == NVML_SUCCESS)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    uint64_t f[4] = {0, 0, 0, 0};
    nvmlReturn_t r = memory_figures(device, memory, f);
    if (r != NVML_SUCCESS)
        return r;
    memory->total = f[0];
    memory->reserved = f[1];
    memory->free = f[2];
    memory->used = f[3];
    return NVML_SUCCESS;
}

/* One number of the device into *out (its low 32 bits). */
static nvmlReturn_t device_value(nvmlDevice_t device, uint32_t what, uint32_t arg, unsigned int *out)
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (out == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t v = 0;
    r = ivc_nvml_get_value(what, arg, &v);
    if (r == NVML_SUCCESS)
        *out = (unsigned int)v;
    return r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (utilization == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t v = 0;
    r = ivc_nvml_get_value(IVC_NVML_UTILIZATION, 0, &v);
    if (r == NVML_SUCCESS) {
        utilization->gpu = (unsigned int)v;
        utilization->memory = (unsigned int)(v >> 32);
    }
    return r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int *temp)
{
    return device_value(device, IVC_NVML_TEMPERATURE, sensor, temp);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    return device_value(device, IVC_NVML_POWER_USAGE, 0, power);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    if (type >= NVML_CLOCK_COUNT && ivc_nvml_check(device) == NVML_SUCCESS)
        return NVML_ERROR_INVALID_ARGUMENT;
    return device_value(device, IVC_NVML_CLOCK, type, clock);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    if (type >= NVML_CLOCK_COUNT && ivc_nvml_check(device) == NVML_SUCCESS)
        return NVML_ERROR_INVALID_ARGUMENT;
    return device_value(device, IVC_NVML_MAX_CLOCK, type, clock);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (major == NULL || minor == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t v = 0;
    r = ivc_nvml_get_value(IVC_NVML_COMPUTE_CAPABILITY, 0, &v);
    if (r == NVML_SUCCESS) {
        *major = (int)(uint32_t)v;
        *minor = (int)(uint32_t)(v >> 32);
    }
    return r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    return device_value(device, IVC_NVML_MINOR_NUMBER, 0, minorNumber);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    return device_value(device, IVC_NVML_COMPUTE_MODE, 0, mode);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    return device_value(device, IVC_NVML_PERSISTENCE_MODE, 0, mode);
}

/* The VM's processes: asked of the server, written as records of `size` bytes (v1: pid and
 * memory only). NVML's contract: *infoCount in, the room; out, how many there are; too little
 * room (or infos NULL with some) answers INSUFFICIENT_SIZE. */
static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *infoCount, void *infos, size_t size)
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (infoCount == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t entries[IVC_NVML_MAX_PROCESS_WORDS];
    uint32_t count = 0;
    r = ivc_nvml_get_processes(&count, entries, IVC_NVML_MAX_PROCESS_WORDS / 2);
    if (r != NVML_SUCCESS)
        return r;
    unsigned int room = *infoCount;
    *infoCount = count;
    if (count == 0)
        return NVML_SUCCESS;
    if (infos == NULL || room < count)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned int known = count < IVC_NVML_MAX_PROCESS_WORDS / 2 ? count : IVC_NVML_MAX_PROCESS_WORDS / 2;
    *infoCount = known;
    for (unsigned int i = 0; i < known; i++) {
        nvmlProcessInfo_t p = {.pid = (unsigned int)entries[2 * i],
                               .usedGpuMemory = entries[2 * i + 1],
                               .gpuInstanceId = NVML_VALUE_NOT_AVAILABLE_U32,
                               .computeInstanceId = NVML_VALUE_NOT_AVAILABLE_U32};
        if (size == sizeof(nvmlProcessInfo_t)) {
            memcpy((char *)infos + i * size, &p, size);
        } else {
            nvmlProcessInfo_v1_t v1 = {.pid = p.pid, .usedGpuMemory = p.usedGpuMemory};
            memcpy((char *)infos + i * size, &v1, sizeof v1);
        }
    }
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
    return processes(device, infoCount, infos, sizeof(nvmlProcessInfo_t));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
    return processes(device, infoCount, infos, sizeof(nvmlProcessInfo_t));
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                              nvmlProcessInfo_v1_t *infos)
{
    return processes(device, infoCount, infos, sizeof(nvmlProcessInfo_v1_t));
}

/* Graphics does not reach the GPU through ivcuda: no graphics processes. */
static nvmlReturn_t no_processes(nvmlDevice_t device, unsigned int *infoCount)
{
    nvmlReturn_t r = ivc_nvml_check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (infoCount == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *infoCount = 0;
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                  nvmlProcessInfo_t *infos)
{
    (void)infos;
    return no_processes(device, infoCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                  nvmlProcessInfo_t *infos)
{
    (void)infos;
    return no_processes(device, infoCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                               nvmlProcessInfo_v1_t *infos)
{
    (void)infos;
    return no_processes(device, infoCount);
}
