/* cuGetProcAddress and cuGetProcAddress_v2, answered in the guest as the real driver answers
 * them (CUDA 13 driver API reference, "Driver Entry Point Access"): the newest variant of the
 * base that is not newer than the requested CUDA version; with flag 2 (per-thread default
 * stream) its _ptds/_ptsz variant where there is one. Which symbol each (base, version) names
 * comes from CUDA's *Typedefs.h through api/driver-proc-addresses.txt. */
#include <string.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "ivc_proc_addresses.h"
#include "log.h"
#include "proc_address.h"

static void set_status(CUdriverProcAddressQueryResult *status, CUdriverProcAddressQueryResult value)
{
    if (status != NULL)
        *status = value;
}

/* The first row of the base, or ivc_proc_address_count if there is none. */
static size_t first_row(const char *base)
{
    size_t low = 0, high = ivc_proc_address_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (strcmp(ivc_proc_addresses[middle].base, base) < 0)
            low = middle + 1;
        else
            high = middle;
    }
    return low < ivc_proc_address_count && strcmp(ivc_proc_addresses[low].base, base) == 0 ? low
                                                                                            : ivc_proc_address_count;
}

const struct ivc_proc_address *ivc_proc_address_find(const char *base, int cuda_version, cuuint64_t flags,
                                                     CUdriverProcAddressQueryResult *status)
{
    size_t row = first_row(base);
    if (row == ivc_proc_address_count) {
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return NULL;
    }
    const struct ivc_proc_address *legacy = NULL, *per_thread = NULL;
    for (; row < ivc_proc_address_count && strcmp(ivc_proc_addresses[row].base, base) == 0; row++) {
        const struct ivc_proc_address *p = &ivc_proc_addresses[row];
        if (p->version > cuda_version)
            break; /* rows are in version order */
        if (p->per_thread)
            per_thread = p;
        else
            legacy = p;
    }
    const struct ivc_proc_address *found =
        (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && per_thread != NULL ? per_thread : legacy;
    *status = found != NULL ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return found;
}

/* A name the driver does not know, or one whose every variant is newer than cudaVersion,
 * is not an error: CUDA_SUCCESS with *pfn NULL and the reason in symbolStatus (cudart's first
 * lookup, of "" at version 0, is answered so by the real driver too: reference/ GPA lines).
 * A version newer than this library's CUDA version is CUDA_ERROR_INVALID_VALUE. */
IVC_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    if (pfn == NULL || symbol == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (cudaVersion > IVC_API_VERSION) {
        set_status(symbolStatus, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
        ivc_trace("cuGetProcAddress(%s, %d, %llu) -> newer than this library's CUDA %d", symbol, cudaVersion,
                  (unsigned long long)flags, IVC_API_VERSION);
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUdriverProcAddressQueryResult status;
    const struct ivc_proc_address *found = ivc_proc_address_find(symbol, cudaVersion, flags, &status);
    set_status(symbolStatus, status);
    if (found == NULL) {
        ivc_trace("cuGetProcAddress(%s, %d, %llu) -> %s", symbol, cudaVersion, (unsigned long long)flags,
                  status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ? "not found" : "version not sufficient");
        return CUDA_SUCCESS;
    }
    *pfn = (void *)found->function;
    ivc_trace("cuGetProcAddress(%s, %d, %llu) -> %s", symbol, cudaVersion, (unsigned long long)flags, found->symbol);
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuGetProcAddress_v2

/* The CUDA 11.3 form: no status, otherwise the same lookup. */
IVC_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
IVC_ALIASES_cuGetProcAddress
