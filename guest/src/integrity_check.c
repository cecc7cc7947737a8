/* Export table d4082055, the integrity check (24 bytes: size word + 2 slots). cudart calls slot
 * 1 with (its own version, 13000/13001/13002 for cudart 13.0, 11080.. for 11.8; the time in
 * seconds; 16 bytes to fill) and compares the answer with its own computation: a wrong one
 * fails its initialisation with cudaErrorSoftwareValidityNotEstablished (103). The answer
 * depends on the driver and the device, so the server asks the real driver's slot with the
 * same arguments (ivc_export_integrity_check); a server without a real driver (the host-memory
 * test backend) cannot answer, and this says so instead of inventing one. */
#include <stdatomic.h>
#include <stdint.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

CUresult cuGetErrorName(CUresult error, const char **pStr);

CUresult ivc_integrity_check(unsigned version, uint64_t unix_seconds, uint64_t result[2])
{
    static atomic_int refused_logged;
    if (result == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t low = 0, high = 0;
    CUresult r = ivc_export_integrity_check(version, unix_seconds, &low, &high);
    if (r == CUDA_SUCCESS) {
        result[0] = low;
        result[1] = high;
    } else if (atomic_exchange(&refused_logged, 1) == 0) {
        const char *name = "?";
        cuGetErrorName(r, &name);
        ivc_log("cudart's integrity check (export table d4082055 slot 1) needs the host's real driver; the server "
                "answered %s%s: the runtime's initialisation fails here",
                name, r == CUDA_ERROR_NOT_SUPPORTED ? " (a server without a GPU driver, such as its host-memory "
                                                      "test backend, cannot answer it)" : "");
    }
    ivc_trace("integrity check (%u, %llu) -> %d", version, (unsigned long long)unix_seconds, r);
    return r;
}
