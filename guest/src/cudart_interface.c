/* Export table 6bd5fb6c, the "CUDART interface" (104 bytes: size word + 12 slots), as cudart
 * uses it: docs/export-tables.md. */
#include <stdint.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

CUresult cuModuleLoadData(CUmodule *module, const void *image);

/* Slot 1: a module from the fat binary wrapper cudart registered (__cudaRegisterFatBinary's
 * argument: magic 0x466243b1, version, data), per the public write-ups; cuModuleLoadData takes
 * the wrapper as it is (module.c sizes it). */
CUresult ivc_cudart_module_from_fatbin(CUmodule *module, const void *wrapper)
{
    CUresult r = cuModuleLoadData(module, wrapper);
    ivc_trace("CUDART interface slot 1 (module from %p) -> %d", wrapper, r);
    return r;
}

/* Slot 2: cudart's initialisation asks for the primary context of a device; the real driver's
 * slot retains it (refused, cudart fails with error 500). */
CUresult ivc_cudart_primary_context(CUcontext *pctx, CUdevice dev)
{
    CUresult r = cuDevicePrimaryCtxRetain(pctx, dev);
    ivc_trace("CUDART interface slot 2 (primary context of device %d) -> %d, %p", dev, r,
              r == CUDA_SUCCESS && pctx ? (void *)*pctx : NULL);
    return r;
}

/* Slot 6: cudart 11.8 (not 13.0) loads each fat binary it registered through this slot when a
 * kernel of it is first launched, with (CUmodule *, the wrapper __cudaRegisterFatBinary got,
 * NULL, NULL, 0): measured on the H200 (gpu/toolkit118.sh, 2026-12-02, 36 of 42 programs stopped
 * at "slot 6 is not emulated" with arguments (a stack pointer, a pointer into the program, 0, 0));
 * public write-ups describe it as slot 1 with extra arguments. With the extras NULL it is slot 1.
 * What non-NULL extras carry is not known: refused by name rather than guessed. */
CUresult ivc_cudart_module_from_fatbin_ext(CUmodule *module, const void *wrapper, const void *extra1,
                                           const void *extra2, unsigned flags)
{
    if (extra1 != NULL || extra2 != NULL) {
        ivc_log("export table CUDART interface (6bd5fb6c) slot 6 with extra arguments %p %p (flags 0x%x) is not "
                "emulated: CUDA_ERROR_NOT_SUPPORTED",
                extra1, extra2, flags);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    CUresult r = ivc_cudart_module_from_fatbin(module, wrapper);
    ivc_trace("CUDART interface slot 6 (module from %p, flags 0x%x) -> %d", wrapper, flags, r);
    return r;
}

/* Slot 7: cudart 11.8 calls it while it initialises with (a pointer into the program, a heap
 * pointer, 1, 0x20); what the real driver does with them is not known. Success lets the
 * initialisation go on (measured). */
CUresult ivc_cudart_slot7(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d)
{
    ivc_trace("CUDART interface slot 7 (0x%lx, 0x%lx, 0x%lx, 0x%lx) -> 0", (unsigned long)a, (unsigned long)b,
              (unsigned long)c, (unsigned long)d);
    return CUDA_SUCCESS;
}
