/* NVML's initialisation, error strings and system queries in the guest (docs/sharing.md). */
#include <stddef.h>
#include <string.h>

#include "nvml_session.h"

NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    return ivc_nvml_open(flags);
}

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return ivc_nvml_open(0);
}

/* NVML's first initialisation (torch.cuda's NVML-based device count still calls it) */
NVML_EXPORT nvmlReturn_t nvmlInit(void)
{
    return ivc_nvml_open(0);
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    return ivc_nvml_close();
}

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
    case NVML_ERROR_OPERATING_SYSTEM: return "GPU access blocked by the operating system";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_ENABLED: return "ECC is not enabled";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    default: return "Unknown Error";
    }
}

/* A string of the host's, asked of the server; length: the caller's buffer. */
static nvmlReturn_t system_string(uint32_t what, char *out, unsigned int length)
{
    nvmlReturn_t r = ivc_nvml_ready();
    if (r != NVML_SUCCESS)
        return r;
    if (out == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    char value[IVC_NVML_MAX_STRING];
    r = ivc_nvml_get_string(what, value, sizeof value);
    if (r != NVML_SUCCESS)
        return r;
    size_t n = strlen(value);
    if (n + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, n + 1);
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    return system_string(IVC_NVML_DRIVER_VERSION, version, length);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    return system_string(IVC_NVML_NVML_VERSION, version, length);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    nvmlReturn_t r = ivc_nvml_ready();
    if (r != NVML_SUCCESS)
        return r;
    if (cudaDriverVersion == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t v = 0;
    r = ivc_nvml_get_value(IVC_NVML_CUDA_DRIVER_VERSION, 0, &v);
    if (r == NVML_SUCCESS)
        *cudaDriverVersion = (int)v;
    return r;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t r = ivc_nvml_ready();
    if (r != NVML_SUCCESS)
        return r;
    if (deviceCount == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = ivc_nvml_device_count();
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    return nvmlDeviceGetCount_v2(deviceCount);
}

/* NVML's private tables: none is emulated, so every id is unknown, answered as NVIDIA's library
 * answers an unknown id: INVALID_ARGUMENT and a NULL table (driver 580.159.04,
 * gpu/programs/nvml_view.c). */
NVML_EXPORT nvmlReturn_t nvmlInternalGetExportTable(const void **ppExportTable, const void *pExportTableId)
{
    if (ppExportTable != NULL)
        *ppExportTable = NULL;
    (void)pExportTableId;
    return NVML_ERROR_INVALID_ARGUMENT;
}
