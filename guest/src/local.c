/* Calls answered in the guest without the server: the driver version, error names and
 * strings, the module loading mode. (cuGetProcAddress: proc_address.c; cuGetExportTable:
 * export_tables.c.) */
#include <stdint.h>
#include <stdlib.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

struct error_text {
    int code;
    const char *name;
    const char *description;
};

static const struct error_text errors[] = {
#include "error_table.inc"
};

/* Works before cuInit, like the real one; answers what this library implements (§9). */
IVC_EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = IVC_API_VERSION;
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuDriverGetVersion

static const struct error_text *find_error(CUresult error)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == error)
            return &errors[i];
    return NULL;
}

IVC_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (pStr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *e = find_error(error);
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
IVC_ALIASES_cuGetErrorName

IVC_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (pStr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *e = find_error(error);
    *pStr = e ? e->description : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
IVC_ALIASES_cuGetErrorString

/* The driver reads CUDA_MODULE_LOADING in the process it runs in: here, the guest program's.
 * Lazy unless EAGER, as the driver's default is since CUDA 12.2 (CUDA programming guide, "Lazy
 * Loading"); cudart asks before anything else. */
IVC_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    if (mode == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const char *setting = getenv("CUDA_MODULE_LOADING");
    *mode = setting != NULL && strcmp(setting, "EAGER") == 0 ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuModuleGetLoadingMode
