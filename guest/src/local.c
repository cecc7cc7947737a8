/* Calls answered in the guest without the server: the driver version, error names and
 * strings, cuGetProcAddress over the generated export table, cuGetExportTable. */
#include <stdint.h>

#include "ivc_api.h"
#include "ivc_exports.h"
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

static void set_status(CUdriverProcAddressQueryResult *status, CUdriverProcAddressQueryResult value)
{
    if (status != NULL)
        *status = value;
}

/* The highest version <= cudaVersion among the base's exports; flags 2 prefers the
 * per-thread-default-stream variant where there is one. */
IVC_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    if (pfn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (symbol == NULL || symbol[0] == '\0') {
        /* cudart's first probe: the real driver answers success with nothing found. */
        set_status(symbolStatus, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        ivc_trace("cuGetProcAddress(\"\", %d) probe", cudaVersion);
        return symbol == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    }
    const struct ivc_export *best = NULL;
    int known = 0;
    for (size_t i = 0; i < ivc_export_count; i++) {
        const struct ivc_export *e = &ivc_export_table[i];
        if (strcmp(e->base, symbol) != 0)
            continue;
        known = 1;
        if (e->version <= cudaVersion && (best == NULL || e->version > best->version))
            best = e;
    }
    if (best == NULL) {
        set_status(symbolStatus,
                   known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        ivc_trace("cuGetProcAddress(%s, %d, %llu) -> %s", symbol, cudaVersion, (unsigned long long)flags,
                  known ? "version not sufficient" : "not found");
        return CUDA_ERROR_NOT_FOUND;
    }
    void (*function)(void) = best->function;
    if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->per_thread != NULL)
        function = best->per_thread;
    *pfn = (void *)function;
    set_status(symbolStatus, CU_GET_PROC_ADDRESS_SUCCESS);
    ivc_trace("cuGetProcAddress(%s, %d, %llu) -> %s%s", symbol, cudaVersion, (unsigned long long)flags,
              best->symbol, function == best->per_thread ? " (per-thread)" : "");
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuGetProcAddress_v2

/* The CUDA 11.3 form: no status, otherwise the same lookup. */
IVC_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
IVC_ALIASES_cuGetProcAddress

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
