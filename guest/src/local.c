/* Calls answered in the guest without the server: the driver version, error names and
 * strings, cuGetExportTable. (cuGetProcAddress: proc_address.c.) */
#include <stdint.h>

#include "ivc_api.h"
#include "ivc_internal.h"

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

IVC_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    static atomic_int logged;
    if (ppExportTable != NULL)
        *ppExportTable = NULL;
    if (atomic_exchange(&logged, 1) == 0) {
        char uuid[33] = "";
        for (int i = 0; pExportTableId != NULL && i < 16; i++)
            snprintf(uuid + 2 * i, 3, "%02x", (unsigned char)pExportTableId->bytes[i]);
        ivc_log("cuGetExportTable(%s) is not supported yet: runtime-API programs need it (CUDA_ERROR_NOT_SUPPORTED)",
                uuid);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}
IVC_ALIASES_cuGetExportTable
