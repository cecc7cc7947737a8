/* Export table d4082055, the integrity check (24 bytes: size word + 2 slots). cudart calls slot
 * 1 with (its own version, 13000/13001/13002 for cudart 13.0, 11080.. for 11.8; the time in
 * seconds; 16 bytes to fill) and compares the answer with its own computation: a wrong one
 * fails its initialisation with cudaErrorSoftwareValidityNotEstablished (103).
 *
 * The answer covers this process's pid, the asking thread's pthread_self() and where the tables
 * are (docs/export-tables.md, "d4082055"): when integrity_place.c put our tables at the
 * addresses of this process's integrity oracle on the host, the oracle answers
 * (ivc_integrity_answer, from a thread at our pthread_self()). Otherwise the server asks its
 * own driver with the same arguments (ivc_export_integrity_check), which only the pid-free
 * versions pass; a server without a real driver (the host-memory test backend) cannot answer,
 * and this says so instead of inventing one. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

CUresult cuGetErrorName(CUresult error, const char **pStr);

/* A forked child inherits its parent's placement and gets an oracle of its own (its own pid);
 * the oracles' addresses agree (no randomisation there): said once if they do not. */
static void check_placement_once_per_pid(void)
{
    static atomic_int checked_pid;
    int pid = (int)getpid();
    if (atomic_exchange(&checked_pid, pid) == pid)
        return;
    if (!ivc_integrity_placement_matches())
        ivc_log("cudart's integrity check: process %d's integrity oracle has its tables elsewhere than where this "
                "process placed them (before a fork?): its answers will likely be rejected",
                pid);
}

CUresult ivc_integrity_check(unsigned version, uint64_t unix_seconds, uint64_t result[2])
{
    static atomic_int refused_logged;
    if (result == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t low = 0, high = 0;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (ivc_integrity_is_placed()) {
        check_placement_once_per_pid();
        r = ivc_integrity_answer(version, unix_seconds, (uint64_t)(uintptr_t)pthread_self(), &low, &high);
    }
    if (r != CUDA_SUCCESS)
        r = ivc_export_integrity_check(version, unix_seconds, &low, &high);
    if (r == CUDA_SUCCESS) {
        result[0] = low;
        result[1] = high;
    } else if (atomic_exchange(&refused_logged, 1) == 0) {
        const char *name = "?";
        cuGetErrorName(r, &name);
        ivc_log("cudart's integrity check (export table d4082055 slot 1) needs the host's real driver; the server "
                "answered %s%s: the runtime's initialisation fails here",
                name, r == CUDA_ERROR_NOT_SUPPORTED ? " (a server without a GPU driver, such as its host-memory "
                                                      "test backend, cannot answer it)" : " (no integrity oracle for this process: see the server's log)");
    }
    ivc_trace("integrity check (%u, %llu) -> %d", version, (unsigned long long)unix_seconds, r);
    return r;
}
