/* Export table 6e163fbe (792 bytes: size word + 98 slots), asked by cuFFT (libcufft.so.12).
 * cufftPlan* calls slot 7 for each kernel module it loaded, as
 *     int (CUcontext, CUmodule, void (*report)(void *user, CUfunction), void *user)
 * and takes the plan as built only when it answers 1 (anything else: CUFFT_INTERNAL_ERROR).
 * Read from the H200 trace of simpleCUFFT (2 calls: a module, a function of cuFFT's whose whole
 * body is `*(void **)user = function`, a pointer to a local; driver 580 answered 1 and the local
 * then held a driver function) and cuFFT's code around the call: with no name at hand it asks the
 * module's function this way, with a name it calls cuModuleGetFunction. So slot 7 reports each
 * function of the module and answers how many it reported — cuFFT's modules hold one kernel each.
 * Answered as an unknown table, cufftPlan1d fails (on the real driver too). */

#include <stdlib.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "log.h"

CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod);
CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions, CUmodule mod);

/* More than cuFFT's one kernel per module, and a bound on what one call allocates. */
#define MAX_REPORTED 4096

int ivc_cufft_module_functions(CUcontext context, CUmodule module, void (*report)(void *user, CUfunction function),
                               void *user)
{
    (void)context; /* a module handle names its context on the server already */
    unsigned count = 0;
    if (report == NULL)
        return 0;
    CUresult r = cuModuleGetFunctionCount(&count, module);
    if (r != CUDA_SUCCESS || count == 0 || count > MAX_REPORTED) {
        ivc_trace("cuFFT table slot 7 (%p): %u functions, result %d -> 0", (void *)module, count, r);
        return 0;
    }
    CUfunction *functions = calloc(count, sizeof *functions);
    if (functions == NULL)
        return 0;
    r = cuModuleEnumerateFunctions(functions, count, module);
    if (r == CUDA_SUCCESS)
        for (unsigned i = 0; i < count; i++)
            report(user, functions[i]);
    free(functions);
    ivc_trace("cuFFT table slot 7 (%p) -> %u functions reported (result %d)", (void *)module, r == CUDA_SUCCESS ? count : 0, r);
    return r == CUDA_SUCCESS ? (int)count : 0;
}
